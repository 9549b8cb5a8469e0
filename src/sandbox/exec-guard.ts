// Bounds an exec's wait on the engine: a command's exec must end within its own timeout and a grace, a cancelled
// one soon after its kill, and an exec the engine reports ended must close its output stream soon after. An
// engine that breaks any of these (a request it never answers, a stream it never closes) fails the attempt
// instead of holding it, and its worker's shutdown, forever; the exec wrapper's run-once record makes the retry
// read the command's result rather than run it again.
import type Docker from 'dockerode';

/** Past the command's timeout: the wrapper TERMs its group at the timeout and KILLs it 5 s later. */
export const EXEC_DEADLINE_GRACE_MS = 20_000;
/** How long an exec's output stream may stay open after its process ended, or after a cancel's kill. */
export const EXEC_END_GRACE_MS = 10_000;
/** How often an exec still running is asked whether it ended, from this long after it started. */
const EXEC_INSPECT_EVERY_MS = 2_000;

export class ExecStalledError extends Error {}

export interface ExecGuard {
  /** Rejects with ExecStalledError (or the abort's reason) once the exec broke one of the bounds. */
  readonly failed: Promise<never>;
  /** Watches the exec from now on: one that ended while its stream stays open fails after EXEC_END_GRACE_MS. */
  watch(exec: Pick<Docker.Exec, 'inspect'>): void;
  stop(): void;
}

export function execGuard(timeoutSeconds: number, signal: AbortSignal | undefined, kill: () => void): ExecGuard {
  const timers: NodeJS.Timeout[] = [];
  let stopped = false;
  let fail!: (err: Error) => void;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined);
  const deadlineMs = timeoutSeconds * 1000 + EXEC_DEADLINE_GRACE_MS;
  timers.push(
    setTimeout(
      () => fail(new ExecStalledError(`the engine did not end the exec within ${Math.round(deadlineMs / 1000)} s`)),
      deadlineMs,
    ),
  );
  const onAbort = () => {
    kill();
    timers.push(setTimeout(() => fail(signal?.reason ?? new Error('cancelled')), EXEC_END_GRACE_MS));
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    failed,
    watch(exec) {
      let endedAt: number | undefined;
      timers.push(
        setInterval(() => {
          void exec.inspect().then(
            (info) => {
              if (stopped || info.Running) return;
              endedAt ??= Date.now();
              if (Date.now() - endedAt >= EXEC_END_GRACE_MS)
                fail(
                  new ExecStalledError(`the command ended (exit ${info.ExitCode}) but its output stream stayed open`),
                );
            },
            () => undefined,
          );
        }, EXEC_INSPECT_EVERY_MS),
      );
    },
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}
