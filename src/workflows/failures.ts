// How a failure from an activity, a child workflow or a signal reads in the log: its type, then its message.
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/workflow';

export function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure || err instanceof ChildWorkflowFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type) return `${cause.type}: ${cause.message}`;
    return cause?.message ?? err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** The failure type behind an activity failure, e.g. `SandboxError.Denied`. */
export function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}
