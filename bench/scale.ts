// Scale: one brain worker process holding many idle sessions while some are active, against the same worker
// holding 10; worker RSS per session and turn latency.
import fs from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnWorker, type ChildWorker } from '../test/helpers/child-worker';
import { testAgent, uniqueId } from '../test/helpers/env';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { sendMessageUpdate } from '../src/session/contract';
import { SETTINGS, armStats, endSession, ratio, waitLive, type BenchResult, type Ctx } from './lib';

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

async function settledRss(pid: number): Promise<number> {
  // RSS once the heap settles: sampled every 250 ms until three readings in a row are within 1% (at most 3 s).
  const readings = [rssBytes(pid)];
  for (let i = 0; i < 12; i++) {
    await sleep(250);
    readings.push(rssBytes(pid));
    const last = readings.slice(-3);
    if (last.length === 3 && Math.max(...last) - Math.min(...last) <= 0.01 * Math.max(...last)) break;
  }
  return readings[readings.length - 1];
}

async function pool<T, R>(items: T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

export async function runScale(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const big = ctx.quick ? 300 : 1000;
  const active = 50;
  const held: WorkflowHandle[] = [];
  let worker: ChildWorker | undefined;
  /** Starts sessions that run one turn at once (model without latency) and then wait for input. */
  const startIdle = (n: number, tag: string) =>
    pool(Array.from({ length: n }), 16, async () => {
      const id = uniqueId(`bench-scale-${tag}`);
      stack.model(id, [], 0);
      const h = await stack.client.workflow.start(sessionWorkflow, { taskQueue: BRAIN_TASK_QUEUE, workflowId: id, args: [{ agent: testAgent(), message: { text: 'hello' } }] });
      held.push(h);
      await waitLive(h, (ev) => ev.some((e) => e.type === 'assistant_message'), 300_000, 250);
      stack.model(id);
      return h;
    });
  const turn = async (h: WorkflowHandle, i: number) => {
    const t0 = Date.now();
    const { seq } = await h.executeUpdate(sendMessageUpdate, { args: [{ text: `turn ${i}` }] });
    const ev = await waitLive(h, (e) => e.some((x) => x.seq > seq && x.type === 'assistant_message'), 120_000, 100, seq);
    return Date.parse(ev.find((x) => x.seq > seq && x.type === 'assistant_message')!.time) - t0;
  };
  try {
    worker = await spawnWorker(stack.childEnv(), 'brain');
    const pid = worker.process.pid!;
    // Warm the worker up with one session, then end it: the baseline includes the loaded code and a used heap.
    const [warm] = await startIdle(1, 'warm');
    await turn(warm, 0);
    await endSession(warm);
    held.length = 0;
    const baseline = await settledRss(pid);

    // 10 sessions held, all active: 3 rounds of 10 concurrent turns.
    const small = await startIdle(10, 's10');
    const rss10 = await settledRss(pid);
    const lat10: number[] = [];
    for (let r = 1; r <= 3; r++) lat10.push(...(await Promise.all(small.map((h) => turn(h, r)))));
    ctx.log(`  scale: 10 sessions, rss ${(rss10 / 2 ** 20).toFixed(0)} MiB (baseline ${(baseline / 2 ** 20).toFixed(0)} MiB), p95 turn ${armStats(lat10).p95Ms} ms`);

    // Up to `big` sessions held, 50 of them active.
    const t0 = Date.now();
    const rest = await startIdle(big - small.length, 'idle');
    ctx.log(`  scale: started ${rest.length} more sessions in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const rssBig = await settledRss(pid);
    const activeSet = [...small, ...rest].slice(0, active);
    const latBig: number[] = [];
    for (let r = 4; r <= 5; r++) latBig.push(...(await Promise.all(activeSet.map((h) => turn(h, r)))));
    const perSession10 = (rss10 - baseline) / 10;
    const perSessionBig = (rssBig - baseline) / big;
    ctx.log(`  scale: ${big} sessions, rss ${(rssBig / 2 ** 20).toFixed(0)} MiB, ${(perSessionBig / 1024).toFixed(0)} KiB per session, p95 turn ${armStats(latBig).p95Ms} ms`);
    const s10 = armStats(lat10);
    const sBig = armStats(latBig);
    const r = ratio(sBig, s10);
    const notes = [
      `One child brain worker (\`agents worker --role brain\`, default workflow cache). sessions_10: 10 sessions held, all active, 3 rounds of 10 concurrent turns. sessions_1000: ${big} sessions held${ctx.quick ? ' (quick mode scales the big arm down from 1,000)' : ''}, ${active} of them active, 2 rounds of ${active} concurrent turns; the other sessions idle, waiting for input.`,
      `Turn latency = sendMessage update to the workflow time of the reply (model first byte ${SETTINGS.modelFirstByteMs} ms). The arms run one after the other (holding 10, then growing to ${big}), not interleaved: a population of ${big} cannot be built and torn down per round.`,
      `Worker RSS: baseline ${(baseline / 2 ** 20).toFixed(0)} MiB; ${(rss10 / 2 ** 20).toFixed(0)} MiB with 10 (${(perSession10 / 1024).toFixed(0)} KiB per session); ${(rssBig / 2 ** 20).toFixed(0)} MiB with ${big} (${(perSessionBig / 1024).toFixed(0)} KiB per session; anchor ~1 MB per cached workflow).`,
      `p95 turn latency ${big}/${10}: ${r.p95} (p50 ${r.p50}); the big arm also has 5x the concurrent turns.`,
    ].join(' ');
    return [
      {
        name: 'scale',
        arms: { sessions_10: s10, sessions_1000: sBig },
        rssBytesPerSession: Math.round(perSessionBig),
        rssBytesPerSession10: Math.round(perSession10),
        rssBytes: { baseline, sessions_10: rss10, sessions_1000: rssBig },
        bigArmSessions: big,
        ratioTo: { sessions_1000: 'sessions_10' },
        notes,
      },
    ];
  } finally {
    // These sessions hold no sandbox and nothing reads their archive: terminating them is enough, and far quicker
    // than ending each one through its workflow.
    await pool(held, 16, (h) => h.terminate('benchmark over').catch(() => undefined));
    await worker?.kill('SIGTERM');
  }
}
