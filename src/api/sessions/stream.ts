// GET /v1/sessions/{id}/stream: the live previews of a session (model tokens, tool output) relayed from the
// workers producing them (src/stream/relay.ts), in the frames `agents watch` reads from a worker directly. Behind
// the API key like every /v1 route: a session of another workspace is a 404. Nothing here is durable.
import { z } from 'zod';
import { openSse } from '../../http/sse';
import type { StreamRelay } from '../../stream/relay';
import { IdSchema } from '../shared-fields';
import type { ApiApp } from '../route-context';

const SessionPath = z.object({ session_id: IdSchema });
const KEEPALIVE_MS = 15_000;

export function liveRoute(
  app: ApiApp,
  relay: StreamRelay,
  sessionRow: (workspaceId: string, id: string) => Promise<{ id: string }>,
): void {
  app.get(
    '/v1/sessions/:session_id/stream',
    { schema: { operationId: 'streamSessionPreviews', params: SessionPath } },
    async (req, reply) => {
      const row = await sessionRow(req.workspaceId, req.params.session_id);
      reply.hijack();
      const sse = openSse(reply.raw, {
        headers: { 'request-id': req.id },
        greeting: 'stream open',
        keepaliveMs: KEEPALIVE_MS,
      });
      const unsubscribe = relay.subscribe(row.id, (frame) => sse.send({ data: frame }));
      void sse.closed.then(unsubscribe);
    },
  );
}
