// /v1/agents: agents with immutable, numbered versions. An update writes a new version (when it changes
// anything) and takes an optimistic `version`; a stale one is a 409 the SDK must not retry.
import { z } from 'zod';
import type { Queryable } from '../storage/db';
import {
  agentExists,
  archiveAgent,
  findAgent,
  insertAgent,
  insertAgentVersion,
  listAgentVersions,
  listAgents,
  type AgentRow,
} from '../storage/repos/agents-repo';
import {
  IdSchema,
  INT4_MAX,
  MetadataPatchSchema,
  MetadataSchema,
  ArchivableQuerySchema,
  PageQuerySchema,
  TimeQuerySchema,
  applyMetadataPatch,
  cursorPos,
  filterDigest,
  iso,
  isoOrNull,
  newId,
  pageSchema,
  toPage,
} from './shared-fields';
import type { ApiApp, ApiDeps } from './route-context';
import { ApiError, badRequest, conflict, notFound } from './api-error';
import { refuseAtTheDoor } from './egress-door';
import { ResolvedToolSchema, ToolParamsSchema, resolveTools, withWebToolsResolved } from './agent-tools';
import { AgentSkillSchema, SkillListParamsSchema, resolveAgentSkills } from './skills/agent-skills';
import { recordWebhookEvent } from '../webhooks/webhook-events';
import { MultiagentParamsSchema, MultiagentSchema, resolveMultiagent } from './agent-multiagent';

export { TOOLSET_TOOLS } from './agent-tools';

const McpServerSchema = z.strictObject({
  type: z.literal('url'),
  name: z.string().min(1).max(255),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
});

const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
const ModelParamsSchema = z.union([
  z.string().min(1).max(200),
  z.strictObject({
    id: z.string().min(1).max(200),
    effort: z.union([z.enum(EFFORTS), z.strictObject({ type: z.enum(EFFORTS) })]).nullish(),
    inference_geo: z.string().max(100).nullish(),
    speed: z.enum(['standard', 'fast']).nullish(),
  }),
]);

const ExecutionIdentitySchema = z.strictObject({
  type: z.literal('service_account', { error: 'only service_account is supported (aws_role is not supported yet)' }),
});

export const AgentCreateSchema = z.strictObject({
  name: z.string().min(1, 'name must not be empty').max(256),
  model: ModelParamsSchema,
  description: z.string().max(2048).nullish(),
  system: z.string().max(100_000).nullish(),
  tools: z.array(ToolParamsSchema).max(256).optional(),
  mcp_servers: z.array(McpServerSchema).max(20).optional(),
  skills: SkillListParamsSchema.optional(),
  multiagent: MultiagentParamsSchema.nullish(),
  execution_identity: ExecutionIdentitySchema.nullish(),
  metadata: MetadataSchema.optional(),
});

export const AgentUpdateSchema = z.strictObject({
  version: z.number().int().min(1).max(INT4_MAX).optional(),
  name: z.string().min(1, 'name must not be empty').max(256).optional(),
  model: ModelParamsSchema.optional(),
  description: z.string().max(2048).nullish(),
  system: z.string().max(100_000).nullish(),
  tools: z.array(ToolParamsSchema).max(256).nullish(),
  mcp_servers: z.array(McpServerSchema).max(20).nullish(),
  skills: SkillListParamsSchema.nullish(),
  multiagent: MultiagentParamsSchema.nullish(),
  execution_identity: ExecutionIdentitySchema.nullish(),
  metadata: MetadataPatchSchema.nullish(),
});

const ModelConfigSchema = z.object({
  id: z.string(),
  effort: z.object({ type: z.enum(EFFORTS) }).optional(),
  inference_geo: z.string().optional(),
  speed: z.enum(['standard', 'fast']).optional(),
});

const AgentBodySchema = z.object({
  name: z.string(),
  description: z.string().nullable(),
  model: ModelConfigSchema,
  system: z.string().nullable(),
  tools: z.array(ResolvedToolSchema),
  mcp_servers: z.array(McpServerSchema),
  skills: z.array(AgentSkillSchema),
  multiagent: MultiagentSchema.nullable(),
  execution_identity: z.object({ type: z.literal('service_account') }),
  metadata: z.record(z.string(), z.string()),
});
type AgentBody = z.infer<typeof AgentBodySchema>;

