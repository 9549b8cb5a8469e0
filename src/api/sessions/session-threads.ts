// /v1/sessions/{id}/threads: a session's primary thread (the session's own agent and log) and the threads its
// coordinator started (src/workflows/threads.ts), as the coordinator's log records them; each thread's events are
// its child session's log, listed and streamed like a session's. Archiving a thread goes through the coordinator.
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import { archiveThreadUpdate } from '../../session/contract';
import { primaryThreadId } from '../../session/thread-ids';
import { isSessionClosed } from '../../temporal-errors';
import { SessionThreadAgentSchema, type SessionThreadAgent } from '../agents';
import { badRequest, conflict, notFound } from '../api-error';
import type { ApiApp, ApiDeps } from '../route-context';
import { IdSchema, PageQuerySchema, cursorPos, filterDigest, pageSchema, repeated, toPage } from '../shared-fields';
import { EventListQuerySchema, pageOfEvents } from './events-list';
import { StreamQuerySchema, streamFeed } from './events-stream';
import type { SessionFeeds } from './feed';
import type { ThreadRecord } from './projection';
import type { StreamRelay } from '../../stream/relay';
import type { Usage } from '../../session/events';

const THREAD_STATUSES = ['running', 'idle', 'rescheduling', 'terminated'] as const;

export const SessionThreadSchema = z
  .object({
    id: z.string(),
    type: z.literal('session_thread'),
    agent: SessionThreadAgentSchema,
    archived_at: z.string().nullable(),
    created_at: z.string(),
    parent_thread_id: z.string().nullable(),
    session_id: z.string(),
    stats: z.object({ duration_seconds: z.number().optional() }).nullable(),
    status: z.enum(THREAD_STATUSES),
    updated_at: z.string(),
    usage: z
      .object({
        input_tokens: z.number(),
        output_tokens: z.number(),
        cache_read_input_tokens: z.number(),
        cache_creation: z.object({ ephemeral_5m_input_tokens: z.number(), ephemeral_1h_input_tokens: z.number() }),
      })
      .nullable(),
    workflow_run_id: z.null(),
  })
  .meta({ id: 'SessionThread' });
type ApiThread = z.infer<typeof SessionThreadSchema>;

/** What the threads need of the session they belong to. */
export interface ThreadSession {
  id: string;
  status: (typeof THREAD_STATUSES)[number];
  agent: SessionThreadAgent & { multiagent: { agents: SessionThreadAgent[] } | null };
  created_at: string;
  updated_at: string;
  archived_at: string | null;
  stats: { duration_seconds?: number };
}

const ThreadPath = z.object({ session_id: IdSchema, thread_id: IdSchema });
const ThreadListQuerySchema = PageQuerySchema.extend({
  'statuses[]': repeated(
    z.enum(THREAD_STATUSES, { error: `must be one of ${THREAD_STATUSES.join(', ')}` }),
    4,
  ).optional(),
});

/** Usage as a thread shows it: uncached input apart from cache reads and writes, as the session's. */
function usageOf(u: Usage): NonNullable<ApiThread['usage']> {
  const oneHour = u.cacheCreation1hInputTokens ?? 0;
  return {
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_read_input_tokens: u.cacheReadInputTokens,
    cache_creation: {
      ephemeral_5m_input_tokens: u.cacheCreationInputTokens - oneHour,
      ephemeral_1h_input_tokens: oneHour,
    },
  };
}

const seconds = (from: string, to: string) => Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 1000));

function primaryOf(s: ThreadSession): ApiThread {
  const { multiagent: _m, ...agent } = s.agent;
  return {
    id: primaryThreadId(s.id),
    type: 'session_thread',
    agent,
    archived_at: s.archived_at,
    created_at: s.created_at,
    parent_thread_id: null,
    session_id: s.id,
    stats: s.stats,
    status: s.status,
    updated_at: s.updated_at,
    usage: null,
    workflow_run_id: null,
  };
}

function childOf(s: ThreadSession, t: ThreadRecord): ApiThread {
  const agent = s.agent.multiagent?.agents.find((a) => a.name === t.agent);
  // The roster is the session's: a thread's agent is always on it.
  if (!agent) throw new Error(`thread ${t.threadId} runs ${t.agent}, which is not on the session's roster`);
  const end = t.status === 'terminated' ? t.updatedAt : new Date().toISOString();
  return {
    id: t.threadId,
    type: 'session_thread',
    agent,
    archived_at: t.archivedAt,
    created_at: t.createdAt,
    parent_thread_id: primaryThreadId(s.id),
    session_id: s.id,
    stats: { duration_seconds: seconds(t.createdAt, end) },
    status: t.status,
    updated_at: t.updatedAt,
    usage: t.usage ? usageOf(t.usage) : null,
    workflow_run_id: null,
  };
}

