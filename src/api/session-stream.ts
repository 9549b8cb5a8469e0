// GET /v1/sessions/{id}/events/stream: the session's log as Server-Sent Events, in the API's vocabulary.
import { z } from 'zod';
import { readEvents } from '../log/session-log';
import { IdSchema } from './common';
import type { ApiApp, ApiDeps, SessionDeps } from './context';
import { SessionProjector, eventId, type ApiSessionEvent } from './session-events';

const SessionPath = z.object({ session_id: IdSchema });
const STREAM_POLL_MS = 150;
const STREAM_PING_MS = 15_000;

/**
 * Server-Sent Events as the SDK parses them (`event: <type>`, `data: <json>`), carrying durable events from the
 * log: it reads whichever run holds the tail, so it survives any worker's death and any handover. A connection gets
 * the events appended after it opened; a client resumes by listing, as hosted. It ends after the session ends.
 */
export function streamRoute(app: ApiApp, deps: ApiDeps, sessions: SessionDeps, sessionRow: (workspaceId: string, id: string) => Promise<{ id: string }>): void {
  app.get(
    '/v1/sessions/:session_id/events/stream',
    { schema: { operationId: 'streamSessionEvents', params: SessionPath, querystring: z.object({ 'event_deltas[]': z.union([z.string(), z.array(z.string())]).optional() }) } },
    async (req, reply) => {
      const row = await sessionRow(req.workspaceId, req.params.session_id);
      const projector = new SessionProjector(row.id);
      projector.push(await readEvents(sessions.log, row.id, 0));
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'request-id': req.id });
      res.write(': stream open\n\n');
      let open = true;
      res.on('close', () => (open = false));
      let lastPing = Date.now();
      const send = (e: ApiSessionEvent) => res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
      try {
        while (open) {
          const fresh = await readEvents(sessions.log, row.id, projector.seq, 1000);
          const out = projector.push(fresh);
          for (const e of out) send(e);
          if (out.some((e) => e.type === 'session.status_terminated')) break;
          const [gone] = await deps.db.query('select 1 from sessions where id = $1 and deleted_at is not null', [row.id]);
          if (gone) {
            send({ type: 'session.deleted', id: eventId(row.id, projector.seq, 9), processed_at: new Date().toISOString() });
            break;
          }
          if (Date.now() - lastPing > STREAM_PING_MS) {
            res.write('event: ping\ndata: {}\n\n');
            lastPing = Date.now();
          }
          if (fresh.length === 0) await new Promise((r) => setTimeout(r, STREAM_POLL_MS));
        }
      } catch {
        // Headers are gone: the SDK turns an `error` frame into an APIError.
        if (open) res.write(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'the event stream failed; resume by listing' }, request_id: req.id })}\n\n`);
      }
      res.end();
    },
  );
}