export const AgentSchema = AgentBodySchema.extend({
  id: z.string(),
  type: z.literal('agent'),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  archived_at: z.string().nullable(),
}).meta({ id: 'Agent' });
export type ApiAgent = z.infer<typeof AgentSchema>;

/** An agent as a session thread runs it: the version, without timestamps, metadata or roster. */
export const SessionThreadAgentSchema = AgentBodySchema.omit({ metadata: true, multiagent: true }).extend({
  id: z.string(),
  type: z.literal('agent'),
  version: z.number().int(),
});
export type SessionThreadAgent = z.infer<typeof SessionThreadAgentSchema>;

/** The agent as a session shows it: the version it runs, its roster resolved to full definitions. */
export const SessionAgentSchema = SessionThreadAgentSchema.extend({
  multiagent: z.object({ type: z.literal('coordinator'), agents: z.array(SessionThreadAgentSchema) }).nullable(),
});

/** An agent version as a thread's snapshot. */
export function threadAgentOf(agent: ApiAgent): SessionThreadAgent {
  const { created_at: _c, updated_at: _u, archived_at: _a, metadata: _m, multiagent: _r, ...rest } = agent;
  return rest;
}

function resolveModel(m: z.infer<typeof ModelParamsSchema>): AgentBody['model'] {
  if (typeof m === 'string') return { id: m };
  return {
    id: m.id,
    ...(m.effort ? { effort: typeof m.effort === 'string' ? { type: m.effort } : m.effort } : {}),
    ...(m.inference_geo ? { inference_geo: m.inference_geo } : {}),
    ...(m.speed ? { speed: m.speed } : {}),
  };
}

/** The cross-field rules: unique tool and server names, and every MCP server used by exactly the toolsets that name it. */
function checkBody(body: AgentBody, at = ''): void {
  const servers = new Set<string>();
  for (const [i, s] of body.mcp_servers.entries()) {
    if (servers.has(s.name)) throw badRequest(`${at}mcp_servers.${i}.name: ${s.name} is listed twice`);
    servers.add(s.name);
  }
  const referenced = new Set<string>();
  const customNames = new Set<string>();
  let toolsets = 0;
  for (const [i, t] of body.tools.entries()) {
    if (t.type === 'agent_toolset_20260401' && ++toolsets > 1)
      throw badRequest(`${at}tools.${i}: agent_toolset_20260401 is listed twice`);
    if (t.type === 'mcp_toolset') {
      if (!servers.has(t.mcp_server_name))
        throw badRequest(`${at}tools.${i}.mcp_server_name: no mcp_servers entry is named ${t.mcp_server_name}`);
      if (referenced.has(t.mcp_server_name))
        throw badRequest(`${at}tools.${i}.mcp_server_name: ${t.mcp_server_name} has two toolsets`);
      referenced.add(t.mcp_server_name);
    }
    if (t.type === 'custom') {
      if (customNames.has(t.name)) throw badRequest(`${at}tools.${i}.name: custom tool ${t.name} is listed twice`);
      customNames.add(t.name);
    }
  }
  for (const [i, s] of body.mcp_servers.entries()) {
    if (!referenced.has(s.name))
      throw badRequest(`${at}mcp_servers.${i}: ${s.name} is not used by any mcp_toolset in tools`);
  }
}

function toAgent(r: AgentRow<AgentBody>, latest: boolean): ApiAgent {
  return {
    ...r.body,
    tools: withWebToolsResolved(r.body.tools),
    id: r.id,
    type: 'agent',
    version: r.version,
    created_at: iso(r.created_at),
    updated_at: iso(latest ? r.updated_at : r.version_created_at),
    archived_at: isoOrNull(r.archived_at),
  };
}

/** One agent of the workspace at `version` (default: the latest), or a 404. */
export async function getAgent(
  db: Queryable,
  workspaceId: string,
  id: string,
  version?: number,
  lock = false,
): Promise<ApiAgent> {
  const row = await findAgent<AgentBody>(db, workspaceId, id, version ?? null, lock);
  if (!row) {
    if (version !== undefined && (await agentExists(db, workspaceId, id))) {
      throw new ApiError(404, 'not_found_error', `agent ${id} has no version ${version}`);
    }
    throw notFound('agent', id);
  }
  return toAgent(row, version === undefined);
}

