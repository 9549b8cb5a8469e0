// The core of creating a session, shared by `sessions.create` and a deployment's firings: every check a new session
// is held to (planSession, which writes nothing), then its rows and its workflow (createSession). A refusal is an
// ApiError; a session that fails to start leaves no row behind.
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { startSessionRun } from '../../session-ops';
import { defineOutcomeUpdate, userMessageSignal } from '../../session/contract';
import type { OutcomeDefinition } from '../../session/outcome-grading';
import { DefineOutcomeEventSchema, outcomeDefinition } from './session-outcomes';
import type { Agent } from '../../session/agent';
import type { ListCostState } from '../../session/list-cost';
import { agentFileFor } from '../agent-file';
import { AgentOverridesSchema, applyAgentOverrides, getAgent, type ApiAgent } from '../agents';
import { IdSchema, INT4_MAX, MetadataSchema, newId } from '../shared-fields';
import type { ApiDeps } from '../route-context';
import { getEnvironment, type ApiEnvironment } from '../environments';
import { badRequest } from '../api-error';
import { getVault } from '../vaults/vaults';
import { BudgetLimitSchema, listCostFor, moneyOf } from './session-budget';
import { withSessionSlot } from '../quotas';
import {
  ResourcesSchema,
  insertResources,
  planResourceMounts,
  planResources,
  selfHostedFiles,
  type PlannedResource,
} from './resources';
import { insertMounts, planSkillMounts, promptMountsOf, resolveSessionSkills } from './resource-mounts';
import { withPromptSections } from './prompt-sections';
import { rosterFor } from './roster';
import { deleteSessionMounts } from '../../storage/repos/session-mounts-repo';
import { deleteResources } from '../../storage/repos/session-resources-repo';
import { enqueueSessionWork } from '../environment-work';
import { insertSession, removeSessionRow } from '../../storage/repos/sessions-repo';
import { recordWebhookEvent, webhookEventId } from '../../webhooks/webhook-events';
import { deleteWebhookEvent } from '../../storage/repos/webhooks-repo';
import { statusWebhooksWanted, tellSession } from '../../webhooks/status-announce';

/** The agent file's limit on a system prompt. */
const MAX_SYSTEM_CHARS = 200_000;

export const TextBlockSchema = z.strictObject({
  type: z.literal('text'),
  text: z.string().min(1, 'text must not be empty').max(1_000_000),
});
const ContentSchema = z
  .array(z.looseObject({ type: z.string() }))
  .min(1, 'content must not be empty')
  .max(100)
  .superRefine((blocks, ctx) => {
    blocks.forEach((b, i) => {
      if (b.type !== 'text')
        ctx.addIssue({
          code: 'custom',
          path: [i, 'type'],
          message: `${b.type} blocks are not supported yet; send text`,
        });
      else if (!TextBlockSchema.safeParse(b).success)
        ctx.addIssue({
          code: 'custom',
          path: [i],
          message: 'a text block is {type: "text", text} with non-empty text',
        });
    });
  });
/** A `user.message` as `events.send`, `sessions.create` and deployments take it: text blocks. */
export const UserMessageSchema = z.strictObject({ type: z.literal('user.message'), content: ContentSchema });
export type UserMessageParams = z.infer<typeof UserMessageSchema>;

export const textOf = (content: { type: string; text?: unknown }[]) =>
  content.map((b) => String(b.text ?? '')).join('\n\n');

export const AgentRefSchema = z.union([
  IdSchema,
  z.strictObject({ type: z.literal('agent'), id: IdSchema, version: z.number().int().min(1).max(INT4_MAX).optional() }),
]);

/** `agent_with_overrides`: an agent version with some of its fields replaced for this session only. */
export const AgentWithOverridesSchema = AgentOverridesSchema.extend({
  type: z.literal('agent_with_overrides'),
  id: IdSchema,
  version: z.number().int().min(1).max(INT4_MAX).optional(),
});

/** A session vault list: at most 20 of the workspace's vaults. */
export const SessionVaultIdsSchema = z.array(IdSchema).max(20, 'a session takes at most 20 vaults');

