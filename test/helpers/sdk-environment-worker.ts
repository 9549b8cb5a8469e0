// The SDK's own self-hosted runner, unchanged, in a process of its own so a test can SIGKILL it: an
// `EnvironmentWorker` polling API_URL's environment with its key, running the SDK's toolset in WORKDIR. The one
// addition sits at the HTTP layer, outside the tool path: each successful heartbeat's URL, credential and answer are
// appended to HEARTBEAT_LOG when it is set, so a test can send this worker's late heartbeat after it is gone.
// Run: node --import tsx test/helpers/sdk-environment-worker.ts (with the variables below in the environment;
// MAX_IDLE_MS and MEMORY_SYNC_MS set the runner's idle stop and memory sync interval).
import fs from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const heartbeatLog = process.env.HEARTBEAT_LOG;

const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const res = await fetch(input, init);
  const url = input instanceof Request ? input.url : String(input);
  if (heartbeatLog && res.ok && /\/work\/[^/?]+\/heartbeat/.test(url)) {
    const body = (await res.clone().json()) as { last_heartbeat?: string };
    const authorization = new Headers(init?.headers).get('authorization');
    fs.appendFileSync(heartbeatLog, JSON.stringify({ url, authorization, last_heartbeat: body.last_heartbeat }) + '\n');
  }
  return res;
};

async function main(): Promise<void> {
  const client = new Anthropic({ apiKey: 'not-used-by-the-worker', baseURL: env('API_URL'), fetch: recordingFetch });
  const stop = new AbortController();
  process.on('SIGTERM', () => stop.abort());
  const worker = client.beta.environments.work.worker({
    environmentId: env('ENVIRONMENT_ID'),
    environmentKey: env('ENVIRONMENT_KEY'),
    workdir: env('WORKDIR'),
    workerId: env('WORKER_ID'),
    ...(process.env.MAX_IDLE_MS ? { maxIdleMs: Number(process.env.MAX_IDLE_MS) } : {}),
    ...(process.env.MEMORY_SYNC_MS ? { memorySyncIntervalMs: Number(process.env.MEMORY_SYNC_MS) } : {}),
  });
  process.stdout.write('polling\n');
  await worker.run(stop.signal).catch((e: unknown) => {
    if (!stop.signal.aborted) throw e;
  });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`worker failed: ${String(e)}\n`);
    process.exit(1);
  },
);
