// Scale: one brain worker process holding many idle sessions while the same 10 are active, against the same
// worker holding only those 10; worker RSS per session and turn latency.
import fs from 'node:fs';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { followHistory } from '../src/log/history-doorbell';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnWorker, type ChildWorker } from '../test/helpers/child-worker';
import { testAgent, uniqueId } from '../test/helpers/env';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { sendMessageUpdate } from '../src/session/contract';
import {
  SETTINGS,
  armStats,
  endSession,
  goal,
  ratio,
  threadCpuSeconds,
  totalCpuSeconds,
  waitRung,
  workerStatus,
  type BenchResult,
  type Ctx,
} from './lib';
import { DEFAULT_WORKFLOW_CACHE } from '../src/worker';

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

/** Resolves once the session's first workflow task has completed, read from its history (no query to the worker). */
async function firstTask(client: Client, sessionId: string): Promise<void> {
  const stop = new AbortController();
  await followHistory(client, sessionId, () => stop.abort(), stop.signal);
}

const MiB = (b: number) => (b / 2 ** 20).toFixed(0);

/** Where the CPU of a stretch of turns went: per turn, and the share of the wall time the worker's busiest thread ran. */
interface CpuSplit {
  wallS: number;
  turns: number;
  /** CPU ms per turn: the brain worker (all threads), its busiest thread (the workflow thread), the Temporal server, this process (model server and clients). */
  perTurnMs: { worker: number; busiestThread: number; server: number; bench: number };
  /** The busiest thread's CPU / wall time: near 1, turns queue for it. */
  busiestThreadShare: number;
}

async function cpuSplit<T extends unknown[]>(
  workerPid: number,
  serverPids: number[],
  run: () => Promise<T>,
): Promise<{ result: T; cpu: CpuSplit }> {
  const [w0, s0, b0, t0] = [
    threadCpuSeconds(workerPid),
    serverPids.length ? totalCpuSeconds(serverPids) : NaN,
    process.cpuUsage(),
    performance.now(),
  ];
  const result = await run();
  const [w1, s1, b1, t1] = [
    threadCpuSeconds(workerPid),
    serverPids.length ? totalCpuSeconds(serverPids) : NaN,
    process.cpuUsage(b0),
    performance.now(),
  ];
  const deltas = [...w1].map(([tid, sec]) => sec - (w0.get(tid) ?? 0));
  const wallS = (t1 - t0) / 1000;
  const turns = result.length;
  const per = (sec: number) => Math.round((sec * 1000 * 10) / turns) / 10;
  const busiest = Math.max(...deltas);
  return {
    result,
    cpu: {
      wallS: Math.round(wallS * 10) / 10,
      turns,
      perTurnMs: {
        worker: per(deltas.reduce((a, b) => a + b, 0)),
        busiestThread: per(busiest),
        server: per(s1 - s0),
        bench: per((b1.user + b1.system) / 1e6),
      },
      busiestThreadShare: Math.round((busiest / wallS) * 100) / 100,
    },
  };
}

