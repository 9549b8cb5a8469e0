// Runs `agents worker` as a child process, so tests can SIGKILL it like a crashed machine.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './env';

export interface ChildWorker {
  process: ChildProcess;
  stderr(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export async function spawnWorker(env: Record<string, string>, role = 'brain'): Promise<ChildWorker> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'worker', '--role', role], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready within 60 s; stderr: ${err}`)), 60_000);
    const check = () => {
      if (/worker ready: /.test(err)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before it was ready; stderr: ${err}`));
    });
  });
  return {
    process: child,
    stderr: () => err,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
      live.delete(child);
    },
  };
}