const AgentListQuerySchema = ArchivableQuerySchema.extend({
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
});

const AgentPathSchema = z.object({ agent_id: IdSchema });

/** Each MCP server URL past the egress gate, or a 400 naming the one it refuses. */
async function checkServerUrls(deps: ApiDeps, servers: readonly { url: string }[], at = ''): Promise<void> {
  for (const [i, s] of servers.entries()) await refuseAtTheDoor(deps, `${at}mcp_servers.${i}.url`, s.url);
}

/**
 * The fields a session may replace on its agent (`agent_with_overrides` at create; tools and MCP servers mid-session),
 * each validated as the agent's own create validates it.
 */
export const AgentOverridesSchema = z.strictObject({
  model: ModelParamsSchema.optional(),
  system: z.string().max(100_000).nullish(),
  tools: z.array(ToolParamsSchema).max(256).optional(),
  mcp_servers: z.array(McpServerSchema).max(20).optional(),
  skills: SkillListParamsSchema.optional(),
});
export type AgentOverrides = z.infer<typeof AgentOverridesSchema>;

/** `f()`, its 400 naming the field under `at`. */
function prefixed<T>(at: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (at && e instanceof ApiError && e.status === 400) throw badRequest(`${at}${e.message}`, e.extra.errorCode);
    throw e;
  }
}

/**
 * `agent` with each provided field of `o` replacing its own (a full replacement; `system: null` clears it), checked
 * as the agent's create checks it: the cross-field rules, the egress gate for MCP URLs, the skills resolved. `at`
 * prefixes the field names in a refusal (`agent.`). The agent resource itself is not touched.
 */
export async function applyAgentOverrides(
  deps: ApiDeps,
  workspaceId: string,
  agent: ApiAgent,
  o: AgentOverrides,
  at = '',
): Promise<ApiAgent> {
  const next: ApiAgent = {
    ...agent,
    model: o.model === undefined ? agent.model : resolveModel(o.model),
    system: o.system === undefined ? agent.system : o.system || null,
    tools: o.tools === undefined ? agent.tools : withWebToolsResolved(prefixed(at, () => resolveTools(o.tools!))),
    mcp_servers: o.mcp_servers === undefined ? agent.mcp_servers : o.mcp_servers,
    skills: o.skills === undefined ? agent.skills : await resolveAgentSkills(deps.db, workspaceId, o.skills),
  };
  checkBody(next, at);
  if (o.mcp_servers) await checkServerUrls(deps, o.mcp_servers, at);
  return next;
}

