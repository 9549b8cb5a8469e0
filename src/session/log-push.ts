// The push of each workflow task's new events, from the brain worker that ran the task to the API's feeds: a way
// past the `events` query for a reader that follows the tail. The sink the workflow calls, and the frame on the
// wire. The log stays the truth: a feed delivers a pushed batch only once the history holds its task's completion
// by the worker that pushed it, and only where it continues what the feed already holds (src/api/sessions/log-batches.ts).
import type { Sinks } from '@temporalio/workflow';
import { z } from 'zod';
import { SessionEventSchema, type SessionEvent } from './events';
import { shared } from './shared';

export interface SessionLogSinks extends Sinks {
  sessionLog: {
    /** An event the current activation appended (never called on replay). */
    appended(event: SessionEvent): void;
  };
}

/** One workflow task's new events, as a worker's stream endpoint sends them (`GET /v1/sessions/<id>/log`). */
export const LogBatchSchema = shared('log-push.LogBatchSchema', () =>
  z
    .object({
      type: z.literal('batch'),
      runId: z.string().min(1).max(200),
      /** The task's WorkflowTaskStarted event id, which its WorkflowTaskCompleted names as `startedEventId`. */
      task: z.number().int().positive(),
      /** The pushing worker's identity, which its WorkflowTaskCompleted names as `identity`. */
      identity: z.string().min(1).max(1000),
      events: z.array(z.unknown()).min(1).max(10_000),
    })
    .strict(),
);
export type LogBatch = { type: 'batch'; runId: string; task: number; identity: string; events: SessionEvent[] };

/** Whether `b` is a later attempt of the task `a` was pushed for (so it replaces `a`), rather than a continuation. */
export const reattempts = (b: LogBatch, a: LogBatch): boolean =>
  a.runId === b.runId && a.task === b.task && a.identity === b.identity && a.events[0].seq >= b.events[0].seq;

/** The batch with its events checked against the event schema (kept as sent: the query answers the same JSON); undefined if any is not an event. */
export function parseLogBatch(raw: unknown): LogBatch | undefined {
  const b = LogBatchSchema.safeParse(raw);
  if (!b.success) return undefined;
  for (const e of b.data.events) if (!SessionEventSchema.safeParse(e).success) return undefined;
  const events = b.data.events as SessionEvent[];
  for (let i = 1; i < events.length; i++) if (events[i].seq !== events[i - 1].seq + 1) return undefined;
  return { ...b.data, events };
}
