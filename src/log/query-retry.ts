// Retries a query that a worker refused because its copy of the run had run ahead of history
// (src/workflows/run-guard.ts). The refusal lasts until the pending workflow task runs, at most the sticky
// timeout plus one task, so a reader waits that out instead of seeing an error.
import type { ClientInterceptors, WorkflowClientInterceptor } from '@temporalio/client';
import { isRunAheadRefusal } from '../session/run-ahead';

const ATTEMPTS = 40;
const MAX_DELAY_MS = 500;

export const queryRetryInterceptor: WorkflowClientInterceptor = {
  async query(input, next) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(input);
      } catch (err) {
        if (attempt >= ATTEMPTS || !isRunAheadRefusal(err)) throw err;
        await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, MAX_DELAY_MS)));
      }
    }
  },
};

/** The interceptors every client of sessions uses. */
export const clientInterceptors: ClientInterceptors = { workflow: [queryRetryInterceptor] };
