// GET /v1/sessions/{id}/events: the session's API events, filtered by type and time, in either order. A cursor names
// the event a page continues after by its place in the session's projected log (which only grows) and checks it by
// the event's id, so events appended between pages are neither repeated nor skipped, whichever the order.
import { z } from 'zod';
import type { BetaManagedAgentsSessionEventType } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import {
  IdSchema,
  PageQuerySchema,
  TimeQuerySchema,
  decodeCursor,
  repeated,
  encodeCursor,
  filterDigest,
  type Cursor,
} from '../shared-fields';
import type { ApiApp } from '../route-context';
import { badRequest } from '../api-error';
import type { SessionFeeds } from './feed';
import type { ApiSessionEvent } from './projection';

/** Every event type of the SDK's union, checked against it both ways so the list cannot drift from the SDK. */
const SDK_EVENT_TYPES = [
  'user.message',
  'user.interrupt',
  'user.tool_confirmation',
  'user.custom_tool_result',
  'agent.custom_tool_use',
  'agent.message',
  'agent.thinking',
  'agent.mcp_tool_use',
  'agent.mcp_tool_result',
  'agent.tool_use',
  'agent.tool_result',
  'agent.thread_message_received',
  'agent.thread_message_sent',
  'agent.thread_context_compacted',
  'session.error',
  'session.status_rescheduled',
  'session.status_running',
  'session.status_idle',
  'session.status_terminated',
  'session.thread_created',
  'span.outcome_evaluation_start',
  'span.outcome_evaluation_end',
  'span.model_request_start',
  'span.model_request_end',
  'span.outcome_evaluation_ongoing',
  'user.define_outcome',
  'session.thread_status_running',
  'session.thread_status_idle',
  'session.thread_status_terminated',
  'user.tool_result',
  'session.thread_status_rescheduled',
  'session.updated',
  'system.message',
  'session.usage',
  'workflow_run.created',
  'workflow_run.status_running',
  'workflow_run.status_idle',
  'workflow_run.status_ended',
  'workflow_run.error',
  'workflow_run.phase_started',
  'workflow_run.phase_ended',
] as const satisfies readonly BetaManagedAgentsSessionEventType[];
type Missing = Exclude<BetaManagedAgentsSessionEventType, (typeof SDK_EVENT_TYPES)[number]>;
const everySdkType: [Missing] extends [never] ? true : Missing = true;
void everySdkType;

const KNOWN = new Set<string>(SDK_EVENT_TYPES);
/** The SDK's types, and the platform's own `platform.*` events. */
const EventTypeSchema = z.string().refine((t) => KNOWN.has(t) || /^platform\.[a-z_]{1,64}$/.test(t), {
  error: (i) => `${String(i.input).slice(0, 80)} is not an event type`,
});

export const EventListQuerySchema = PageQuerySchema.extend({
  limit: z.coerce
    .number({ error: 'limit must be an integer' })
    .int('limit must be an integer')
    .min(1, 'limit must be at least 1')
    .max(1000, 'limit must be at most 1000')
    .default(1000),
  order: z.enum(['asc', 'desc'], { error: 'must be asc or desc' }).default('asc'),
  'types[]': repeated(EventTypeSchema, 100).optional(),
  'created_at[gt]': TimeQuerySchema.optional(),
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lt]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
});

const ms = (t: string | undefined) => (t === undefined ? undefined : Date.parse(t));

/** Where the cursor's event is in `events`: at its key, or (should the projection have moved it) wherever its id is. */
function locate(events: readonly ApiSessionEvent[], c: Cursor): number {
  if (c.id === undefined) throw badRequest('page is not a cursor this API returned');
  if (events[c.key]?.id === c.id) return c.key;
  const at = events.findIndex((e) => e.id === c.id);
  if (at < 0) throw badRequest('page is not a cursor this API returned for this session');
  return at;
}

export function eventListRoute(
  app: ApiApp,
  feeds: SessionFeeds,
  session: (workspaceId: string, id: string) => Promise<{ id: string }>,
): void {
  app.get(
    '/v1/sessions/:session_id/events',
    {
      schema: {
        operationId: 'listSessionEvents',
        params: z.object({ session_id: IdSchema }),
        querystring: EventListQuerySchema,
      },
    },
    async (req) => {
      const row = await session(req.workspaceId, req.params.session_id);
      return pageOfEvents((await feeds.get(row.id)).events, req.query);
    },
  );
}

/** One page of `events` (a session's projected log, or a thread's) as the query asks. */
export function pageOfEvents(events: readonly ApiSessionEvent[], q: z.infer<typeof EventListQuerySchema>) {
  const wanted = q['types[]'] === undefined ? undefined : new Set(q['types[]']);
  const [gt, gte, lt, lte] = [
    ms(q['created_at[gt]']),
    ms(q['created_at[gte]']),
    ms(q['created_at[lt]']),
    ms(q['created_at[lte]']),
  ];
  const timed = gt !== undefined || gte !== undefined || lt !== undefined || lte !== undefined;
  const matches = (e: ApiSessionEvent) => {
    if (wanted && !wanted.has(e.type)) return false;
    if (!timed) return true;
    const at = e.processed_at ? Date.parse(e.processed_at) : NaN;
    if (Number.isNaN(at)) return false;
    return (
      (gt === undefined || at > gt) &&
      (gte === undefined || at >= gte) &&
      (lt === undefined || at < lt) &&
      (lte === undefined || at <= lte)
    );
  };
  const filters = filterDigest({ types: wanted && [...wanted].sort(), gt, gte, lt, lte });
  const cursor = decodeCursor(q.page, q.order, filters);
  if (cursor?.back) throw badRequest('page is not a cursor this API returned');
  const step = q.order === 'asc' ? 1 : -1;
  let i = cursor ? locate(events, cursor) + step : q.order === 'asc' ? 0 : events.length - 1;
  const data: ApiSessionEvent[] = [];
  let last = -1;
  let more = false;
  for (; i >= 0 && i < events.length; i += step) {
    if (!matches(events[i])) continue;
    if (data.length === q.limit) {
      more = true;
      break;
    }
    data.push(events[i]);
    last = i;
  }
  return {
    data,
    next_page: more ? encodeCursor({ key: last, back: false, id: events[last].id }, q.order, filters) : null,
  };
}
