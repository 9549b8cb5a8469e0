// The API feed's side of the log push (src/session/log-push.ts): a subscription to the log batches of the brain
// worker that runs a session, and the check that decides whether the batches of the tasks the history says
// completed can stand in for reading the log. They can only when each batch was pushed by the worker that
// completed its task, and together they continue the feed's log exactly where it stands; otherwise the feed
// reads the log as before. So nothing is delivered that the log does not hold, in another order, or twice.
import type http from 'node:http';
import type { CompletedTask } from '../../log/history-doorbell';
import type { SessionEvent } from '../../session/events';
import { parseLogBatch, reattempts, type LogBatch } from '../../session/log-push';
import { openFrameStream } from '../../stream/frames';
import { streamToken } from '../../stream/token';

/** Batches a feed keeps (a worker sends a session's last few when a feed subscribes). */
const KEEP = 32;
/** A worker whose log endpoint failed is not tried again before this. */
const RETRY_MS = 2000;

export type PushedBatch = LogBatch;

/**
 * The events the completed `tasks` appended after `fromSeq - 1`, from `batches`, or undefined if the batches
 * cannot prove it. A task with no batch appended nothing only if a later task's batch starts where the log stands;
 * so a task without a batch at the end of `tasks` leaves the answer to the log (unless it is all there is).
 */
export function pushedEvents(
  batches: readonly PushedBatch[],
  tasks: readonly CompletedTask[],
  fromSeq: number,
): SessionEvent[] | undefined {
  const out: SessionEvent[] = [];
  let next = fromSeq;
  let unproven = false;
  for (const t of tasks) {
    // The worker that completed the task, by the identity the history records; the latest of its attempts.
    const b = [...batches]
      .reverse()
      .find((x) => x.runId === t.runId && x.task === t.startedEventId && x.identity === t.identity);
    if (!b) {
      unproven = true;
      continue;
    }
    const first = b.events[0].seq;
    const last = b.events[b.events.length - 1].seq;
    if (last < next) {
      unproven = false;
      continue;
    }
    if (first > next) return undefined;
    for (const e of b.events) if (e.seq >= next) out.push(e);
    next = last + 1;
    unproven = false;
  }
  return unproven ? undefined : out;
}

export class PushedLog {
  readonly batches: PushedBatch[] = [];
  private sub?: { url: string; req: http.ClientRequest; open: boolean };
  private readonly failed = new Map<string, number>();
  private waiters: Array<() => void> = [];

  constructor(
    private readonly sessionId: string,
    private readonly key: Buffer,
  ) {}

  /** True while subscribed to `url`'s log endpoint. */
  following(url: string): boolean {
    return this.sub?.url === url && this.sub.open;
  }

  /** Subscribes to the log batches of the worker at `url` (the one completing the session's tasks), dropping any other. */
  follow(url: string): void {
    if (this.sub?.url === url || Date.now() - (this.failed.get(url) ?? 0) < RETRY_MS) return;
    this.sub?.req.destroy();
    const sub = { url, req: undefined as unknown as http.ClientRequest, open: true };
    sub.req = openFrameStream<LogBatch>(
      new URL(`/v1/sessions/${encodeURIComponent(this.sessionId)}/log`, url),
      { authorization: `Bearer ${streamToken(this.key, this.sessionId)}` },
      (b) => {
        for (let i = this.batches.length - 1; i >= 0; i--)
          if (reattempts(b, this.batches[i])) this.batches.splice(i, 1);
        this.batches.push(b);
        if (this.batches.length > KEEP) this.batches.shift();
        for (const w of this.waiters.splice(0)) w();
      },
      () => {
        sub.open = false;
        if (this.sub !== sub) return;
        this.sub = undefined;
        this.failed.set(url, Date.now());
      },
      parseLogBatch,
    );
    this.sub = sub;
  }

  /** Resolves at the next batch, or after `ms`. */
  nextBatch(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Forgets batches wholly before `seq`. */
  prune(seq: number): void {
    for (let i = this.batches.length - 1; i >= 0; i--) {
      const b = this.batches[i];
      if (b.events[b.events.length - 1].seq < seq) this.batches.splice(i, 1);
    }
  }

  close(): void {
    this.sub?.req.destroy();
    this.sub = undefined;
    for (const w of this.waiters.splice(0)) w();
  }
}
