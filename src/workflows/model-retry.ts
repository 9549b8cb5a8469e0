// Model calls whose transient failures the workflow sees: the session reads `rescheduling` while a retry waits.
//
// The call's retry policy treats the model API's transient errors (429, 529, 5xx, a dropped or stalled stream) as
// not retryable, so each comes back to the workflow at once. The workflow logs model_retry_scheduled, waits on a
// timer (the server's retry-after, else the policy's backoff), logs model_retry_started and calls again. A call
// lost with its worker (a heartbeat or start-to-close timeout) is still retried by Temporal, unseen.
import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, sleep } from '@temporalio/workflow';
import type { Agent } from '../session/agent';
import { Failure } from '../session/failure-types';
import type { SessionRun } from './session-run';

/** The failure types (src/model/errors.ts) of a model call that a later attempt may well not meet. */
export const TRANSIENT_MODEL_FAILURES: readonly string[] = [
  Failure.Model.RateLimited,
  Failure.Model.Overloaded,
  Failure.Model.Server,
  Failure.Model.Connection,
  Failure.Model.Stream,
  Failure.Model.Timeout,
  'ModelError.Status408',
  'ModelError.Status409',
];

/** How much of a failure's message the log keeps. */
const MAX_MESSAGE_CHARS = 500;

/** The transient failure behind `err`, with the server's retry-after when it sent one; undefined for any other. */
export function transientFailure(err: unknown): { type: string; message: string; retryAfterMs?: number } | undefined {
  if (!(err instanceof ActivityFailure)) return undefined;
  const cause = err.cause;
  if (
    !(cause instanceof ApplicationFailure) ||
    cause.nonRetryable ||
    !cause.type ||
    !TRANSIENT_MODEL_FAILURES.includes(cause.type)
  )
    return undefined;
  const detail = cause.details?.[0] as { retryAfterMs?: unknown } | undefined;
  const retryAfterMs =
    typeof detail?.retryAfterMs === 'number' && Number.isFinite(detail.retryAfterMs)
      ? Math.max(0, detail.retryAfterMs)
      : undefined;
  return {
    type: cause.type,
    message: cause.message.slice(0, MAX_MESSAGE_CHARS),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** The policy's wait after failed attempt `attempt` (1 for the first), as Temporal's backoff computes it. */
export function backoffMs(policy: Agent['limits']['modelRetry'], attempt: number): number {
  return Math.min(policy.initialIntervalMs * policy.backoffCoefficient ** (attempt - 1), policy.maximumIntervalMs);
}

/**
 * A local call (callModel) that fails with one of its policy's non-retryable types comes back as the activity's own
 * ApplicationFailure, not wrapped: wrapped here, it reads (and is logged by the turn) as any activity's failure.
 */
function asActivityFailure(err: unknown): unknown {
  if (!(err instanceof ApplicationFailure)) return err;
  return new ActivityFailure(err.message, 'callModel', undefined, RetryState.NON_RETRYABLE_FAILURE, undefined, err);
}

/**
 * Runs `call` until it returns, fails with anything but a transient failure, or has failed
 * `policy.maxAttempts` times; each retry is logged and waited for in `rescheduling`.
 */
export async function withLoggedRetries<T>(
  call: () => Promise<T>,
  run: SessionRun,
  policy: Agent['limits']['modelRetry'],
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (raw) {
      const err = asActivityFailure(raw);
      const failure = transientFailure(err);
      if (!failure || attempt >= policy.maxAttempts) throw err;
      const waitMs = Math.max(1, Math.round(failure.retryAfterMs ?? backoffMs(policy, attempt)));
      run.append({
        type: 'model_retry_scheduled',
        attempt,
        error: { type: failure.type, message: failure.message },
        retryAt: new Date(Date.now() + waitMs).toISOString(),
      });
      // An interrupt or the end cuts the wait.
      await run.rescheduled(() => sleep(waitMs));
      run.append({ type: 'model_retry_started', attempt: attempt + 1 });
    }
  }
}
