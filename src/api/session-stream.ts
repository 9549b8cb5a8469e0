// GET /v1/sessions/{id}/events/stream: the session's log as Server-Sent Events, in the API's vocabulary.
import { z } from 'zod';
import { IdSchema } from './common';
import type { ApiApp, ApiDeps } from './context';
import type { SessionFeeds } from './session-feed';
import { eventId, type ApiSessionEvent } from './session-events';

const SessionPath = z.object({ session_id: IdSchema });
const STREAM_PING_MS = 15_000;

const frame = (e: ApiSessionEvent) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

/**
 * Server-Sent Events as the SDK parses them (`event: <type>`, `data: <json>`), carrying durable events from the
 * log: every stream of a session shares the session's feed (src/api/session-feed.ts), which reads whichever run
 * holds the tail each time the session's history changes, so it survives any worker's death and any handover.
 * A connection gets the events appended after it opened; a client resumes by listing, as hosted. It ends after
 * the session ends or is deleted.
 */
export function streamRoute(app: ApiApp, deps: ApiDeps, feeds: SessionFeeds, sessionRow: (workspaceId: string, id: string) => Promise<{ id: string }>): void {
  app.get(
    '/v1/sessions/:session_id/events/stream',
    { schema: { operationId: 'streamSessionEvents', params: SessionPath, querystring: z.object({ 'event_deltas[]': z.union([z.string(), z.array(z.string())]).optional() }) } },
    async (req, reply) => {
      const row = await sessionRow(req.workspaceId, req.params.session_id);
      const feed = await feeds.get(row.id);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'request-id': req.id });
      res.write(': stream open\n\n');
      if (feed.ended) return void res.end();
      let done!: () => void;
      const closed = new Promise<void>((resolve) => (done = resolve));
      res.on('close', done);
      const unsubscribe = feed.subscribe((events) => {
        // One write per batch: with many streams of one session, the fan-out is a write per connection.
        res.write(events.map(frame).join(''));
        if (events.some((e) => e.type === 'session.status_terminated')) done();
      });
      const ping = setInterval(() => {
        void deps.db.query('select 1 from sessions where id = $1 and deleted_at is not null', [row.id]).then(
          ([gone]) => {
            if (gone) {
              res.write(frame({ type: 'session.deleted', id: eventId(row.id, feed.seq, 9), processed_at: new Date().toISOString() }));
              done();
            } else res.write('event: ping\ndata: {}\n\n');
          },
          () => res.write('event: ping\ndata: {}\n\n'),
        );
      }, STREAM_PING_MS);
      await closed;
      clearInterval(ping);
      unsubscribe();
      res.end();
    },
  );
}
