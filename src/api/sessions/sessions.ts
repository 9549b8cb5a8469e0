// /v1/sessions: a session is a sessionWorkflow started from an agent version and an environment, indexed here by
// workspace. Its events are the log projected onto the API's vocabulary (projection.ts); input goes to the
// workflow through the same signals and updates the command line uses.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import { SessionOpError, resolveToolUse, submitToolResult } from '../../session-ops';
import type { Usage } from '../../session/events';
import {
  defineOutcomeUpdate,
  endSignal,
  sendMessageUpdate,
  statusQuery,
  type SessionState,
  type SessionStatus,
} from '../../session/contract';
import { AgentSchema, SessionAgentSchema, getAgent, threadAgentOf, type ApiAgent } from '../agents';
import { SessionCreateSchema, TextBlockSchema, UserMessageSchema, createSession, textOf } from './session-create';
import { IdSchema, MetadataPatchSchema, applyMetadataPatch, iso, isoOrNull } from '../shared-fields';
import type { ApiApp, ApiDeps, SessionDeps } from '../route-context';
import { getEnvironment } from '../environments';
import { ApiError, badRequest, conflict, notFound } from '../api-error';
import { SessionFeeds } from './feed';
import { eventId } from './projection';
import {
  BudgetLimitSchema,
  BudgetResponseSchema,
  budgetOfRow,
  checkBudgetUpdate,
  listCostOf,
  moneyOf,
} from './session-budget';
import { eventsPerSend } from '../quotas';
import { streamRoute } from './events-stream';
import { interruptAck, recordSessionUpdate } from './log-writes';
import { liveRoute } from './stream';
import { STATUSES, sessionListRoute, type ApiStatus } from './list';
import { eventListRoute } from './events-list';
import { threadRoutes, threadSessionOf } from './session-threads';
import { StreamRelay } from '../../stream/relay';
import { deleteSession, resumeDeletes } from './delete';
import { ResourceSchema, resourceRoutes, resourcesOf } from './resources';
import {
  DefineOutcomeEventSchema,
  OutcomeEvaluationSchema,
  outcomeDefinition,
  outcomeEcho,
  outcomeEvaluations,
} from './session-outcomes';
import type { OutcomeDefinition } from '../../session/outcome-grading';
import { isSessionClosed } from '../../temporal-errors';
import { enqueueSessionWork, stopSessionWork } from '../environment-work';
import {
  archiveSessionRow,
  findSession,
  updateSessionAgent,
  updateSessionBudget,
  updateSessionFields,
  type SessionRow,
} from '../../storage/repos/sessions-repo';
import { recordWebhookEvent, webhookEventId } from '../../webhooks/webhook-events';
import { SessionAgentUpdateSchema, planAgentUpdate, sendSessionChange } from './session-agent-update';

export type { SessionDeps };