export const SessionCreateSchema = z.strictObject({
  agent: z.union([IdSchema, z.discriminatedUnion('type', [AgentRefSchema.options[1], AgentWithOverridesSchema])]),
  environment_id: IdSchema,
  initial_events: z
    .array(z.discriminatedUnion('type', [UserMessageSchema, DefineOutcomeEventSchema]))
    .max(50)
    .optional(),
  vault_ids: SessionVaultIdsSchema.optional(),
  title: z.string().max(500).nullish(),
  metadata: MetadataSchema.optional(),
  resources: ResourcesSchema.optional(),
  budget: BudgetLimitSchema.optional(),
});
export type SessionCreateParams = z.infer<typeof SessionCreateSchema>;

/** Whose session it is: the workspace by id and by name (the AgentWorkspace search attribute). */
export interface SessionOwner {
  workspaceId: string;
  workspace: string;
}

/** A session checked and ready to be written: everything createSession needs, resolved. */
export interface SessionPlan {
  /** The agent as the session runs it: the version, with any overrides applied. */
  agent: ApiAgent;
  /** Whether overrides changed it from the stored version. */
  overridden: boolean;
  environment: ApiEnvironment;
  file: Agent;
  planned: PlannedResource[];
  mounts: Awaited<ReturnType<typeof planResourceMounts>>;
  listCost: ListCostState | undefined;
}

/**
 * Every check a new session of `p` is held to, in the order `sessions.create` answers them, writing nothing: the
 * agent and environment exist and are not archived, the vaults are the workspace's, the resources pass the egress
 * gate and exist, the system prompt fits, and a budget's models are priced.
 */
export async function planSession(deps: ApiDeps, owner: SessionOwner, p: SessionCreateParams): Promise<SessionPlan> {
  const { db } = deps;
  const ref = typeof p.agent === 'string' ? { type: 'agent' as const, id: p.agent, version: undefined } : p.agent;
  const stored = await getAgent(db, owner.workspaceId, ref.id, ref.version);
  if (stored.archived_at) throw badRequest(`agent ${stored.id} is archived; new sessions cannot use it`);
  // With overrides, every check below sees the agent as this session runs it.
  let agent = stored;
  if (ref.type === 'agent_with_overrides') {
    const { type: _t, id: _i, version: _v, ...overrides } = ref;
    agent = await applyAgentOverrides(deps, owner.workspaceId, stored, overrides, 'agent.');
  }
  const environment = await getEnvironment(db, owner.workspaceId, p.environment_id);
  if (environment.archived_at)
    throw badRequest(`environment ${environment.id} is archived; new sessions cannot use it`, 'environment_archived');
  // A session may use only its own workspace's vaults.
  for (const v of p.vault_ids ?? []) await getVault(db, owner.workspaceId, v);
  if (environment.config.type === 'self_hosted' && (p.resources ?? []).some((r) => r.type === 'file'))
    throw selfHostedFiles(environment.id);
  const planned = await planResources(deps, p.resources ?? []);
  const skills = await resolveSessionSkills(db, owner.workspaceId, agent.skills ?? []);
  const mounts = [...(await planResourceMounts(db, owner.workspaceId, p.resources ?? [])), ...planSkillMounts(skills)];
  const file = agentFileFor(
    agent,
    environment,
    { workspaceId: owner.workspaceId, vaultIds: p.vault_ids ?? [] },
    planned[0]?.repo,
    deps.selfHostedToolTimeoutSeconds,
  );
  // A self-hosted worker unpacks each skill under skills/<name> in its working directory, as the SDK's runner does.
  const prompted =
    environment.config.type === 'self_hosted'
      ? mounts.map((m) => (m.kind === 'skill' ? { ...m, mountPath: `skills/${m.name ?? m.refId}` } : m))
      : mounts;
  const system = withPromptSections(file.system, promptMountsOf(prompted));
  if (system !== undefined && system.length > MAX_SYSTEM_CHARS)
    throw badRequest(
      `resources: the system prompt with the memory and skills sections would be ${system.length} characters; the limit is ${MAX_SYSTEM_CHARS}`,
    );
  if (system !== undefined) file.system = system;
  // A coordinator's roster: each agent as a file of its own, in the same environment and vaults.
  if (agent.multiagent)
    Object.assign(
      file,
      await rosterFor(db, owner.workspaceId, agent, file, (a) =>
        agentFileFor(
          a,
          environment,
          { workspaceId: owner.workspaceId, vaultIds: p.vault_ids ?? [] },
          planned[0]?.repo,
          deps.selfHostedToolTimeoutSeconds,
        ),
      ),
    );
  // The prices of the models it can run and its budget; a budget on an unpriced model is a 400 here.
  const listCost = listCostFor(file, deps.prices, p.budget);
  return { agent, overridden: agent !== stored, environment, file, planned, mounts, listCost };
}

