// The mark a worker puts on a query it refuses because its copy of the run had run ahead of history
// (src/workflows/run-guard.ts). The refusal reaches the client only as a message, so both sides share this text.
import { Failure } from './failure-types';
export const RUN_AHEAD_MARKER = '[run-ahead-of-history]';

/** The failure type of that refusal; its message stays readable (src/codec/failure-converter.ts). */
export const RUN_AHEAD_FAILURE_TYPE = Failure.Session.RunAheadOfHistory;

/** True for a query refused by the run guard: the same query succeeds once the pending workflow task ran. */
export function isRunAheadRefusal(err: unknown): boolean {
  return err instanceof Error && err.message.includes(RUN_AHEAD_MARKER);
}
