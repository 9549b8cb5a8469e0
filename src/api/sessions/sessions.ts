// /v1/sessions: a session is a sessionWorkflow started from an agent version and an environment, indexed here by
// workspace. Its events are the log projected onto the API's vocabulary (projection.ts); input goes to the
// workflow through the same signals and updates the command line uses.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import { SessionOpError, resolveToolUse, startSessionRun, submitToolResult } from '../../session-ops';
import type { Usage } from '../../session/events';
import {
  endSignal,
  sendMessageUpdate,
  statusQuery,
  updateSessionUpdate,
  userMessageSignal,
  type SessionState,
  type SessionStatus,
} from '../../session/contract';
import { Failure } from '../../session/failure-types';
import { agentFileFor } from '../agent-file';
import { SessionAgentSchema, getAgent, threadAgentOf, type ApiAgent } from '../agents';
import {
  IdSchema,
  INT4_MAX,
  MetadataPatchSchema,
  MetadataSchema,
  applyMetadataPatch,
  iso,
  isoOrNull,
  newId,
} from '../shared-fields';
import type { ApiApp, ApiDeps, SessionDeps } from '../route-context';
import { getEnvironment } from '../environments';
import { ApiError, badRequest, conflict, notFound } from '../api-error';
import { SessionFeeds } from './feed';
import { eventId } from './projection';
import { getVault } from '../vaults/vaults';
import {
  BudgetLimitSchema,
  BudgetResponseSchema,
  budgetOfRow,
  budgetRefused,
  checkBudgetUpdate,
  listCostFor,
  listCostOf,
  moneyOf,
} from './session-budget';
import { eventsPerSend, withSessionSlot } from '../quotas';
import { streamRoute } from './events-stream';
import { interruptAck, recordSessionUpdate } from './log-writes';
import { liveRoute } from './stream';
import { STATUSES, sessionListRoute, type ApiStatus } from './list';
import { eventListRoute } from './events-list';
import { threadRoutes, threadSessionOf } from './session-threads';
import { rosterFor } from './roster';
import { StreamRelay } from '../../stream/relay';
import { deleteSession, resumeDeletes } from './delete';
import {
  ResourceSchema,
  ResourcesSchema,
  insertResources,
  planResourceMounts,
  planResources,
  resourceRoutes,
  resourcesOf,
  selfHostedFiles,
} from './resources';
import { insertMounts, planSkillMounts, promptMountsOf, resolveSessionSkills } from './resource-mounts';
import { withPromptSections } from './prompt-sections';
import { deleteSessionMounts } from '../../storage/repos/session-mounts-repo';
import { isSessionClosed } from '../../temporal-errors';
import { deleteResources } from '../../storage/repos/session-resources-repo';
import { enqueueSessionWork, stopSessionWork } from '../environment-work';
import {
  archiveSessionRow,
  findSession,
  insertSession,
  removeSessionRow,
  updateSessionBudget,
  updateSessionFields,
  type SessionRow,
} from '../../storage/repos/sessions-repo';

export type { SessionDeps };

/** The agent file's limit on a system prompt. */
const MAX_SYSTEM_CHARS = 200_000;

