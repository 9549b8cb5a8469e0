// Starts the SDK's own self-hosted runner (test/helpers/sdk-environment-worker.ts) in a child process on the Node it
// needs (src/infra/sdk-worker-node.ts), and resolves once it polls: the suites and benchmarks that serve a self-hosted
// environment run it exactly as an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureWorkerNodeAsync } from '../../src/infra/sdk-worker-node';

const ROOT = path.resolve(__dirname, '../..');

export interface SdkWorkerOptions {
  apiUrl: string;
  environmentId: string;
  environmentKey: string;
  /** Created when missing. */
  workdir: string;
  workerId: string;
  /** More of the runner's variables: MAX_IDLE_MS, MEMORY_SYNC_MS, HEARTBEAT_LOG. */
  env?: Record<string, string>;
}

/** The runner's process; it rejects with the runner's stderr when it exits before it polls. */
export async function startSdkWorker(o: SdkWorkerOptions): Promise<ChildProcess> {
  fs.mkdirSync(o.workdir, { recursive: true });
  const child = spawn(
    await ensureWorkerNodeAsync(),
    ['--import', 'tsx', path.join(ROOT, 'test/helpers/sdk-environment-worker.ts')],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/root',
        API_URL: o.apiUrl,
        ENVIRONMENT_ID: o.environmentId,
        ENVIRONMENT_KEY: o.environmentKey,
        WORKDIR: o.workdir,
        WORKER_ID: o.workerId,
        ...o.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('polling') && resolve());
    child.once('exit', (code) => reject(new Error(`worker ${o.workerId} exited (${code}): ${stderr.slice(-2000)}`)));
  });
  return child;
}
