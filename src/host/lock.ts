// A lock across processes, held by a live pid: setup and a test suite may both want the engine or the image.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Log } from './run';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether `pid` runs and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A zombie still takes signal 0 until its parent reaps it, which can take a while when that parent is init.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** Serialises work across processes (setup and a test suite may both want the engine or the image). */
export function withLock<T>(name: string, log: Log, fn: () => Promise<T>): Promise<T> {
  return withLockFile(path.join(os.tmpdir(), `managed-agents-${name}.lock`), fn, { log, pollMs: 500 });
}

/**
 * Runs `fn` holding the lock file `lock` (its directory must exist): one process at a time, and a lock whose
 * holder died is taken over. `log` hears once that we wait, and for whom.
 */
export async function withLockFile<T>(
  lock: string,
  fn: () => Promise<T>,
  opts: { log?: Log; pollMs?: number } = {},
): Promise<T> {
  // One name per call: several holders-to-be in one process must not share (or remove) each other's file.
  const mine = `${lock}.${process.pid}.${randomUUID()}`;
  fs.writeFileSync(mine, String(process.pid), { mode: 0o600 });
  let announced = false;
  try {
    for (;;) {
      try {
        // link() is atomic and fails if the lock exists, and the lock already carries our pid when it appears.
        fs.linkSync(mine, lock);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let holder = 0;
      try {
        holder = Number(fs.readFileSync(lock, 'utf8').trim());
      } catch {
        continue; // released between our link() and this read
      }
      if (!holder || !isAlive(holder)) {
        fs.rmSync(lock, { force: true });
        continue;
      }
      if (!announced) opts.log?.(`waiting for process ${holder}, which holds ${lock}`);
      announced = true;
      await sleep(opts.pollMs ?? 20);
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}