export async function runScale(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  // On the production cluster the population is BENCH_SCALE_CLUSTER_SESSIONS (default 10,000, as on the dev server).
  const big = Number(
    (stack.server === 'cluster' ? process.env.BENCH_SCALE_CLUSTER_SESSIONS : undefined) ??
      process.env.BENCH_SCALE_SESSIONS ??
      (ctx.quick ? 1000 : 10_000),
  );
  // The same sessions take turns in both arms: only the number held differs.
  const active = 10;
  const measuredRounds = ctx.quick ? 5 : 10;
  const cacheSize = process.env.BRAIN_WORKFLOW_CACHE
    ? Number(process.env.BRAIN_WORKFLOW_CACHE)
    : DEFAULT_WORKFLOW_CACHE;
  const held: WorkflowHandle[] = [];
  let worker: ChildWorker | undefined;
  /**
   * Starts `n` sessions that wait for input: with a first message, each runs one turn at once (model without
   * latency); without, each runs only its first workflow task (read from the history, not by query).
   */
  const startIdle = (n: number, tag: string, firstMessage = true) =>
    pool(Array.from({ length: n }), firstMessage ? 24 : 32, async () => {
      const id = uniqueId(`bench-scale-${tag}`);
      stack.model(id, [], 0);
      const h = await stack.client.workflow.start(sessionWorkflow, {
        taskQueue: BRAIN_TASK_QUEUE,
        workflowId: id,
        args: [{ agent: testAgent(), ...(firstMessage ? { message: { text: 'hello' } } : {}) }],
      });
      held.push(h);
      if (firstMessage)
        await waitRung(stack.client, h, (ev) => ev.some((e) => e.type === 'assistant_message'), 600_000);
      else await firstTask(stack.client, h.workflowId);
      stack.model(id);
      return h;
    });
  const turn = async (h: WorkflowHandle, i: number) => {
    const t0 = Date.now();
    const { seq } = await h.executeUpdate(sendMessageUpdate, { args: [{ text: `turn ${i}` }] });
    const ev = await waitRung(
      stack.client,
      h,
      (e) => e.some((x) => x.seq > seq && x.type === 'assistant_message'),
      120_000,
      seq,
    );
    return Date.parse(ev.find((x) => x.seq > seq && x.type === 'assistant_message')!.time) - t0;
  };
  const rounds = async (set: WorkflowHandle[], from: number, n: number) => {
    const out: number[] = [];
    for (let r = from; r < from + n; r++) out.push(...(await Promise.all(set.map((h) => turn(h, r)))));
    return out;
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
    const statusBase = await workerStatus(worker);

    // 10 sessions held, all active: one unmeasured round, then `measuredRounds` rounds of 10 concurrent turns.
    const small = await startIdle(active, 's10');
    const rss10 = await settledRss(pid);
    const serverPids = stack.serverPids();
    await rounds(small, 1, 1);
    const { result: lat10, cpu: cpu10 } = await cpuSplit(pid, serverPids, () => rounds(small, 2, measuredRounds));
    ctx.log(
      `  scale: 10 sessions, rss ${MiB(rss10)} MiB (baseline ${MiB(baseline)} MiB), p95 turn ${armStats(lat10).p95Ms} ms`,
    );

    // Up to `big` sessions held, the same 10 of them active.
    const t0 = Date.now();
    // Grown in tenths, with the worker's RSS after each: the memory chart.
    const rest: WorkflowHandle[] = [];
    const series: { x: number; y: number; series: string }[] = [
      { x: 10, y: rss10 / 2 ** 20, series: 'worker RSS MiB' },
    ];
    const step = Math.ceil((big - small.length) / 10);
    while (rest.length < big - small.length) {
      rest.push(...(await startIdle(Math.min(step, big - small.length - rest.length), 'idle', false)));
      const rss = await settledRss(pid);
      series.push({ x: small.length + rest.length, y: Math.round(rss / 2 ** 20), series: 'worker RSS MiB' });
      ctx.log(`  scale: ${small.length + rest.length} held, rss ${MiB(rss)} MiB`);
    }
    const startS = (Date.now() - t0) / 1000;
    ctx.log(`  scale: started ${rest.length} more sessions in ${startS.toFixed(0)} s`);
    const rssBig = await settledRss(pid);
    const statusBig = await workerStatus(worker);
    // The heap of the thread the sessions run on (the SDK's workflow thread), and what each cached session adds to it.
    const threadHeap = (s: typeof statusBig) => s?.threads?.reduce((a, t) => a + t.usedBytes, 0);
    const heapBase = threadHeap(statusBase);
    const heapBig = threadHeap(statusBig);
    const heapPerCached =
      heapBase !== undefined && heapBig !== undefined && statusBig?.cachedWorkflows
        ? (heapBig - heapBase) / statusBig.cachedWorkflows
        : undefined;
    // The active set: the 10 of the first arm, taking turn after turn, so the cache keeps them; one round first
    // brings back those the population's growth evicted.
    const activeSet = small;
    const from = 2 + measuredRounds;
    await rounds(activeSet, from, 1);
    const { result: latBig, cpu: cpuBig } = await cpuSplit(pid, serverPids, () =>
      rounds(activeSet, from + 1, measuredRounds),
    );
    // Sessions idle since they started, long out of the cache: their turn replays the run first.
    const evictedSet = rest.slice(0, active);
    const { result: latEvicted, cpu: cpuEvicted } = await cpuSplit(pid, serverPids, () => rounds(evictedSet, 4, 1));
    const rssAfter = await settledRss(pid);
    // Back to 10 held: the population ends, and the same 10 take the same rounds again. The 10-held arm is the
    // rounds before and after the big one, so a drift in the machine's load over the run weighs on both arms.
    await pool(rest, 16, (h) => h.terminate('benchmark: population over').catch(() => undefined));
    held.length = 0;
    held.push(...small);
    const back = from + 1 + measuredRounds;
    await rounds(small, back, 1);
    const { result: lat10After, cpu: cpu10After } = await cpuSplit(pid, serverPids, () =>
      rounds(small, back + 1, measuredRounds),
    );
    ctx.log(`  scale: back to 10 held, p95 turn ${armStats(lat10After).p95Ms} ms`);
    const perSession10 = (rss10 - baseline) / 10;
    const perSessionBig = (rssBig - baseline) / big;
    ctx.log(
      `  scale: ${big} sessions, rss ${MiB(rssBig)} MiB, ${(perSessionBig / 1024).toFixed(0)} KiB per session, p95 turn ${armStats(latBig).p95Ms} ms, evicted ${armStats(latEvicted).p95Ms} ms`,
    );
    const s10Before = armStats(lat10);
    const s10After = armStats(lat10After);
    const s10 = armStats([...lat10, ...lat10After]);
    const sBig = armStats(latBig);
    const sEvicted = armStats(latEvicted);
    const r = ratio(sBig, s10);
    const re = ratio(sEvicted, s10);
    const holding = goal(
      `p95 turn latency, ${big} sessions held / 10 held, the same ${active} active`,
      r.p95,
      '<=',
      1.2,
    );
    const bigArm = `sessions_${big}`;
    const cpu: Record<string, CpuSplit> = {
      sessions_10: cpu10,
      [bigArm]: cpuBig,
      evicted: cpuEvicted,
      sessions_10_after: cpu10After,
    };
    const notes = [
      `On the ${stack.server} server, one child brain worker (\`agents worker --role brain\`, the default workflow cache of ${cacheSize} sessions). sessions_10: 10 sessions held, all ${active} active, one unmeasured round then ${measuredRounds} rounds of ${active} concurrent turns, before the population grows and again after it has ended (sessions_10_before, sessions_10_after; sessions_10 is both). ${bigArm}: ${big} sessions held (the same 10 and ${big - 10} more started with no message, each idle after its first workflow task, 32 at a time, in ${startS.toFixed(0)} s), the same ${active} active, one unmeasured round then ${measuredRounds} rounds of ${active} concurrent turns; the other sessions idle, waiting for input. evicted: one round of ${active} concurrent turns (each session's first) on sessions idle since they started, out of the cache, so each turn replays its run first.`,
      `Turn latency = sendMessage update to the workflow time of the reply (model first byte ${SETTINGS.modelFirstByteMs} ms); the client reads the log when the run's history changes (a long poll on the server), not by polling the worker. The arms run one after the other (holding 10, then growing to ${big}), not interleaved: a population of ${big} cannot be built and torn down per round.`,
      `Worker RSS: baseline ${MiB(baseline)} MiB; ${MiB(rss10)} MiB with 10 (${(perSession10 / 1024).toFixed(0)} KiB per session); ${MiB(rssBig)} MiB with ${big} (${(perSessionBig / 1024).toFixed(1)} KiB per session held), ${statusBig ? `main-thread heap ${MiB(statusBig.heapUsedBytes)} MiB, ${statusBig.cachedWorkflows} sessions cached` : 'no status report'}${heapBig !== undefined ? `, workflow thread heap ${MiB(heapBig)} MiB in use (${MiB(heapBase ?? 0)} MiB at the baseline${heapPerCached !== undefined ? `, ${(heapPerCached / 1024).toFixed(0)} KiB per cached session` : ''})` : ''}; ${MiB(rssAfter)} MiB after the measured turns.`,
      `Holding cost, p95 turn latency ${big} held / 10 held with the same ${active} active: ${r.p95} (p50 ${r.p50}; goal <= 1.2: ${holding.met ? 'met' : 'not met'}). Evicted/10: p95 ${re.p95} (p50 ${re.p50}).`,
      `CPU per turn (ms; worker = every thread of the brain worker, busiest = its busiest thread, the workflow thread; server = the Temporal server's processes; bench = this process: the model server and the clients) and the busiest thread's share of the wall time: ${Object.entries(
        cpu,
      )
        .map(
          ([arm, x]) =>
            `${arm}: worker ${x.perTurnMs.worker}, busiest ${x.perTurnMs.busiestThread}, server ${x.perTurnMs.server}, bench ${x.perTurnMs.bench}, busiest share ${x.busiestThreadShare}`,
        )
        .join('; ')}.`,
    ].join(' ');
    return [
      {
        name: 'scale',
        server: stack.server,
        activeSessions: active,
        goals: [holding],
        arms: {
          sessions_10: s10,
          [bigArm]: sBig,
          evicted: sEvicted,
          sessions_10_before: s10Before,
          sessions_10_after: s10After,
        },
        rssBytesPerSession: Math.round(perSessionBig),
        rssBytesPerSession10: Math.round(perSession10),
        rssBytes: { baseline, sessions_10: rss10, [bigArm]: rssBig, afterTurns: rssAfter },
        heapUsedBytes: statusBig?.heapUsedBytes,
        workflowThreadHeapBytes: { baseline: heapBase, [bigArm]: heapBig },
        workflowThreadHeapBytesPerCachedSession: heapPerCached === undefined ? undefined : Math.round(heapPerCached),
        cachedWorkflows: statusBig?.cachedWorkflows,
        cpu,
        workflowCache: cacheSize,
        bigArmSessions: big,
        startSeconds: Math.round(startS),
        ratioTo: { [bigArm]: 'sessions_10', evicted: 'sessions_10' },
        series,
        chart: {
          title: 'scale: brain worker RSS by sessions held',
          subtitle: `workflow cache ${cacheSize} sessions`,
          x: 'sessions held',
          y: 'MiB',
        },
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
