// Runs the `agents` command line as a child process, as a user would.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './env';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runAgents(address: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runNode(path.join(ROOT, 'dist/client.js'), args, { TEMPORAL_ADDRESS: address, ...env });
}

/** Runs a script with this node, as a user would run it, and collects what it printed. */
export function runNode(script: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Asserts a failed run: non-zero exit, nothing on stdout, one line on stderr matching `pattern`. */
export function expectOneLineError(r: Run, pattern: RegExp) {
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}

export interface Line {
  /** When this process read the line (ms since the epoch). */
  at: number;
  text: string;
}

export interface LiveRun {
  lines: Line[];
  stderr(): string;
  /** Resolves with the first line matching `pred`, failing with the output so far after `timeoutMs`. */
  waitFor(pred: (l: Line) => boolean, timeoutMs?: number): Promise<Line>;
  /** Resolves with the exit code. */
  done: Promise<number | null>;
  kill(): Promise<void>;
}

const running = new Set<import('node:child_process').ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/** Runs `agents ARGS` and records each stdout line with the time it arrived, for commands that keep running. */
export function spawnAgents(address: string, args: string[], env: Record<string, string> = {}): LiveRun {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: address, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const lines: Line[] = [];
  let partial = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (d: Buffer) => {
    const at = Date.now();
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    for (const text of parts) lines.push({ at, text });
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      running.delete(child);
      for (const w of waiters.splice(0)) w();
      resolve(code);
    }),
  );
  const waitFor = async (pred: (l: Line) => boolean, timeoutMs = 60_000): Promise<Line> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = lines.find(pred);
      if (hit) return hit;
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(
          `no such line (exit ${child.exitCode}); stdout:\n${lines.map((l) => l.text).join('\n')}\nstderr:\n${stderr}`,
        );
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 200);
      });
    }
  };
  return {
    lines,
    stderr: () => stderr,
    waitFor,
    done,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await done;
    },
  };
}