export function threadRoutes(
  app: ApiApp,
  deps: ApiDeps,
  feeds: SessionFeeds,
  client: Client,
  session: (workspaceId: string, id: string) => Promise<ThreadSession>,
  relay?: StreamRelay,
): void {
  /** The thread, or a 404: the primary thread, or a child from the coordinator's log. */
  async function find(
    workspaceId: string,
    sessionId: string,
    threadId: string,
  ): Promise<{ s: ThreadSession; record?: ThreadRecord }> {
    const s = await session(workspaceId, sessionId);
    if (threadId === primaryThreadId(s.id)) return { s };
    const record = (await feeds.get(s.id)).threads.get(threadId);
    if (!record) throw notFound('session_thread', threadId);
    return { s, record };
  }

  app.get(
    '/v1/sessions/:session_id/threads',
    {
      schema: {
        operationId: 'listSessionThreads',
        params: z.object({ session_id: IdSchema }),
        querystring: ThreadListQuerySchema,
        response: { 200: pageSchema(SessionThreadSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const s = await session(req.workspaceId, req.params.session_id);
      const children = [...(await feeds.get(s.id)).threads.values()].map((t) => childOf(s, t));
      const wanted = q['statuses[]'] && new Set(q['statuses[]']);
      const filters = filterDigest({ statuses: wanted && [...wanted].sort() });
      const before = cursorPos(q.page, filters);
      // Newest first: the primary thread is position 0, each child the next in the order it was created.
      const rows = [primaryOf(s), ...children]
        .map((t, pos) => ({ pos, t }))
        .filter((r) => (!wanted || wanted.has(r.t.status)) && (before === undefined || r.pos < before))
        .reverse()
        .slice(0, q.limit + 1);
      return toPage(rows, q.limit, (r) => r.t, filters);
    },
  );

  app.get(
    '/v1/sessions/:session_id/threads/:thread_id',
    {
      schema: { operationId: 'retrieveSessionThread', params: ThreadPath, response: { 200: SessionThreadSchema } },
    },
    async (req) => {
      const { s, record } = await find(req.workspaceId, req.params.session_id, req.params.thread_id);
      return record ? childOf(s, record) : primaryOf(s);
    },
  );

  app.post(
    '/v1/sessions/:session_id/threads/:thread_id/archive',
    {
      schema: { operationId: 'archiveSessionThread', params: ThreadPath, response: { 200: SessionThreadSchema } },
    },
    async (req) => {
      const { s, record } = await find(req.workspaceId, req.params.session_id, req.params.thread_id);
      if (!record)
        throw badRequest(`thread ${req.params.thread_id} is the session's primary thread; archive the session instead`);
      if (record.archivedAt) return childOf(s, record);
      try {
        await client.workflow
          .getHandle(s.id)
          .executeUpdate(archiveThreadUpdate, { args: [{ threadId: record.threadId }] });
      } catch (e) {
        if (isSessionClosed(e)) throw conflict(`session ${s.id} has ended; its threads ended with it`);
        if (e instanceof WorkflowUpdateFailedError)
          throw badRequest(
            `session ${s.id} refused to archive the thread: ${(e.cause?.message ?? e.message).split('\n')[0]}`,
          );
        throw e;
      }
      const after = (await feeds.get(s.id)).threads.get(record.threadId) ?? record;
      return childOf(s, after);
    },
  );

  app.get(
    '/v1/sessions/:session_id/threads/:thread_id/events',
    { schema: { operationId: 'listSessionThreadEvents', params: ThreadPath, querystring: EventListQuerySchema } },
    async (req) => {
      const { s, record } = await find(req.workspaceId, req.params.session_id, req.params.thread_id);
      return pageOfEvents((await feeds.get(record?.sessionId ?? s.id)).events, req.query);
    },
  );

  app.get(
    '/v1/sessions/:session_id/threads/:thread_id/stream',
    { schema: { operationId: 'streamSessionThreadEvents', params: ThreadPath, querystring: StreamQuerySchema } },
    async (req, reply) => {
      const { s, record } = await find(req.workspaceId, req.params.session_id, req.params.thread_id);
      await streamFeed(req, reply, deps, feeds, s.id, record?.sessionId ?? s.id, relay);
    },
  );
}

/** The child session behind thread `threadId` of session `sessionId`, or a 400 naming the field. */
export async function threadSessionOf(
  feeds: SessionFeeds,
  sessionId: string,
  threadId: string,
  field: string,
): Promise<string> {
  if (threadId === primaryThreadId(sessionId)) return sessionId;
  const record = (await feeds.get(sessionId)).threads.get(threadId);
  if (!record) throw badRequest(`${field}: no thread ${threadId} in session ${sessionId}`);
  return record.sessionId;
}
