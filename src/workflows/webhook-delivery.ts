// webhookDeliveryWorkflow: delivers one event to one endpoint, at least once. Each attempt is an activity on a tools
// worker (signed, sent through the egress gate, recorded); a failed one is tried again after the input's delays,
// durable timers that outlive any worker. A refusal by the gate, a disabled or removed endpoint end it at once.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities, WebhookDeliveryInput, WebhookDeliveryResult } from '../webhooks/delivery';
import { TOOLS_TASK_QUEUE } from '../session/queues';

const { deliverWebhook } = proxyActivities<WebhookActivities>({
  taskQueue: TOOLS_TASK_QUEUE,
  // The POST's own limit is 15 s; the rest is the database and the signature.
  startToCloseTimeout: '1 minute',
  // These retries are for the worker's own faults (its database unreachable, the worker gone); an endpoint's
  // failures are answers, retried by the loop below.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const { eventId, endpointId, retryDelaysSeconds, disableAfter } = input;
  for (let attempt = 1; ; attempt++) {
    const { outcome } = await deliverWebhook({ eventId, endpointId, attempt, disableAfter });
    if (outcome !== 'failed' || attempt > retryDelaysSeconds.length) return { outcome, attempts: attempt };
    await sleep(retryDelaysSeconds[attempt - 1] * 1000);
  }
}
