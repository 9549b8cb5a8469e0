// A session's status changes, written to the webhook outbox (src/webhooks/). The workflow's history is the log of these
// changes; each one starts a small child workflow (abandoned when the session closes, its id derived from the session,
// the seq and the type) that writes the event through an activity on a tools worker. The session waits only for the
// child to start, a round trip to the server, never for a tools worker: one that is down or absent delays the event,
// not the session, and the event is written once it is back. The event id derives from the same key, so a retried
// activity records it once. A session whose workspace has no endpoint for these events starts no children at all:
// the API says so in the input (`statusWebhooks`) and signals each open session when its endpoints change.
import { ParentClosePolicy, condition, patched, proxyActivities, startChild } from '@temporalio/workflow';
import type { SessionState, StatusWebhooks as StatusWebhooksWord } from '../session/contract';
import { TOOLS_TASK_QUEUE } from '../session/queues';
import type { SessionStatusEventType, SessionWebhookEventInput, WebhookActivities } from '../webhooks/delivery';

const { recordSessionWebhookEvent } = proxyActivities<WebhookActivities>({
  taskQueue: TOOLS_TASK_QUEUE,
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Writes one session status event to the outbox. */
export async function sessionWebhookEventWorkflow(input: SessionWebhookEventInput): Promise<void> {
  await recordSessionWebhookEvent(input);
}

/** The webhook event a change of the session's state is. */
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

/** The child's id: one per session, seq and type. Session purges leave these out of a session's children. */
export const statusEventWorkflowId = (sessionId: string, seq: number, type: SessionStatusEventType) =>
  `webhook-status-${sessionId}-${seq}-${type}`;

export class StatusWebhooks {
  private published: SessionState;
  private budgetPublished: boolean;
  private starting = 0;
  /** Set once the run ends: its last report is made, and nothing more is. */
  private closed = false;
  /**
   * Whether changes go to the outbox, as the API last said; undefined until it has said anything this run or an
   * earlier one carried (then every change does, as in runs from before the API said). Changes of state are followed
   * either way, so a session told to report starts with its next change, not a backlog.
   */
  private wanted: StatusWebhooksWord | undefined;

  constructor(
    private readonly sessionId: string,
    private readonly state: () => SessionState,
    private readonly lastSeq: () => number,
    private readonly budgetReached: () => boolean,
    /** The state the webhooks last reported: a new session's is idle, a continued run's its own at start. */
    initial: SessionState,
    /** What the API said at the start (the input), or what the last run carried. */
    wanted: StatusWebhooksWord | undefined,
  ) {
    this.published = initial;
    this.budgetPublished = budgetReached();
    // Only a `false` changes what the run does from its start; runs recorded before the API said ask no patch.
    if (wanted && (wanted.on || patched('webhook-gate'))) this.wanted = wanted;
  }

  /** The API's newer word (`statusWebhooksSignal`); an older one, overtaken in flight, is dropped. */
  tell(word: StatusWebhooksWord): void {
    if (this.wanted && word.at < this.wanted.at) return;
    if (patched('webhook-gate')) this.wanted = word;
  }

  /** What the next run starts from. */
  carry(): StatusWebhooksWord | undefined {
    return this.wanted;
  }

  /** Follows the state for the rest of the run. */
  start(): void {
    void (async () => {
      for (;;) {
        await condition(() => !this.closed && this.state() !== this.published);
        this.published = this.state();
        this.send(statusEventType(this.published));
      }
    })();
    void (async () => {
      for (;;) {
        await condition(() => !this.closed && this.budgetReached() !== this.budgetPublished);
        this.budgetPublished = this.budgetReached();
        if (this.budgetPublished) this.send('session.budget_reached');
      }
    })();
  }

  private send(type: SessionStatusEventType): void {
    if (this.wanted?.on === false) return;
    const seq = this.lastSeq();
    this.starting++;
    void startChild(sessionWebhookEventWorkflow, {
      workflowId: statusEventWorkflowId(this.sessionId, seq, type),
      args: [{ sessionId: this.sessionId, type, key: `${seq}/${type}` }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      // A cluster with no tools worker on the API's database never writes it; the child gives up after a day.
      workflowExecutionTimeout: '1 day',
    })
      .catch(() => undefined)
      .finally(() => this.starting--);
  }

  /** Waits until the current state is reported and each report's child has started (before a handover). */
  async flush(): Promise<void> {
    await condition(() => this.state() === this.published && this.starting === 0);
  }

  /**
   * The session is ending: reports `session.status_terminated` and waits for its child to start, before the run's end
   * appends session_ended and completes, so the workflow closes as soon as its end is in the log.
   */
  async end(): Promise<void> {
    this.closed = true;
    if (this.published !== 'ended') this.send('session.status_terminated');
    await condition(() => this.starting === 0);
  }
}
