// The worker's side of the log push: the events each workflow activation appended (the workflow's sessionLog
// sink), grouped per workflow task and kept briefly per session, for the API feeds subscribed to this worker's
// stream endpoint. Nothing here is the truth: a batch counts only once the history holds its task's completion.
import type { WorkflowInfo } from '@temporalio/workflow';
import type { SessionEvent } from '../session/events';
import { reattempts, type LogBatch } from '../session/log-push';
import { SessionSubscribers } from '../stream/subscribers';

/** The batches a session keeps, for the feed that subscribes just after the task it wants. */
const KEEP_BATCHES = 8;
/** Sessions untouched this long are forgotten. */
const KEEP_MS = 60_000;
const MAX_SESSIONS = 4096;
/** A batch bigger than this is not pushed: a feed reads it from the log. */
const MAX_BATCH_CHARS = 1024 * 1024;

interface Kept {
  batches: LogBatch[];
  at: number;
}

export class LogPushHub {
  private readonly kept = new Map<string, Kept>();
  private readonly subscribers = new SessionSubscribers<LogBatch>();
  private pending = new Map<string, LogBatch>();
  private flushing = false;

  /** `identity`: the identity this worker polls with, which the history records on each task it completes. */
  constructor(private readonly identity: string) {}

  /** The sink: one call per appended event; the calls of one activation come together, and are flushed as one batch. */
  appended(info: WorkflowInfo, event: SessionEvent): void {
    const key = `${info.workflowId}\n${info.runId}\n${info.historyLength}`;
    const b = this.pending.get(key) ?? {
      type: 'batch',
      runId: info.runId,
      task: info.historyLength,
      identity: this.identity,
      events: [],
    };
    b.events.push(event);
    this.pending.set(key, b);
    if (!this.flushing) {
      this.flushing = true;
      queueMicrotask(() => this.flush());
    }
  }

  private flush(): void {
    this.flushing = false;
    const batches = this.pending;
    this.pending = new Map();
    const now = Date.now();
    for (const [key, b] of batches) {
      const sessionId = key.slice(0, key.indexOf('\n'));
      if (JSON.stringify(b.events).length > MAX_BATCH_CHARS) continue;
      const kept = this.kept.get(sessionId) ?? { batches: [], at: now };
      this.kept.delete(sessionId);
      kept.at = now;
      // A task run again (its first attempt failed) replaces what that attempt pushed.
      kept.batches = kept.batches.filter((k) => !reattempts(b, k));
      kept.batches.push(b);
      if (kept.batches.length > KEEP_BATCHES) kept.batches.shift();
      this.kept.set(sessionId, kept);
      this.subscribers.emit(sessionId, b);
    }
    for (const [id, k] of this.kept) {
      if (this.kept.size <= MAX_SESSIONS && now - k.at < KEEP_MS) break;
      this.kept.delete(id);
    }
  }

  /** Calls `fn` with the session's kept batches, then with each new one; returns the unsubscribe. */
  subscribe(sessionId: string, fn: (b: LogBatch) => void): () => void {
    for (const b of this.kept.get(sessionId)?.batches ?? []) fn(b);
    return this.subscribers.add(sessionId, fn);
  }
}