export function agentRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db } = deps;
  app.post(
    '/v1/agents',
    { schema: { operationId: 'createAgent', body: AgentCreateSchema, response: { 200: AgentSchema } } },
    async (req) => {
      const p = req.body;
      const body: AgentBody = {
        name: p.name,
        description: p.description || null,
        model: resolveModel(p.model),
        system: p.system || null,
        tools: resolveTools(p.tools ?? []),
        mcp_servers: p.mcp_servers ?? [],
        skills: await resolveAgentSkills(db, req.workspaceId, p.skills ?? []),
        multiagent: null,
        execution_identity: { type: 'service_account' },
        metadata: p.metadata ?? {},
      };
      checkBody(body);
      await checkServerUrls(deps, body.mcp_servers);
      const id = newId('agent');
      body.multiagent = await resolveMultiagent(db, req.workspaceId, p.multiagent, { id, version: 1 });
      const now = new Date();
      await insertAgent(db, req.workspaceId, id, body, now, (tx) =>
        recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'agent.created', data: { id } }),
      );
      return getAgent(db, req.workspaceId, id);
    },
  );

  app.get(
    '/v1/agents/:agent_id',
    {
      schema: {
        operationId: 'retrieveAgent',
        params: AgentPathSchema,
        querystring: z.strictObject({
          version: z.coerce
            .number({ error: 'version must be an integer' })
            .int('version must be an integer')
            .min(1, 'version must be at least 1')
            .max(2 ** 31 - 1)
            .optional(),
        }),
        response: { 200: AgentSchema },
      },
    },
    async (req) => getAgent(db, req.workspaceId, req.params.agent_id, req.query.version),
  );

  app.post(
    '/v1/agents/:agent_id',
    {
      schema: {
        operationId: 'updateAgent',
        params: AgentPathSchema,
        body: AgentUpdateSchema,
        response: { 200: AgentSchema },
      },
    },
    async (req) => {
      const p = req.body;
      const id = req.params.agent_id;
      // Before the row is locked: resolving a name may take a moment.
      if (p.mcp_servers) await checkServerUrls(deps, p.mcp_servers);
      return db.transaction(async (tx) => {
        const current = await getAgent(tx, req.workspaceId, id, undefined, true);
        if (p.version !== undefined && p.version !== current.version) {
          throw conflict(`version ${p.version} is stale: agent ${id} is at version ${current.version}`);
        }
        if (current.archived_at) throw badRequest(`agent ${id} is archived and cannot be changed`);
        const next: AgentBody = {
          name: p.name ?? current.name,
          description: p.description === undefined ? current.description : p.description || null,
          model: p.model === undefined ? current.model : resolveModel(p.model),
          system: p.system === undefined ? current.system : p.system || null,
          tools: p.tools === undefined ? current.tools : resolveTools(p.tools ?? []),
          mcp_servers: p.mcp_servers === undefined ? current.mcp_servers : (p.mcp_servers ?? []),
          skills:
            p.skills === undefined ? current.skills : await resolveAgentSkills(tx, req.workspaceId, p.skills ?? []),
          multiagent: current.multiagent,
          execution_identity: { type: 'service_account' },
          metadata: applyMetadataPatch(current.metadata, p.metadata),
        };
        checkBody(next);
        // A roster that names `self` points at the version being written: compared at the current one first.
        const rosterAt = (version: number) =>
          p.multiagent === undefined
            ? Promise.resolve(
                current.multiagent && {
                  ...current.multiagent,
                  agents: current.multiagent.agents.map((a) => (a.id === id ? { ...a, version } : a)),
                },
              )
            : resolveMultiagent(tx, req.workspaceId, p.multiagent, { id, version });
        next.multiagent = await rosterAt(current.version);
        const before = AgentBodySchema.parse(current);
        if (JSON.stringify(before) === JSON.stringify(AgentBodySchema.parse(next))) return current;
        const now = new Date();
        const version = current.version + 1;
        next.multiagent = await rosterAt(version);
        await insertAgentVersion(tx, id, version, next, now);
        await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'agent.updated', data: { id } });
        return getAgent(tx, req.workspaceId, id);
      });
    },
  );

  app.get(
    '/v1/agents',
    {
      schema: {
        operationId: 'listAgents',
        querystring: AgentListQuerySchema,
        response: { 200: pageSchema(AgentSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const filters = filterDigest({
        include_archived: q.include_archived ?? false,
        gte: q['created_at[gte]'],
        lte: q['created_at[lte]'],
      });
      const rows = await listAgents<AgentBody>(db, req.workspaceId, {
        before: cursorPos(q.page, filters) ?? null,
        includeArchived: q.include_archived ?? false,
        createdGte: q['created_at[gte]'] ?? null,
        createdLte: q['created_at[lte]'] ?? null,
        limit: q.limit + 1,
      });
      return toPage(rows, q.limit, (r) => toAgent(r, true), filters);
    },
  );

  app.post(
    '/v1/agents/:agent_id/archive',
    { schema: { operationId: 'archiveAgent', params: AgentPathSchema, response: { 200: AgentSchema } } },
    async (req) => {
      const id = req.params.agent_id;
      const current = await getAgent(db, req.workspaceId, id);
      if (!current.archived_at)
        await db.transaction(async (tx) => {
          await archiveAgent(tx, req.workspaceId, id);
          await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'agent.archived', data: { id } });
        });
      return getAgent(db, req.workspaceId, id);
    },
  );

  app.get(
    '/v1/agents/:agent_id/versions',
    {
      schema: {
        operationId: 'listAgentVersions',
        params: AgentPathSchema,
        querystring: PageQuerySchema,
        response: { 200: pageSchema(AgentSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const id = req.params.agent_id;
      await getAgent(db, req.workspaceId, id);
      // Versions page by version number, newest first; the cursor's position is the last version shown.
      const rows = await listAgentVersions<AgentBody>(db, req.workspaceId, id, cursorPos(q.page) ?? null, q.limit + 1);
      return toPage(rows, q.limit, (r) => toAgent(r, false));
    },
  );
}