/** A tool result's block: text; the other kinds the SDK types are refused by name, since the log keeps text. */
const ToolResultBlockSchema = z.union([
  TextBlockSchema,
  z
    .looseObject({ type: z.enum(['image', 'document', 'search_result']) })
    .refine(() => false, 'only text blocks can be a tool result here: the session log keeps a tool result as text'),
]);
const InboundEventSchema = z.discriminatedUnion('type', [
  UserMessageSchema,
  DefineOutcomeEventSchema,
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
    outcome_evaluations: z.array(OutcomeEvaluationSchema),
    deployment_id: z.string().nullable(),
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

/** How long a read of a session whose run is ending waits for the run to close. */
const ENDING_WAIT_MS = 5000;

/**
 * The workflow's state and usage; a run that is gone (ended, past retention) reads as terminated. `endedAt` is when
 * a terminated session's last run closed, where Temporal still knows it.
 */
async function liveStatus(
  client: Client,
  id: string,
): Promise<{
  status: ApiStatus;
  usage: Usage;
  listCost?: SessionStatus['listCost'];
  outcomes?: SessionStatus['outcomes'];
  endedAt?: Date;
}> {
  const handle = client.workflow.getHandle(id);
  const closedAt = async () => (await handle.describe().catch(() => undefined))?.closeTime;
  // An ended run closes once it has sealed its last events: its close time, waited for a moment, is the end every
  // later read reports too.
  const endedAt = async () => {
    const at = await closedAt();
    if (at) return at;
    await Promise.race([handle.result().catch(() => undefined), new Promise((r) => setTimeout(r, ENDING_WAIT_MS))]);
    return closedAt();
  };
  try {
    const s = await handle.query(statusQuery);
    return {
      status: STATE[s.state],
      usage: s.usage,
      listCost: s.listCost,
      outcomes: s.outcomes,
      ...(s.state === 'ended' ? { endedAt: await endedAt() } : {}),
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

/** The agent the session runs: its version as stored, or as its overrides and updates made it. */
async function sessionAgentOf(deps: ApiDeps, workspaceId: string, r: SessionRow): Promise<ApiAgent> {
  return r.agent_config
    ? AgentSchema.parse(r.agent_config)
    : getAgent(deps.db, workspaceId, r.agent_id, r.agent_version);
}

async function toSession(
  deps: ApiDeps,
  sessions: SessionDeps,
  workspaceId: string,
  r: SessionRow,
): Promise<ApiSession> {
  const agent = await sessionAgentOf(deps, workspaceId, r);
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
    outcome_evaluations: outcomeEvaluations(live.outcomes),
    deployment_id: r.deployment_id,
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
      const id = await createSession(deps, sessions.client, req, req.body);
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
          agent: SessionAgentUpdateSchema.optional(),
          budget: BudgetLimitSchema.nullable().optional(),
        }),
        response: { 200: SessionSchema },
      },
    },
    async (req) => {
      const row = await sessionRow(deps, req.workspaceId, req.params.session_id);
      if (row.archived_at) throw badRequest(`session ${row.id} is archived and read-only`);
      // The agent's new tools, checked before anything is sent.
      const current = req.body.agent ? await sessionAgentOf(deps, req.workspaceId, row) : undefined;
      const proposed = current && (await planAgentUpdate(deps, req.workspaceId, row, current, req.body.agent!));
      // A replacement equal to what the session has changes nothing, and logs nothing.
      const same = (a: ApiAgent) => JSON.stringify([a.tools, a.mcp_servers]);
      const planned = proposed && current && same(proposed.agent) !== same(current) ? proposed : undefined;
      // Then the budget and the tools, in one update: the workflow holds the spend and knows whether it is idle, so
      // it has the last word, and a refusal stores nothing.
      const budget = req.body.budget;
      const budgetChanges = budget !== undefined && !(budget === null && row.budget_amount === null);
      const newBudget = budget ? moneyOf(budget) : null;
      if (budgetChanges) {
        const live = await liveStatus(sessions.client, row.id);
        checkBudgetUpdate(row, budget, live.status === 'terminated' ? 'ended' : live.listCost);
      }
      if (budgetChanges || planned) {
        await sendSessionChange(sessions.client, row.id, {
          ...(budgetChanges ? { budget: newBudget } : {}),
          ...(planned
            ? { agent: { tools: planned.tools, snapshot: await snapshot(deps, req.workspaceId, planned.agent) } }
            : {}),
        });
        if (budgetChanges) await updateSessionBudget(db, row.id, newBudget);
        if (planned) await updateSessionAgent(db, row.id, planned.agent);
      }
      const after = {
        title: req.body.title === undefined ? row.title : req.body.title,
        metadata: applyMetadataPatch(row.metadata, req.body.metadata),
      };
      await db.transaction(async (tx) => {
        await updateSessionFields(tx, row.id, after.title, after.metadata);
        await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'session.updated', data: { id: row.id } });
      });
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
        await db.transaction(async (tx) => {
          await archiveSessionRow(tx, row.id);
          await recordWebhookEvent(tx, {
            workspaceId: req.workspaceId,
            type: 'session.archived',
            data: { id: row.id },
            id: webhookEventId(`${row.id}/archived`),
          });
        });
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
      const resolved: {
        e: InboundEvent;
        toolUseId?: string;
        outcome?: OutcomeDefinition;
        target?: string;
        routedTo?: string;
      }[] = [];
      const outcomes = req.body.events.filter((e) => e.type === 'user.define_outcome').length;
      if (outcomes > 1)
        throw badRequest(
          `events: ${outcomes} user.define_outcome events; a session works on one outcome at a time, so send one`,
        );
      if (outcomes === 1) await assertNoActiveOutcome(sessions.client, row.id);
      for (const [i, e] of req.body.events.entries()) {
        if (e.type === 'user.define_outcome')
          resolved.push({ e, outcome: await outcomeDefinition(deps, req.workspaceId, e, `events.${i}`) });
        // An interrupt naming a thread goes to that thread's own session.
        else if (e.type === 'user.interrupt' && e.session_thread_id)
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
      for (const { e, toolUseId, outcome, target, routedTo } of resolved)
        echoed.push(await deliver(sessions.client, handle, target ?? row.id, e, toolUseId, feeds, outcome, routedTo));
      // A message to a session of a self-hosted environment whose worker has let go of it queues it again.
      if (resolved.some(({ e }) => e.type === 'user.message' || e.type === 'user.define_outcome')) {
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

/** A define_outcome is refused before anything of its send is delivered while another outcome is worked on. */
async function assertNoActiveOutcome(client: Client, id: string): Promise<void> {
  const { outcomes } = await liveStatus(client, id);
  const active = outcomes?.find((o) => o.result === 'pending' || o.result === 'running' || o.result === 'evaluating');
  if (active)
    throw badRequest(
      `events: outcome ${active.outcomeId} is still being worked on (${active.result}); a session works on one outcome at a time: send user.interrupt to end it, or wait until it is over`,
    );
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
  outcome?: OutcomeDefinition,
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
      case 'user.define_outcome': {
        const { seq } = await handle.executeUpdate(defineOutcomeUpdate, { args: [outcome!] });
        return outcomeEcho(outcome!, eventId(sessionId, seq), now);
      }
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
