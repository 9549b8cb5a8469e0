// Keeps a worker's copy of a session from running ahead of its history.
//
// A query that the server dispatches straight to a worker (no workflow task pending when it arrived) carries
// the history as it stands when a worker polls it, which may end in events no workflow task has processed yet:
// a signal or an activity result that landed meanwhile, typically while the sticky worker is dead and the
// query waits out the sticky timeout. sdk-core applies those events in an activation of their own to answer
// the query, and keeps the run cached in that state. When the real workflow task for those events reaches
// the same worker, the commands of that early activation are sent ahead of the task's own (an update's
// acceptance, say), in an order a replay cannot reproduce: a replay delivers the events and the update in one
// activation. That is `[TMPRL1100] Update machine does not handle this event` on the next replay, and a state
// stamped with a time before the events existed. See docs/design/run-guard.md.
//
// Every real workflow task begins with a WorkflowTaskStarted event, which gives the activation a new history
// size; the early activation has none, so it arrives with the size and time of the activation before it. The
// guard fails such an activation when it carries jobs that only new history events produce. sdk-core then
// evicts the run and reports the query as failed, so the events are applied once, by the task that history
// says processed them, on a run rebuilt from history. Readers retry the refused query (src/log/query-retry.ts).
import type {
  ActivateInput,
  Next,
  WorkflowInterceptorsFactory,
  WorkflowInternalsInterceptor,
} from '@temporalio/workflow';
import { ApplicationFailure } from '@temporalio/workflow';
import { RUN_AHEAD_FAILURE_TYPE, RUN_AHEAD_MARKER } from '../session/run-ahead';

type Job = NonNullable<ActivateInput['activation']['jobs']>[number];

/** Jobs that come only from events appended to history since the last workflow task. Cancellations that
 * sdk-core resolves by itself within a task, and local activity results, are left out. */
function fromNewEvents(job: Job): boolean {
  if (job.signalWorkflow || job.fireTimer || job.cancelWorkflow) return true;
  if (job.resolveActivity) return !job.resolveActivity.isLocal && !job.resolveActivity.result?.cancelled;
  if (job.resolveChildWorkflowExecution) return !job.resolveChildWorkflowExecution.result?.cancelled;
  return false;
}

interface Mark {
  size: string;
  time: string;
}

function markOf(activation: ActivateInput['activation']): Mark {
  const t = activation.timestamp;
  return { size: String(activation.historySizeBytes ?? 0), time: t ? `${String(t.seconds ?? 0)}.${t.nanos ?? 0}` : '' };
}

class RunGuard implements WorkflowInternalsInterceptor {
  private last?: Mark;

  activate(input: ActivateInput, next: Next<WorkflowInternalsInterceptor, 'activate'>): void {
    const { activation, batchIndex } = input;
    const jobs = activation.jobs ?? [];
    // Later batches of one activation share its mark; query-only activations change nothing.
    if (batchIndex === 0 && !jobs.every((j) => j.queryWorkflow)) {
      const mark = markOf(activation);
      const known = mark.size !== '0' && mark.time !== '';
      if (
        known &&
        this.last &&
        mark.size === this.last.size &&
        mark.time === this.last.time &&
        jobs.some(fromNewEvents)
      ) {
        throw ApplicationFailure.retryable(
          `${RUN_AHEAD_MARKER} events after the last workflow task reached this worker outside a task; the run is rebuilt from history`,
          RUN_AHEAD_FAILURE_TYPE,
        );
      }
      this.last = mark;
    }
    next(input);
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ internals: [new RunGuard()] });