/**
 * Creates a session of `p` for `owner`, as `sessions.create` does, and returns its id: its row (within the
 * workspace's session quota), resources and mounts, its workflow with the initial events, and a self-hosted
 * environment's work item. `deploymentId` marks a session a deployment created.
 */
export async function createSession(
  deps: ApiDeps,
  client: Client,
  owner: SessionOwner,
  p: SessionCreateParams,
  opts: { deploymentId?: string } = {},
): Promise<string> {
  const { db } = deps;
  const { agent, overridden, environment, file, planned, mounts, listCost } = await planSession(deps, owner, p);
  // Processed in order: the first message goes with the start, the rest by signal, each outcome by update. One
  // outcome at a time: a second in initial_events would be refused while the first is worked on.
  const initial: ({ text: string } | OutcomeDefinition)[] = [];
  let outcomes = 0;
  for (const [i, e] of (p.initial_events ?? []).entries()) {
    if (e.type === 'user.message') initial.push({ text: textOf(e.content) });
    else if (++outcomes > 1)
      throw badRequest(
        `initial_events.${i}: only one user.define_outcome may be given; a session works on one outcome at a time`,
      );
    else initial.push(await outcomeDefinition(deps, owner.workspaceId, e, `initial_events.${i}`));
  }
  const first = initial[0] && 'text' in initial[0] ? initial[0] : undefined;
  const rest = first ? initial.slice(1) : initial;
  const id = newId('sesn');
  // Within the workspace's session quota, or a 429 with nothing stored (src/api/quotas.ts).
  // session.created goes to the webhook outbox with the row, and leaves it with the row if the start fails.
  const created = webhookEventId(`${id}/created`);
  await withSessionSlot(deps, client, owner.workspaceId, async (tx) => {
    await insertSession(tx, {
      id,
      workspaceId: owner.workspaceId,
      agentId: agent.id,
      agentVersion: agent.version,
      environmentId: environment.id,
      title: p.title ?? null,
      metadata: p.metadata ?? {},
      vaultIds: p.vault_ids ?? [],
      ...(p.budget ? { budget: moneyOf(p.budget) } : {}),
      ...(opts.deploymentId ? { deploymentId: opts.deploymentId } : {}),
      ...(overridden ? { agentConfig: agent } : {}),
    });
    await recordWebhookEvent(tx, {
      workspaceId: owner.workspaceId,
      type: 'session.created',
      data: { id },
      id: created,
    });
  });
  try {
    await insertResources(db, deps, id, owner.workspaceId, planned);
    await insertMounts(db, id, owner.workspaceId, mounts);
    const statusWebhooks = await statusWebhooksWanted(db, owner.workspaceId);
    const handle = await startSessionRun(client, {
      workflowId: id,
      input: { agent: file, ...(first ? { message: first } : {}), ...(listCost ? { listCost } : {}), statusWebhooks },
      agent: file,
      firstMessage: first?.text,
      workspace: owner.workspace,
    });
    // An endpoint change committed since the read above may have been announced before this workflow started.
    const now = await statusWebhooksWanted(db, owner.workspaceId);
    if (now.on !== statusWebhooks.on) await tellSession(client, id, now);
    for (const m of rest)
      if ('text' in m) await handle.signal(userMessageSignal, m);
      else await handle.executeUpdate(defineOutcomeUpdate, { args: [m] });
    // A self-hosted environment's workers learn of the session from its queue.
    if (environment.config.type === 'self_hosted')
      await enqueueSessionWork(db, { workspaceId: owner.workspaceId, environmentId: environment.id, sessionId: id });
  } catch (e) {
    await deleteResources(db, id);
    await deleteSessionMounts(db, id);
    await removeSessionRow(db, id);
    await deleteWebhookEvent(db, created);
    throw e;
  }
  return id;
}
