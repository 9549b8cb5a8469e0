// GET /v1/platform/webhooks: the platform's own read-only route (no SDK method; docs/api.md) behind the console's
// webhooks page: the key's workspace's endpoints, each with its recent delivery attempts. Never a signing secret.
// Endpoints are registered and changed with `agents webhooks` (src/cli/webhook-commands.ts).
import { z } from 'zod';
import { listEndpoints, recentAttempts } from '../webhooks/endpoints';
import type { ApiApp, ApiDeps } from './route-context';

/** Attempts shown per endpoint. */
const RECENT = 20;

const AttemptSchema = z.object({
  event_id: z.string(),
  event_type: z.string(),
  attempt: z.number(),
  at: z.string(),
  outcome: z.enum(['delivered', 'failed', 'refused']),
  status_code: z.number().nullable(),
  error: z.string().nullable(),
});

const EndpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  event_types: z.array(z.string()).nullable(),
  disabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  consecutive_failures: z.number(),
  created_at: z.string(),
  recent_attempts: z.array(AttemptSchema),
});

export function webhookEndpointRoutes(app: ApiApp, deps: Pick<ApiDeps, 'db'>): void {
  app.get(
    '/v1/platform/webhooks',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        querystring: z.strictObject({}),
        response: { 200: z.object({ data: z.array(EndpointSchema) }) },
      },
    },
    async (req) => {
      const endpoints = await listEndpoints(deps.db, req.workspaceId);
      return {
        data: await Promise.all(
          endpoints.map(async ({ workspace_id: _, ...e }) => ({
            ...e,
            recent_attempts: await recentAttempts(deps.db, e.id, RECENT),
          })),
        ),
      };
    },
  );
}
