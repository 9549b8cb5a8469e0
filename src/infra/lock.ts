// A lock across processes, held by a live pid: setup and a test suite may both want the engine or the image.
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
export async function withLock<T>(name: string, log: Log, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(os.tmpdir(), `managed-agents-${name}.lock`);
  const mine = `${lock}.${process.pid}`;
  fs.writeFileSync(mine, String(process.pid));
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
      if (!announced) log(`waiting for process ${holder}, which holds ${lock}`);
      announced = true;
      await sleep(500);
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
