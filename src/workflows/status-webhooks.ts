// A session's status changes, written to the webhook outbox (src/webhooks/) by an activity on a tools worker. The
// workflow's history is the log of these changes; each one is recorded under an id derived from the session and the
// seq it happened at, so a retried activity, or a replayed workflow, records it once.
import { condition, proxyActivities } from '@temporalio/workflow';
import type { SessionState } from '../session/contract';
import { TOOLS_TASK_QUEUE } from '../session/queues';
import type { SessionStatusEventType, WebhookActivities } from '../webhooks/delivery';

const { recordSessionWebhookEvent } = proxyActivities<WebhookActivities>({
  taskQueue: TOOLS_TASK_QUEUE,
  startToCloseTimeout: '30 seconds',
  // Bounded: a cluster without a tools worker holding the API's database must not hold a session's end for long.
  scheduleToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** The webhook event a change of the session's state is, or none. */
export function statusEventType(state: SessionState): SessionStatusEventType {
  switch (state) {
    case 'running':
      return 'session.status_run_started';
    case 'waiting_for_user':
      return 'session.status_idled';
    case 'requires_action':
      return 'session.requires_action';
    case 'rescheduling':
      return 'session.status_rescheduled';
    case 'ended':
      return 'session.status_terminated';
  }
}

export class StatusWebhooks {
  private published: SessionState;
  private budgetPublished: boolean;
  private pending = 0;

  constructor(
    private readonly sessionId: string,
    private readonly state: () => SessionState,
    private readonly lastSeq: () => number,
    private readonly budgetReached: () => boolean,
    /** The state the webhooks last reported: a new session's is idle, a continued run's its own at start. */
    initial: SessionState,
  ) {
    this.published = initial;
    this.budgetPublished = budgetReached();
  }

  /** Follows the state for the rest of the run. */
  start(): void {
    void (async () => {
      for (;;) {
        await condition(() => this.state() !== this.published);
        this.published = this.state();
        this.send(statusEventType(this.published));
      }
    })();
    void (async () => {
      for (;;) {
        await condition(() => this.budgetReached() !== this.budgetPublished);
        this.budgetPublished = this.budgetReached();
        if (this.budgetPublished) this.send('session.budget_reached');
      }
    })();
  }

  private send(type: SessionStatusEventType): void {
    this.pending++;
    void recordSessionWebhookEvent({ sessionId: this.sessionId, type, key: `${this.lastSeq()}/${type}` })
      .catch(() => undefined)
      .finally(() => this.pending--);
  }

  /** Waits until the current state is reported and every report is written (before a handover or the end). */
  async flush(): Promise<void> {
    await condition(() => this.state() === this.published && this.pending === 0);
  }
}
