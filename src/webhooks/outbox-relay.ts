// The outbox relay: starts one delivery workflow per (event, endpoint) for each event not yet relayed, then marks
// the event relayed. The workflow id is stable, so a relay that starts the same delivery twice (it died before the
// mark, or two tools workers relay at once) starts it once. Nothing but the database holds what is left to relay.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Db } from '../storage/db';
import { endpointsFor, markWebhookEventRelayed, unrelayedWebhookEvents } from '../storage/repos/webhooks-repo';
import { BRAIN_TASK_QUEUE } from '../session/queues';
import type { WebhookDeliveryInput } from './delivery';
import { announceStatusWebhooks } from './status-announce';

export const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDeliveryWorkflow';

/** The delivery workflow's id: one per event and endpoint. */
export const deliveryWorkflowId = (eventId: string, endpointId: string) => `webhook-${eventId}-${endpointId}`;

/** Standard Webhooks' suggested schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_DELAYS_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000];

export interface RelayOptions {
  db: () => Db | undefined;
  client: Client;
  retryDelaysSeconds: number[];
  disableAfter: number;
  log: (msg: string) => void;
  batch?: number;
}

/** One pass over the outbox (and the endpoint changes not yet announced to sessions); returns the events relayed. */
export async function relayWebhookEvents(opts: RelayOptions): Promise<number> {
  const db = opts.db();
  if (!db) return 0;
  await announceStatusWebhooks(db, opts.client);
  const events = await unrelayedWebhookEvents(db, opts.batch ?? 100);
  for (const event of events) {
    for (const endpoint of await endpointsFor(db, event.workspace_id, event.type)) {
      const input: WebhookDeliveryInput = {
        eventId: event.id,
        endpointId: endpoint.id,
        retryDelaysSeconds: opts.retryDelaysSeconds,
        disableAfter: opts.disableAfter,
      };
      try {
        await opts.client.workflow.start(WEBHOOK_DELIVERY_WORKFLOW, {
          taskQueue: BRAIN_TASK_QUEUE,
          workflowId: deliveryWorkflowId(event.id, endpoint.id),
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    }
    await markWebhookEventRelayed(db, event.id);
  }
  return events.length;
}

/** Relays every `intervalMs` (at once again when a pass found a full batch) until stopped. */
export function startWebhookRelay(opts: RelayOptions & { intervalMs: number }): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let failing = false;
  const tick = () => {
    running = relayWebhookEvents(opts)
      .then((n) => {
        if (failing) opts.log('webhook relay: working again');
        failing = false;
        return n;
      })
      .catch((err: Error) => {
        if (!failing) opts.log(`webhook relay failed (retrying): ${err.message.split('\n')[0]}`);
        failing = true;
        return 0;
      })
      .then((n) => {
        if (!stopped) timer = setTimeout(tick, n >= (opts.batch ?? 100) ? 0 : opts.intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
