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

/** Runs `agents worker --role ROLE [...args]`; `prefix` wraps the command (e.g. `ip netns exec NS`). */
export async function spawnWorker(
  env: Record<string, string | undefined>,
  role = 'brain',
  prefix: string[] = [],
  args: string[] = [],
): Promise<ChildWorker> {
  const argv = [...prefix, process.execPath, path.join(ROOT, 'dist/client.js'), 'worker', '--role', role, ...args];
  const child = spawn(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout!.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
    live.delete(child);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker not ready within 60 s; stderr: ${err}`)), 60_000);
      child.stderr!.on('data', () => {
        if (/worker ready: /.test(err)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker exited with ${code} before it was ready; stderr: ${err}`));
      });
    });
  } catch (e) {
    await kill();
    throw e;
  }
  return { process: child, stderr: () => err, kill };
}

/** A brain worker process on the harness's Temporal server and scripted model; `extra` adds or unsets settings. */
export function spawnBrainWorker(
  h: { env: { address: string }; mock: { url: string } },
  extra: Record<string, string | undefined> = {},
): Promise<ChildWorker> {
  return spawnWorker({
    TEMPORAL_ADDRESS: h.env.address,
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    ...extra,
  });
}
