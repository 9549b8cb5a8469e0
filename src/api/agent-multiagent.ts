// An agent's `multiagent`: the `coordinator` form, whose roster names the agents the session's primary thread
// may run as session threads. Each entry is resolved to a concrete version when the agent version is written;
// `multiagent_20261001` and advisor entries are refused by name.
import { z } from 'zod';
import type { Queryable } from '../storage/db';
import { findAgent } from '../storage/repos/agents-repo';
import { IdSchema, INT4_MAX } from './shared-fields';
import { badRequest } from './api-error';

/** The most agents a coordinator's roster holds. */
export const MAX_ROSTER = 20;

const RosterEntryParamsSchema = z.union([
  IdSchema,
  z.strictObject({
    type: z.literal('agent'),
    id: IdSchema,
    version: z.number().int().min(1).max(INT4_MAX).nullish(),
  }),
  z.strictObject({ type: z.literal('self') }),
  z
    .looseObject({ type: z.literal('advisor') })
    .refine(() => false, 'advisor roster entries are not supported: this platform has no advisor model call'),
]);

export const MultiagentParamsSchema = z
  .looseObject({ type: z.string() })
  .superRefine((v, ctx) => {
    if (v.type === 'multiagent_20261001')
      ctx.addIssue({
        code: 'custom',
        path: ['type'],
        message:
          'multiagent_20261001 is not supported: its workflows, inline agents and advisor are not specified well enough to build; use {type: "coordinator", agents: [...]}',
      });
    else if (v.type !== 'coordinator')
      ctx.addIssue({ code: 'custom', path: ['type'], message: `unknown multiagent type ${v.type}; use coordinator` });
  })
  .pipe(
    z.strictObject({
      type: z.literal('coordinator'),
      agents: z
        .array(RosterEntryParamsSchema)
        .min(1, 'agents must name at least one agent')
        .max(MAX_ROSTER, `agents holds at most ${MAX_ROSTER} entries`),
    }),
  );
export type MultiagentParams = z.infer<typeof MultiagentParamsSchema>;

/** A roster entry as stored and returned: one agent at one version. */
export const AgentReferenceSchema = z.object({ type: z.literal('agent'), id: z.string(), version: z.number().int() });
export const MultiagentSchema = z.object({ type: z.literal('coordinator'), agents: z.array(AgentReferenceSchema) });
export type Multiagent = z.infer<typeof MultiagentSchema>;

/**
 * The roster resolved to concrete versions, or a 400 naming the entry: agents must exist in the workspace, not be
 * archived, not be coordinators themselves (depth 1), and be distinct once `self` and ids are resolved.
 * `self` is the agent being written, at the version being written.
 */
export async function resolveMultiagent(
  db: Queryable,
  workspaceId: string,
  params: MultiagentParams | null | undefined,
  self: { id: string; version: number },
): Promise<Multiagent | null> {
  if (!params) return null;
  const agents: Multiagent['agents'] = [];
  const seen = new Set<string>();
  let selves = 0;
  for (const [i, entry] of params.agents.entries()) {
    const field = `multiagent.agents.${i}`;
    if (typeof entry === 'object' && entry.type === 'advisor') throw badRequest(`${field}: advisor is not supported`);
    let ref: { id: string; version: number };
    if (typeof entry === 'object' && entry.type === 'self') {
      if (++selves > 1) throw badRequest(`${field}: at most one self entry`);
      ref = self;
    } else {
      const id = typeof entry === 'string' ? entry : entry.id;
      const version = typeof entry === 'string' ? null : (entry.version ?? null);
      if (id === self.id) throw badRequest(`${field}: the agent itself is on the roster as {type: "self"}`);
      const row = await findAgent<{ multiagent?: unknown }>(db, workspaceId, id, version);
      if (!row)
        throw badRequest(
          version === null
            ? `${field}: no agent ${id} in this workspace`
            : `${field}: agent ${id} has no version ${version}`,
        );
      if (row.archived_at) throw badRequest(`${field}: agent ${id} is archived`);
      if (row.body.multiagent)
        throw badRequest(`${field}: agent ${id} is itself a coordinator; a roster's agents cannot have multiagent set`);
      ref = { id, version: row.version };
    }
    if (seen.has(ref.id)) throw badRequest(`${field}: agent ${ref.id} is on the roster twice`);
    seen.add(ref.id);
    agents.push({ type: 'agent', ...ref });
  }
  return { type: 'coordinator', agents };
}
