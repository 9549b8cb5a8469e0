// Runs setup's steps side by side: each step's lines carry its name, a step that waits on another that failed is
// reported as skipped (naming the one that failed), and the end shows every step's time and the total.
import type { Log } from '../host/run';

export interface StepOutcome {
  name: string;
  status: 'ok' | 'failed' | 'skipped';
  seconds: number;
  /** What the step did (ok), why it failed, or which step it waited on (skipped). */
  detail: string;
}

/** Thrown into the steps that wait on a step that failed. */
export class StepFailed extends Error {
  constructor(readonly step: string) {
    super(`${step} failed`);
  }
}

export class StepRunner {
  private readonly outcomes: StepOutcome[] = [];
  private readonly running = new Map<string, number>();
  private readonly started = Date.now();
  private readonly heartbeat: NodeJS.Timeout;

  /** `out` prints one line; every `heartbeatMs` a line names the steps still running and for how long. */
  constructor(
    private readonly out: Log,
    heartbeatMs = 20_000,
  ) {
    this.heartbeat = setInterval(() => {
      if (this.running.size === 0) return;
      const now = Date.now();
      const list = [...this.running].map(([n, t]) => `${n} ${Math.round((now - t) / 1000)} s`).join(', ');
      this.out(`still running: ${list}`);
    }, heartbeatMs);
    this.heartbeat.unref();
  }

  /**
   * Starts `fn` now, its log lines prefixed with `[name]`; `describe` turns its result into the summary's detail.
   * The promise rejects with {@link StepFailed} when the step fails or is skipped, for the steps that wait on it.
   */
  step<T>(name: string, fn: (log: Log) => Promise<T>, describe: (result: T) => string = () => 'done'): Promise<T> {
    const t0 = Date.now();
    this.running.set(name, t0);
    const log: Log = (m) => this.out(`[${name}] ${m}`);
    const result = (async () => fn(log))().then(
      (value) => {
        const detail = describe(value);
        this.finish({ name, status: 'ok', seconds: (Date.now() - t0) / 1000, detail });
        log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${detail}`);
        return value;
      },
      (err: unknown) => {
        const seconds = (Date.now() - t0) / 1000;
        if (err instanceof StepFailed) {
          this.finish({ name, status: 'skipped', seconds, detail: `needs ${err.step}, which did not succeed` });
          log(`skipped: needs ${err.step}, which did not succeed`);
        } else {
          const detail = (err as Error).message;
          this.finish({ name, status: 'failed', seconds, detail });
          log(`FAILED after ${seconds.toFixed(1)} s: ${detail}`);
        }
        throw new StepFailed(name);
      },
    );
    // A step nobody waits on must not end the process with an unhandled rejection; all() reports it.
    result.catch(() => undefined);
    return result;
  }

  private finish(outcome: StepOutcome): void {
    this.running.delete(outcome.name);
    this.outcomes.push(outcome);
  }

  /** Waits for `steps`, prints each step's time and the total, and returns the outcomes in the order they ended. */
  async all(steps: Promise<unknown>[]): Promise<{ ok: boolean; outcomes: StepOutcome[]; seconds: number }> {
    await Promise.allSettled(steps);
    clearInterval(this.heartbeat);
    const seconds = (Date.now() - this.started) / 1000;
    const width = Math.max(...this.outcomes.map((o) => o.name.length), 4);
    this.out('step times:');
    for (const o of this.outcomes)
      this.out(`  ${o.name.padEnd(width)} ${o.seconds.toFixed(1).padStart(6)} s  ${o.status}: ${o.detail}`);
    const bad = this.outcomes.filter((o) => o.status !== 'ok');
    this.out(
      `total ${seconds.toFixed(1)} s (steps side by side)${bad.length ? `; did not succeed: ${bad.map((o) => `${o.name} (${o.status})`).join(', ')}` : ''}`,
    );
    return { ok: bad.length === 0, outcomes: this.outcomes, seconds };
  }
}
