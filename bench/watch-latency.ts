// Token latency through `agents watch` against reading the model stream directly: for every streamed text
// delta, from the moment the local model server wrote it to the moment a reader had it. Run on its own:
//   npm run build && npx tsx bench/watch-latency.ts [--quick]
// The direct reader is the Anthropic SDK in this process; the watcher is the real CLI (`agents watch --json`)
// as a child process, fed by an in-process brain worker's stream endpoint. Both clocks are this process's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, testAgent, uniqueId } from '../test/helpers/env';
import { AnthropicModelClient } from '../src/model/model-client';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { endSignal, sendMessageUpdate } from '../src/session/contract';
import { Stack, armStats, commit, interleave, machine } from './lib';

const quick = process.argv.includes('--quick');
const WORDS = 40;
const CHUNK_DELAY_MS = 20;
const ROUNDS = quick ? 3 : 10;
const WARMUP = 1;
const now = () => performance.timeOrigin + performance.now();
const log = (m: string) => process.stderr.write(`watch-latency: ${m}\n`);

type Arm = 'direct' | 'watch';

function script(stack: Stack, id: string, text: string) {
  stack.mock.script(id, { steps: [{ reply: { content: [{ type: 'text', text }] }, chunkDelayMs: CHUNK_DELAY_MS }] });
}

/** Chunk k's latency: from its write to the first arrival whose cumulative text reaches its end. */
function latencies(
  chunks: string[],
  sentAt: number[],
  arrivals: Arrival[],
  only: (a: Arrival) => boolean = () => true,
): number[] {
  let end = 0;
  return chunks.flatMap((c, k) => {
    end += c.length;
    const got = arrivals.find((a) => a.length >= end);
    if (!got) throw new Error(`chunk ${k} never arrived`);
    return only(got) ? [got.at - sentAt[k]] : [];
  });
}

interface Arrival {
  length: number;
  at: number;
  /** Came as a delta frame, i.e. after the watcher had subscribed (not in its first frame's catch-up). */
  live?: boolean;
}

/** Latencies of tokens that reached the watcher once it was subscribed. */
const subscribed: number[] = [];

async function direct(stack: Stack, text: string): Promise<number[]> {
  const id = uniqueId('bench-direct');
  script(stack, id, text);
  const client = new AnthropicModelClient({ apiKey: 'bench', baseURL: stack.mock.url });
  const arrivals: Arrival[] = [];
  let length = 0;
  await client.createMessage(
    {
      sessionId: id,
      model: 'claude-test',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
      tools: [],
      maxTokens: 1000,
    },
    {
      onProgress: (d) => {
        if (d?.type !== 'text') return;
        length += d.text.length;
        arrivals.push({ length, at: now() });
      },
    },
  );
  const rec = stack.mock.requests(id)[0];
  return latencies(text.match(/\S+\s*|\s+/g)!, rec.textDeltaAt!, arrivals);
}

async function watched(stack: Stack, text: string): Promise<number[]> {
  const id = uniqueId('bench-watch');
  script(stack, id, text);
  const handle = await stack.client.workflow.start(sessionWorkflow, {
    taskQueue: BRAIN_TASK_QUEUE,
    workflowId: id,
    args: [{ agent: testAgent() }],
  });
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'watch', id, '--json'], {
    env: { ...process.env, TEMPORAL_ADDRESS: stack.env.address },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const arrivals: Arrival[] = [];
  let streamed = '';
  let partial = '';
  let started!: () => void;
  const ready = new Promise<void>((r) => (started = r));
  let replied!: () => void;
  const done = new Promise<void>((r) => (replied = r));
  child.stdout.on('data', (d: Buffer) => {
    const at = now();
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      const o = JSON.parse(line) as { type: string; seq?: number; text?: string; item?: { kind: string } };
      if (o.type === 'session_started') started();
      if (o.type === 'assistant_message') replied();
      if (o.seq !== undefined || o.item?.kind !== 'model') continue;
      streamed = o.type === 'stream' ? o.text! : streamed + o.text!;
      arrivals.push({ length: streamed.length, at, live: o.type === 'delta' });
    }
  });
  try {
    await ready;
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await done;
    const rec = stack.mock.requests(id).find((r) => r.textDeltaAt)!;
    subscribed.push(...latencies(text.match(/\S+\s*|\s+/g)!, rec.textDeltaAt!, arrivals, (a) => a.live === true));
    return latencies(text.match(/\S+\s*|\s+/g)!, rec.textDeltaAt!, arrivals);
  } finally {
    await handle.signal(endSignal, { reason: 'bench' }).catch(() => undefined);
    await new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('close', () => r())));
  }
}

async function main() {
  const started = Date.now();
  const stack = await Stack.start();
  const worker = await stack.worker({ role: 'brain' });
  const firsts: Record<Arm, number[]> = { direct: [], watch: [] };
  try {
    const text = Array.from({ length: WORDS }, (_, i) => `tok${i}`).join(' ');
    const samples = await interleave<Arm>(['direct', 'watch'], ROUNDS, WARMUP, async (arm, round) => {
      const v = arm === 'direct' ? await direct(stack, text) : await watched(stack, text);
      if (round >= WARMUP) firsts[arm].push(v[0]);
      return v;
    });
    const arms = { direct: armStats(samples.direct), watch: armStats(samples.watch) };
    const first = { direct: armStats(firsts.direct), watch: armStats(firsts.watch) };
    const added = {
      p50Ms: Math.round((arms.watch.p50Ms - arms.direct.p50Ms) * 10) / 10,
      p95Ms: Math.round((arms.watch.p95Ms - arms.direct.p95Ms) * 10) / 10,
    };
    const result = {
      name: 'watch_latency',
      commit: commit(),
      machine: { ...machine(), loadavgAtEnd: (await import('node:os')).loadavg() },
      date: new Date().toISOString(),
      durationS: Math.round((Date.now() - started) / 1000),
      settings: { words: WORDS, chunkDelayMs: CHUNK_DELAY_MS, rounds: ROUNDS, warmup: WARMUP },
      arms,
      firstToken: first,
      addedByWatch: added,
      // Includes the warm-up round's tokens: a small share of the samples.
      watchOnceSubscribed: armStats(subscribed),
      notes:
        'Per streamed text delta: model server write -> reader has it. direct: the Anthropic SDK reading the stream in-process. watch: the brain worker publishes each delta over SSE; `agents watch --json` (a child process) finds the worker through the activity’s worker identity, subscribes, and prints it; read from its stdout. A watcher subscribes when it sees the model call running (it polls every 300 ms), so the first tokens of a reply wait for that and arrive together in its first frame.',
    };
    const out = path.join(__dirname, 'results', 'watch-latency.json');
    fs.writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    log(
      `all tokens: direct p50 ${arms.direct.p50Ms} ms, p95 ${arms.direct.p95Ms} ms; watch p50 ${arms.watch.p50Ms} ms, p95 ${arms.watch.p95Ms} ms (n=${arms.watch.n})`,
    );
    log(
      `first token: direct p50 ${first.direct.p50Ms} ms, p95 ${first.direct.p95Ms} ms; watch p50 ${first.watch.p50Ms} ms, p95 ${first.watch.p95Ms} ms`,
    );
    log(
      `once subscribed: watch p50 ${result.watchOnceSubscribed.p50Ms} ms, p95 ${result.watchOnceSubscribed.p95Ms} ms (n=${result.watchOnceSubscribed.n})`,
    );
    log(`wrote ${out}`);
  } finally {
    await worker.shutdown().catch(() => undefined);
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    log(`failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
