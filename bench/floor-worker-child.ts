// A floor worker (bench/floor.ts: the floor workflow and its `brain` and `host` activities) in a process of its own,
// as the platform's brain worker runs in `api_stream`. The server's address, namespace and task queue, the model
// server's URL and the payload codec's key (FLOOR_CODEC_KEY) come from its environment. It writes one line to
// stdout once it polls, and stops on SIGTERM or when its stdin closes.
import { createDataConverter } from '../src/codec';
import { startFloorWorker } from './floor';

async function main() {
  const need = (name: string): string => {
    const v = process.env[name];
    if (!v) throw new Error(`${name} is not set`);
    return v;
  };
  const worker = await startFloorWorker(
    {
      address: need('TEMPORAL_ADDRESS'),
      namespace: need('TEMPORAL_NAMESPACE'),
      modelUrl: need('ANTHROPIC_BASE_URL'),
      // The parent's test key: importing the test helpers gives this process a key of its own.
      dataConverter: createDataConverter(need('FLOOR_CODEC_KEY')),
    },
    need('FLOOR_TASK_QUEUE'),
  );
  process.stdout.write('floor worker ready\n');
  // Stops on SIGTERM, or when the benchmark that started it goes away (its end of stdin closes).
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.stdin.once('close', () => resolve());
    process.stdin.resume();
  });
  await worker.stop();
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