const TextBlockSchema = z.strictObject({
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
/** A tool result's block: text; the other kinds the SDK types are refused by name, since the log keeps text. */
const ToolResultBlockSchema = z.union([
  TextBlockSchema,
  z
    .looseObject({ type: z.enum(['image', 'document', 'search_result']) })
    .refine(() => false, 'only text blocks can be a tool result here: the session log keeps a tool result as text'),
]);
const UserMessageSchema = z.strictObject({ type: z.literal('user.message'), content: ContentSchema });
const InboundEventSchema = z.discriminatedUnion('type', [
  UserMessageSchema,
  z.strictObject({ type: z.literal('user.interrupt'), session_thread_id: z.string().nullish() }),
  z.strictObject({
    type: z.literal('user.tool_confirmation'),
    tool_use_id: IdSchema,
    result: z.enum(['allow', 'deny']),
    deny_message: z.string().max(10_000).nullish(),
    session_thread_id: z.string().nullish(),
  }),
  z.strictObject({
    type: z.literal('user.tool_result'),
    tool_use_id: IdSchema,
    content: z.array(ToolResultBlockSchema).max(100).nullish(),
    is_error: z.boolean().nullish(),
    session_thread_id: z.string().nullish(),
  }),
  z.strictObject({
    type: z.literal('user.custom_tool_result'),
    custom_tool_use_id: IdSchema,
    content: z.array(TextBlockSchema).max(100).nullish(),
    is_error: z.boolean().nullish(),
    session_thread_id: z.string().nullish(),
  }),
]);
type InboundEvent = z.infer<typeof InboundEventSchema>;

const textOf = (content: { type: string; text?: unknown }[]) => content.map((b) => String(b.text ?? '')).join('\n\n');

const AgentRefSchema = z.union([
  IdSchema,
  z.strictObject({ type: z.literal('agent'), id: IdSchema, version: z.number().int().min(1).max(INT4_MAX).optional() }),
]);

const SessionCreateSchema = z.strictObject({
  agent: AgentRefSchema,
  environment_id: IdSchema,
  initial_events: z.array(UserMessageSchema).max(50).optional(),
  vault_ids: z.array(IdSchema).max(20).optional(),
  title: z.string().max(500).nullish(),
  metadata: MetadataSchema.optional(),
  resources: ResourcesSchema.optional(),
  budget: BudgetLimitSchema.optional(),
});

export const SessionSchema = z
  .object({
    id: z.string(),
    type: z.literal('session'),
    agent: SessionAgentSchema,
    environment_id: z.string(),
    status: z.enum(STATUSES),
    title: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    resources: z.array(ResourceSchema),
    vault_ids: z.array(z.string()),
    usage: z.object({
      input_tokens: z.number(),
      output_tokens: z.number(),
      cache_read_input_tokens: z.number(),
      cache_creation: z.object({ ephemeral_5m_input_tokens: z.number(), ephemeral_1h_input_tokens: z.number() }),
      list_cost: z.object({ amount: z.string(), currency: z.literal('USD') }).optional(),
    }),
    stats: z.object({ duration_seconds: z.number().optional() }),
    budget: BudgetResponseSchema.nullable(),
    outcome_evaluations: z.array(z.never()),
    deployment_id: z.null(),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'Session' });
type ApiSession = z.infer<typeof SessionSchema>;

const STATE: Record<SessionState, ApiStatus> = {
  running: 'running',
  rescheduling: 'rescheduling',
  waiting_for_user: 'idle',
  requires_action: 'idle',
  ended: 'terminated',
};
const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/**
 * The workflow's state and usage; a run that is gone (ended, past retention) reads as terminated. `endedAt` is when
 * a terminated session's last run closed, where Temporal still knows it.
 */
async function liveStatus(
  client: Client,
  id: string,
): Promise<{ status: ApiStatus; usage: Usage; listCost?: SessionStatus['listCost']; endedAt?: Date }> {
  const handle = client.workflow.getHandle(id);
  const closedAt = async () => (await handle.describe().catch(() => undefined))?.closeTime;
  try {
    const s = await handle.query(statusQuery);
    return {
      status: STATE[s.state],
      usage: s.usage,
      listCost: s.listCost,
      ...(s.state === 'ended' ? { endedAt: await closedAt() } : {}),
    };
  } catch (e) {
    if (isSessionClosed(e))
      return {
        status: 'terminated',
        usage: NO_USAGE,
        ...(e instanceof WorkflowNotFoundError ? {} : { endedAt: await closedAt() }),
      };
    throw e;
  }
}

/** Cache writes by TTL, as the model's usage reported them. */
function cacheCreation(u: Usage): { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number } {
  const oneHour = u.cacheCreation1hInputTokens ?? 0;
  return { ephemeral_5m_input_tokens: u.cacheCreationInputTokens - oneHour, ephemeral_1h_input_tokens: oneHour };
}

/** Seconds since creation; a terminated session's is frozen at its end (its last run's close, else the row's last update). */
function durationSeconds(r: SessionRow, live: { status: ApiStatus; endedAt?: Date }): number {
  const end = live.status !== 'terminated' ? new Date() : (live.endedAt ?? r.updated_at);
  return Math.max(0, Math.round((new Date(end).getTime() - new Date(r.created_at).getTime()) / 1000));
}

/** The agent as the session shows it; a coordinator's roster as the agent versions it names. */
async function snapshot(
  deps: ApiDeps,
  workspaceId: string,
  agent: ApiAgent,
): Promise<z.infer<typeof SessionAgentSchema>> {
  const roster = agent.multiagent
    ? await Promise.all(
        agent.multiagent.agents.map(async (a) => threadAgentOf(await getAgent(deps.db, workspaceId, a.id, a.version))),
      )
    : null;
  return { ...threadAgentOf(agent), multiagent: roster ? { type: 'coordinator', agents: roster } : null };
}

async function toSession(
  deps: ApiDeps,
  sessions: SessionDeps,
  workspaceId: string,
  r: SessionRow,
): Promise<ApiSession> {
  const agent = await getAgent(deps.db, workspaceId, r.agent_id, r.agent_version);
  const live = await liveStatus(sessions.client, r.id);
  const listCost = listCostOf(live.listCost);
  return {
    id: r.id,
    type: 'session',
    agent: await snapshot(deps, workspaceId, agent),
    environment_id: r.environment_id,
    status: live.status,
    title: r.title,
    metadata: r.metadata,
    resources: await resourcesOf(deps.db, r.id),
    vault_ids: r.vault_ids,
    usage: {
      // The API counts uncached input apart from cache reads and writes, as the Messages API does.
      input_tokens: live.usage.inputTokens,
      output_tokens: live.usage.outputTokens,
      cache_read_input_tokens: live.usage.cacheReadInputTokens,
      cache_creation: cacheCreation(live.usage),
      ...(listCost ? { list_cost: listCost } : {}),
    },
    stats: { duration_seconds: durationSeconds(r, live) },
    budget: budgetOfRow(r),
    outcome_evaluations: [],
    deployment_id: null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    archived_at: isoOrNull(r.archived_at),
  };
}

async function sessionRow(deps: ApiDeps, workspaceId: string, id: string): Promise<SessionRow> {
  const row = await findSession(deps.db, workspaceId, id);
  if (!row) throw notFound('session', id);
  return row;
}

const opError = (e: unknown): never => {
  if (e instanceof SessionOpError) throw badRequest(e.message);
  throw e;
};

const SessionPath = z.object({ session_id: IdSchema });
export function sessionRoutes(
  app: ApiApp,
  deps: ApiDeps,
  sessions: SessionDeps,
  log: (m: string) => void = () => undefined,
): void {
  const { db } = deps;
  // The session's log, projected once per process and kept up to date; the projector maps call event ids back to the model's ids.
  const feeds = new SessionFeeds(sessions.log, sessions.client, log, sessions.streamKey);
  app.addHook('onClose', async () => feeds.close());
  // The live previews' relay, shared by the previews route and the event stream's `event_deltas`.
  const relay = sessions.streamKey ? new StreamRelay(sessions.client, sessions.streamKey) : undefined;
  streamRoute(app, deps, feeds, (workspaceId, id) => sessionRow(deps, workspaceId, id), relay);
  if (relay) {
    app.addHook('onClose', async () => relay.close());
    liveRoute(app, relay, (workspaceId, id) => sessionRow(deps, workspaceId, id));
  }
  resourceRoutes(app, deps, (workspaceId, id) => sessionRow(deps, workspaceId, id));
  threadRoutes(
    app,
    deps,
    feeds,
    sessions.client,
    async (workspaceId, id) => toSession(deps, sessions, workspaceId, await sessionRow(deps, workspaceId, id)),
    relay,
  );
  // Deletes a stopped process left half done are finished in the background.
  let stopResuming: (() => Promise<void>) | undefined;
  app.addHook(
    'onReady',
    async () =>
      void (stopResuming = resumeDeletes(
        { db, client: sessions.client, archive: sessions.archive, blobs: deps.blobs },
        log,
      )),
  );
  app.addHook('onClose', async () => stopResuming?.());

  app.post(
    '/v1/sessions',
    { schema: { operationId: 'createSession', body: SessionCreateSchema, response: { 200: SessionSchema } } },
    async (req) => {
      const p = req.body;
      const ref = typeof p.agent === 'string' ? { id: p.agent, version: undefined } : p.agent;
      const agent = await getAgent(db, req.workspaceId, ref.id, ref.version);
      if (agent.archived_at) throw badRequest(`agent ${agent.id} is archived; new sessions cannot use it`);
      const environment = await getEnvironment(db, req.workspaceId, p.environment_id);
      if (environment.archived_at)
        throw badRequest(
          `environment ${environment.id} is archived; new sessions cannot use it`,
          'environment_archived',
        );
      // A session may use only its own workspace's vaults.
      for (const v of p.vault_ids ?? []) await getVault(db, req.workspaceId, v);
      if (environment.config.type === 'self_hosted' && (p.resources ?? []).some((r) => r.type === 'file'))
        throw selfHostedFiles(environment.id);
      const planned = await planResources(deps, p.resources ?? []);
      const skills = await resolveSessionSkills(db, req.workspaceId, agent.skills ?? []);
      const mounts = [
        ...(await planResourceMounts(db, req.workspaceId, p.resources ?? [])),
        ...planSkillMounts(skills),
      ];
      const file = agentFileFor(
        agent,
        environment,
        { workspaceId: req.workspaceId, vaultIds: p.vault_ids ?? [] },
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
          await rosterFor(db, req.workspaceId, agent, file, (a) =>
            agentFileFor(
              a,
              environment,
              { workspaceId: req.workspaceId, vaultIds: p.vault_ids ?? [] },
              planned[0]?.repo,
              deps.selfHostedToolTimeoutSeconds,
            ),
          ),
        );
      // The prices of the models it can run and its budget; a budget on an unpriced model is a 400 here.
      const listCost = listCostFor(file, deps.prices, p.budget);
      const [first, ...rest] = (p.initial_events ?? []).map((e) => ({ text: textOf(e.content) }));
      const id = newId('sesn');
      // Within the workspace's session quota, or a 429 with nothing stored (src/api/quotas.ts).
      await withSessionSlot(deps, sessions.client, req.workspaceId, (tx) =>
        insertSession(tx, {
          id,
          workspaceId: req.workspaceId,
          agentId: agent.id,
          agentVersion: agent.version,
          environmentId: environment.id,
          title: p.title ?? null,
          metadata: p.metadata ?? {},
          vaultIds: p.vault_ids ?? [],
          ...(p.budget ? { budget: moneyOf(p.budget) } : {}),
        }),
      );
      try {
        await insertResources(db, deps, id, req.workspaceId, planned);
        await insertMounts(db, id, req.workspaceId, mounts);
        const handle = await startSessionRun(sessions.client, {
          workflowId: id,
          input: { agent: file, ...(first ? { message: first } : {}), ...(listCost ? { listCost } : {}) },
          agent: file,
          firstMessage: first?.text,
          workspace: req.workspace,
        });
        for (const m of rest) await handle.signal(userMessageSignal, m);
        // A self-hosted environment's workers learn of the session from its queue.
        if (environment.config.type === 'self_hosted')
          await enqueueSessionWork(db, { workspaceId: req.workspaceId, environmentId: environment.id, sessionId: id });
      } catch (e) {
        await deleteResources(db, id);
        await deleteSessionMounts(db, id);
        await removeSessionRow(db, id);
        throw e;
      }
      return toSession(deps, sessions, req.workspaceId, await sessionRow(deps, req.workspaceId, id));
    },
  );

  app.get(
    '/v1/sessions/:session_id',
    { schema: { operationId: 'retrieveSession', params: SessionPath, response: { 200: SessionSchema } } },
    async (req) =>
      toSession(deps, sessions, req.workspaceId, await sessionRow(deps, req.workspaceId, req.params.session_id)),
  );

  app.post(
    '/v1/sessions/:session_id',
    {
      schema: {
        operationId: 'updateSession',
        params: SessionPath,
        body: z.strictObject({
          title: z.string().max(500).nullish(),
          metadata: MetadataPatchSchema.nullish(),
          vault_ids: z.undefined({ error: 'vault_ids cannot change after create' }).optional(),
          agent: z.undefined({ error: 'agent cannot change yet' }).optional(),
          budget: BudgetLimitSchema.nullable().optional(),
        }),
        response: { 200: SessionSchema },
      },
    },
    async (req) => {
      const row = await sessionRow(deps, req.workspaceId, req.params.session_id);
      if (row.archived_at) throw badRequest(`session ${row.id} is archived and read-only`);
      // The budget first: the workflow holds the spend, so it has the last word, and a refusal stores nothing.
      const budget = req.body.budget;
      if (budget !== undefined && !(budget === null && row.budget_amount === null)) {
        const live = await liveStatus(sessions.client, row.id);
        checkBudgetUpdate(row, budget, live.status === 'terminated' ? 'ended' : live.listCost);
        await sendBudget(sessions.client, row.id, budget === null ? null : moneyOf(budget));
        await updateSessionBudget(db, row.id, budget === null ? null : moneyOf(budget));
      }
      const after = {
        title: req.body.title === undefined ? row.title : req.body.title,
        metadata: applyMetadataPatch(row.metadata, req.body.metadata),
      };
      await updateSessionFields(db, row.id, after.title, after.metadata);
      await recordSessionUpdate(sessions.client, row.id, row, after, {
        title: req.body.title !== undefined,
        metadata: req.body.metadata != null,
      });
      return toSession(deps, sessions, req.workspaceId, await sessionRow(deps, req.workspaceId, row.id));
    },
  );

  sessionListRoute(app, {
    db,
    response: SessionSchema,
    toSession: (workspaceId, r: SessionRow) => toSession(deps, sessions, workspaceId, r),
  });

  app.post(
    '/v1/sessions/:session_id/archive',
    { schema: { operationId: 'archiveSession', params: SessionPath, response: { 200: SessionSchema } } },
    async (req) => {
      const row = await sessionRow(deps, req.workspaceId, req.params.session_id);
      if (!row.archived_at) {
        await endSession(sessions.client, row.id, 'archived');
        await archiveSessionRow(db, row.id);
        await stopSessionWork(db, row.id);
      }
      return toSession(deps, sessions, req.workspaceId, await sessionRow(deps, req.workspaceId, row.id));
    },
  );

  app.delete(
    '/v1/sessions/:session_id',
    {
      schema: {
        operationId: 'deleteSession',
        params: SessionPath,
        response: { 200: z.object({ id: z.string(), type: z.literal('session_deleted') }) },
      },
    },
    async (req) => {
      const id = req.params.session_id;
      if (
        !(await deleteSession(
          { db, client: sessions.client, archive: sessions.archive, blobs: deps.blobs },
          req.workspaceId,
          id,
        ))
      )
        throw notFound('session', id);
      return { id, type: 'session_deleted' as const };
    },
  );

  eventListRoute(app, feeds, (workspaceId, id) => sessionRow(deps, workspaceId, id));

  app.post(
    '/v1/sessions/:session_id/events',
    {
      schema: {
        operationId: 'sendSessionEvents',
        params: SessionPath,
        body: z.strictObject({
          events: z
            .array(InboundEventSchema)
            .min(1, 'events must not be empty')
            .max(eventsPerSend(deps), `at most ${eventsPerSend(deps)} events per send (API_EVENTS_PER_SEND)`),
        }),
      },
    },
    async (req) => {
      const row = await sessionRow(deps, req.workspaceId, req.params.session_id);
      if (row.archived_at) throw badRequest(`session ${row.id} is archived and read-only`);
      // All or nothing: every reference is resolved before anything is sent. A user.message needs no read of the log.
      const resolved: { e: InboundEvent; toolUseId?: string; target?: string; routedTo?: string }[] = [];
      for (const [i, e] of req.body.events.entries()) {
        // An interrupt naming a thread goes to that thread's own session.
        if (e.type === 'user.interrupt' && e.session_thread_id)
          resolved.push({
            e,
            target: await threadSessionOf(feeds, row.id, e.session_thread_id, `events.${i}.session_thread_id`),
          });
        else if (e.type !== 'user.message' && e.type !== 'user.interrupt') {
          const field = e.type === 'user.custom_tool_result' ? 'custom_tool_use_id' : 'tool_use_id';
          const ref = e.type === 'user.custom_tool_result' ? e.custom_tool_use_id : e.tool_use_id;
          // A call of the session's own, else of one of its threads (as that thread's events name it).
          const found = await callOf(feeds, row.id, ref);
          if (!found) throw badRequest(`events.${i}.${field}: no tool call ${ref} in this session or its threads`);
          resolved.push({
            e,
            toolUseId: found.toolUseId,
            ...(found.threadId ? { target: found.sessionId, routedTo: found.threadId } : {}),
          });
        } else resolved.push({ e });
      }
      const echoed: Record<string, unknown>[] = [];
      const handle = sessions.client.workflow.getHandle(row.id);
      for (const { e, toolUseId, target, routedTo } of resolved)
        echoed.push(await deliver(sessions.client, handle, target ?? row.id, e, toolUseId, feeds, routedTo));
      // A message to a session of a self-hosted environment whose worker has let go of it queues it again.
      if (resolved.some(({ e }) => e.type === 'user.message')) {
        const environment = await getEnvironment(db, req.workspaceId, row.environment_id);
        if (environment.config.type === 'self_hosted')
          await enqueueSessionWork(db, {
            workspaceId: req.workspaceId,
            environmentId: environment.id,
            sessionId: row.id,
          });
      }
      return { data: echoed };
    },
  );
}

/** Hands the workflow a new budget (null: removed); its refusals are the update's 400s. */
async function sendBudget(client: Client, id: string, budget: ReturnType<typeof moneyOf> | null): Promise<void> {
  try {
    await client.workflow.getHandle(id).executeUpdate(updateSessionUpdate, { args: [{ budget }] });
  } catch (e) {
    if (isSessionClosed(e)) throw badRequest(`budget: session ${id} has ended; its budget can no longer change`);
    if (e instanceof WorkflowUpdateFailedError) {
      const cause = e.cause as { type?: string; message?: string } | undefined;
      const why = (cause?.message ?? e.message).split('\n')[0];
      if (cause?.type === Failure.Session.BudgetNotRaised) throw budgetRefused('budget_not_raised', why);
      if (cause?.type === Failure.Session.BudgetUntracked) throw budgetRefused('model_not_budgetable', why);
      throw badRequest(`budget: session ${id} refused the change: ${why}`);
    }
    throw e;
  }
}

/** The model's id of the call an API event id names, and the session (the session, or a thread's) whose call it is. */
async function callOf(
  feeds: SessionFeeds,
  sessionId: string,
  apiEventId: string,
): Promise<{ sessionId: string; toolUseId: string; threadId?: string } | undefined> {
  const own = await feeds.toolUseIdOf(sessionId, apiEventId);
  if (own) return { sessionId, toolUseId: own };
  for (const t of (await feeds.get(sessionId)).threads.values()) {
    const toolUseId = await feeds.toolUseIdOf(t.sessionId, apiEventId);
    if (toolUseId) return { sessionId: t.sessionId, toolUseId, threadId: t.threadId };
  }
  return undefined;
}

async function endSession(client: Client, id: string, reason: string): Promise<void> {
  try {
    await client.workflow.getHandle(id).signal(endSignal, { reason });
  } catch (e) {
    if (!isSessionClosed(e)) throw e;
  }
}

async function deliver(
  client: Client,
  handle: ReturnType<Client['workflow']['getHandle']>,
  sessionId: string,
  e: InboundEvent,
  toolUseId: string | undefined,
  feeds: SessionFeeds,
  /** The thread a call's answer was routed to, which the echo names. */
  routedTo?: string,
): Promise<Record<string, unknown>> {
  const now = new Date().toISOString();
  const routed = routedTo ? { session_thread_id: routedTo } : {};
  try {
    switch (e.type) {
      case 'user.message': {
        const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: textOf(e.content) }] });
        return { ...e, id: eventId(sessionId, seq), processed_at: now };
      }
      case 'user.interrupt':
        return { ...e, id: await interruptAck(client, feeds, sessionId), processed_at: now };
      case 'user.tool_confirmation': {
        const { seq } = await resolveToolUse(client, sessionId, {
          toolUseId: toolUseId!,
          allow: e.result === 'allow',
          ...(e.deny_message ? { reason: e.deny_message } : {}),
        }).catch(opError);
        return { ...e, ...routed, id: eventId(sessionId, seq), processed_at: now };
      }
      case 'user.tool_result':
      case 'user.custom_tool_result': {
        const output = (e.content ?? []).map((b) => ('text' in b ? String(b.text) : '')).join('\n\n');
        const { seq } = await submitToolResult(client, sessionId, {
          toolUseId: toolUseId!,
          output,
          isError: e.is_error ?? false,
        }).catch(opError);
        return { ...e, ...routed, id: eventId(sessionId, seq), processed_at: now };
      }
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // The workflow's validators refuse what it cannot take (an ended session, an over-long message) and append nothing.
    if (err instanceof WorkflowUpdateFailedError) {
      const why = (err.cause?.message ?? err.message).split('\n')[0];
      throw /ended/i.test(why)
        ? conflict(`session ${sessionId} refused the event: ${why}`)
        : badRequest(`session ${sessionId} refused the event: ${why}`);
    }
    if (err instanceof WorkflowNotFoundError) throw conflict(`session ${sessionId} has ended`);
    throw err;
  }
}
