// GET /v1/sessions/{id}/events/stream: the session's log as Server-Sent Events, in the API's vocabulary, resumable
// with Last-Event-ID, and with `event_deltas` previews of model replies for a client that asks for them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { openSse, sseFrame } from '../../http/sse';
import type { StreamRelay } from '../../stream/relay';
import { IdSchema } from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { sessionDeleted } from '../../storage/repos/sessions-repo';
import { badRequest } from '../api-error';
import type { SessionFeed, SessionFeeds } from './feed';
import { eventId, type ApiSessionEvent } from './projection';
import { PreviewMapper, type PreviewEvent } from './previews';

const SessionPath = z.object({ session_id: IdSchema });
const STREAM_PING_MS = 15_000;
const DELTA_TYPES = ['agent.message', 'agent.thinking'] as const;
/** How far back from the feed's end a late preview looks for its buffered event. */
const KNOWN_WINDOW = 200;

export const StreamQuerySchema = z.strictObject({
  'event_deltas[]': z.union([z.enum(DELTA_TYPES), z.array(z.enum(DELTA_TYPES))]).optional(),
});

const frame = (e: ApiSessionEvent) => sseFrame({ id: e.id, event: e.type, data: e });
const previewFrame = (cursor: string, e: PreviewEvent) => sseFrame({ id: cursor, event: e.type, data: e });
const pingFrame = (cursor: string) => sseFrame({ id: cursor, event: 'ping', data: {} });

/**
 * Where a stream starts in the feed's events: after the event `lastEventId` names, or (without one) at the end.
 * The session's own id stands for the start of its log (the cursor of a stream that has sent no event yet).
 */
function startOf(feed: SessionFeed, lastEventId: string | undefined): number {
  if (lastEventId === undefined) return feed.events.length;
  if (lastEventId === feed.sessionId) return 0;
  for (let i = feed.events.length - 1; i >= 0; i--) if (feed.events[i].id === lastEventId) return i + 1;
  throw badRequest(`header Last-Event-ID: no event ${lastEventId.slice(0, 100)} in session ${feed.sessionId}`);
}

/**
 * Server-Sent Events as the SDK parses them (`event: <type>`, `data: <json>`), carrying durable events from the
 * log: every stream of a session shares the session's feed (src/api/sessions/feed.ts), which reads whichever run
 * holds the tail each time the session's history changes, so it survives any worker's death and any handover.
 * Every frame carries `id:`, the id of the last durable event the connection has sent through (the session's id
 * before any), and a reconnect that sends it back as `Last-Event-ID` resumes right after that event. Without it a
 * connection gets the events appended after it opened. It ends after the session ends or is deleted.
 */
export function streamRoute(
  app: ApiApp,
  deps: ApiDeps,
  feeds: SessionFeeds,
  sessionRow: (workspaceId: string, id: string) => Promise<{ id: string }>,
  relay?: StreamRelay,
): void {
  app.get(
    '/v1/sessions/:session_id/events/stream',
    { schema: { operationId: 'streamSessionEvents', params: SessionPath, querystring: StreamQuerySchema } },
    async (req, reply) => {
      const row = await sessionRow(req.workspaceId, req.params.session_id);
      await streamFeed(req, reply, deps, feeds, row.id, row.id, relay);
    },
  );
}

/**
 * Streams feed `feedId` (a session's log, or one of its threads') to one connection; `rowId` is the session whose
 * deletion ends it.
 */
export async function streamFeed(
  req: Pick<FastifyRequest, 'headers' | 'id'> & { query: z.infer<typeof StreamQuerySchema> },
  reply: FastifyReply,
  deps: ApiDeps,
  feeds: SessionFeeds,
  rowId: string,
  feedId: string,
  relay?: StreamRelay,
): Promise<void> {
  const header = req.headers['last-event-id'];
  const lastEventId = typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
  const deltas = new Set([req.query['event_deltas[]'] ?? []].flat());
  if (deltas.size > 0 && !relay)
    throw badRequest(
      'query parameter event_deltas[]: previews need the codec key (CODEC_KEY), which this API process does not have',
    );
  const feed = await feeds.get(feedId);
  // Between here and the subscription nothing else runs: no event can fall between the backlog and the live ones.
  const backlog = feed.events.slice(startOf(feed, lastEventId));
  let cursor =
    backlog.length > 0
      ? backlog[backlog.length - 1].id
      : (lastEventId ?? feed.events[feed.events.length - 1]?.id ?? feedId);
  reply.hijack();
  const res = reply.raw;
  const sse = openSse(res, { headers: { 'request-id': req.id }, greeting: 'stream open' });
  if (backlog.length > 0) sse.write(backlog.map(frame).join(''));
  // An ended session's stream is its backlog (nothing at all without Last-Event-ID).
  if (feed.ended) return void res.end();
  let done!: () => void;
  const closed = Promise.race([sse.closed, new Promise<void>((resolve) => (done = resolve))]);
  const known = (id: string) => {
    for (let i = feed.events.length - 1; i >= Math.max(0, feed.events.length - KNOWN_WINDOW); i--)
      if (feed.events[i].id === id) return true;
    return false;
  };
  const previews = deltas.size > 0 ? new PreviewMapper(feedId, deltas, known) : undefined;
  previews?.durable(backlog);
  const unsubscribe = feed.subscribe((events) => {
    // One write per batch: with many streams of one session, the fan-out is a write per connection.
    sse.write(events.map(frame).join(''));
    cursor = events[events.length - 1].id;
    previews?.durable(events);
    if (events.some((e) => e.type === 'session.status_terminated')) done();
  });
  const unrelay =
    previews && relay
      ? relay.subscribe(feedId, (f) => {
          const out = previews.frame(f);
          if (out.length > 0) sse.write(out.map((e) => previewFrame(cursor, e)).join(''));
        })
      : undefined;
  const ping = setInterval(() => {
    void sessionDeleted(deps.db, rowId).then(
      (gone) => {
        if (gone) {
          sse.write(
            frame({
              type: 'session.deleted',
              id: eventId(feedId, feed.seq, 9),
              processed_at: new Date().toISOString(),
            }),
          );
          done();
        } else sse.write(pingFrame(cursor));
      },
      () => sse.write(pingFrame(cursor)),
    );
  }, STREAM_PING_MS);
  await closed;
  clearInterval(ping);
  unrelay?.();
  unsubscribe();
  res.end();
}
