// A doorbell for a session's log: a long poll on the history of the session's current run (the Temporal
// server's own change notification), ringing after every workflow task that completes, which is the only way an
// event reaches the log. It carries no events: a reader rings, then reads the log. It follows the chain of runs
// across continue-as-new, so a handover is one more ring, and it needs no worker: the server answers it.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const { EventType, HistoryEventFilterType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Counts of the calls this process made to the Temporal server, for the benchmark's cost figure. */
export const doorbellStats = { historyPolls: 0, rings: 0 };

export type Ring = 'changed' | 'ended';

/** A workflow task that completed: what a pushed batch of its events is checked against (src/api/sessions/log-batches.ts). */
export interface CompletedTask {
  runId: string;
  /** Its WorkflowTaskStarted event id. */
  startedEventId: number;
  /** The identity of the worker that completed it. */
  identity: string;
  /** When the server recorded the completion (ms since the epoch, the server's clock). */
  completedAtMs: number;
}

/** The run that follows `e`, when `e` closed its run with a successor (continue-as-new, a retry or a cron run). */
function successorOf(e: HistoryEvent): string | undefined {
  const closed =
    e.workflowExecutionContinuedAsNewEventAttributes ??
    e.workflowExecutionCompletedEventAttributes ??
    e.workflowExecutionFailedEventAttributes ??
    e.workflowExecutionTimedOutEventAttributes;
  return closed?.newExecutionRunId || undefined;
}

const CLOSES = new Set([
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
  EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);

/**
 * Calls `ring('changed', tasks)` after each batch of history that may have appended to the log (a completed
 * workflow task, listed in `tasks`, or the run's close), and `ring('ended')` once the last run has closed; returns
 * then, or when `signal` aborts. Throws what the server throws (a missing workflow, no permission): the caller
 * falls back to polling.
 */
export async function followHistory(
  client: Client,
  sessionId: string,
  ring: (r: Ring, tasks: CompletedTask[]) => void,
  signal: AbortSignal,
): Promise<void> {
  const namespace = client.options.namespace;
  let runId: string | undefined = (await client.workflow.getHandle(sessionId).describe()).runId;
  let nextPageToken: Uint8Array | undefined;
  while (!signal.aborted && runId) {
    doorbellStats.historyPolls++;
    // A signal of its own per call: the connection adds an abort listener per call and never removes it.
    const call = new AbortController();
    const cancel = () => call.abort();
    signal.addEventListener('abort', cancel, { once: true });
    let res;
    try {
      res = await client.connection.withAbortSignal(call.signal, () =>
        client.workflowService.getWorkflowExecutionHistory({
          namespace,
          execution: { workflowId: sessionId, runId },
          nextPageToken,
          waitNewEvent: true,
          skipArchival: true,
          historyEventFilterType: HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
        }),
      );
    } finally {
      signal.removeEventListener('abort', cancel);
    }
    const events = res.history?.events ?? [];
    const close = events.find((e) => e.eventType != null && CLOSES.has(e.eventType));
    const next = close && successorOf(close);
    // A handover sealed everything its run appended; the next run's first completed task rings for it, so the
    // new run is not queried before it has run that task (a query would wait for it, and slow it down).
    const tasks: CompletedTask[] = [];
    for (const e of events) {
      const done =
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
          ? e.workflowTaskCompletedEventAttributes
          : undefined;
      if (done)
        tasks.push({
          runId,
          startedEventId: Number(done.startedEventId ?? 0),
          identity: done.identity ?? '',
          completedAtMs: e.eventTime
            ? Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6)
            : NaN,
        });
    }
    if (!next && (close || tasks.length > 0)) {
      doorbellStats.rings++;
      ring('changed', tasks);
    }
    if (close) {
      runId = next;
      nextPageToken = undefined;
      continue;
    }
    // An empty token after the whole history of a run: the run closed (its close event came in an earlier page).
    if (!res.nextPageToken || res.nextPageToken.length === 0) runId = undefined;
    else nextPageToken = res.nextPageToken;
  }
  if (!signal.aborted) ring('ended', []);
}
