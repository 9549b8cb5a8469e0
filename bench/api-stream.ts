// The API's event stream: (a) events.send to the first agent.message on the SDK's stream, against the same turn
// driven by the Temporal client directly (update sendMessage, then the log's query polled every 10 ms); (b)
// delivery latency (the event's processed_at in the log to its arrival at a client) with 1,000 streams open on
// one API process, over 1,000 sessions x 1 stream and 10 sessions x 100, and what that costs the Temporal server;
// (c) handovers (continue-as-new of a session run) with and without 100 streams open on the session.
// The API runs in this process, the brain worker and the stream clients in child processes of their own.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type Anthropic from '@anthropic-ai/sdk';
import { Client, type WorkflowClientInterceptor, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { MANAGED_AGENTS_BETA } from '../src/api/server';
import { feedStats } from '../src/api/sessions/feed';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../src/infra/temporal-cli';
import { doorbellStats } from '../src/log/history-doorbell';
import { queryRetryInterceptor } from '../src/log/query-retry';
import { ArchivedSessionLog, LiveSessionLog } from '../src/log/session-log';
import { startSessionRun } from '../src/session-ops';
import { endSignal, eventsQuery, handoverQuery, sendMessageUpdate, statusQuery } from '../src/session/contract';
import { spawnWorker, type ChildWorker } from '../test/helpers/child-worker';
import { TEST_CODEC_KEY } from '../test/helpers/test-keys';
import { startTestApi, testSessionDeps, type TestApi } from '../test/helpers/api';
import { ROOT, createTestEnv, runsOf, testArchive, testDataConverter, uniqueId } from '../test/helpers/env';
import { endFloor, startFloorSession } from './floor';
import { floorTurnUpdate } from './floor-workflow';
import {
  SETTINGS,
  armStats,
  endSession,
  goal,
  interleave,
  ratio,
  type ArmStats,
  type BenchResult,
  type Ctx,
} from './lib';

const DIRECT_POLL_MS = 10;
const now = () => performance.timeOrigin + performance.now();
const { EventType } = temporal.api.enums.v1;

/** The API in this process, on `client`'s server, counting the queries its sessions make. */
async function startApi(
  client: Client,
  log: (m: string) => void,
): Promise<{ api: TestApi; sdk: Anthropic; key: string; client: Client; queries: () => number }> {
  let queries = 0;
  const counting: WorkflowClientInterceptor = {
    query(input, next) {
      queries++;
      return next(input);
    },
  };
  const sessions = new Client({
    connection: client.connection,
    namespace: client.options.namespace,
    dataConverter: testDataConverter(),
    interceptors: { workflow: [counting, queryRetryInterceptor] },
  });
  const api = await startTestApi(
    'postgres',
    ['default'],
    { ...testSessionDeps(sessions), log: new ArchivedSessionLog(testArchive(), new LiveSessionLog(sessions)) },
    log,
  );
  const key = await api.key();
  return { api, sdk: await api.client(), key, client: sessions, queries: () => queries };
}

async function createSessions(sdk: Anthropic, n: number): Promise<string[]> {
  const agent = await sdk.beta.agents.create({ name: 'chat', model: 'claude-test' });
  const environment = await sdk.beta.environments.create({ name: uniqueId('env') });
  const ids: string[] = [];
  for (let i = 0; i < n; i += 20) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(20, n - i) }, () =>
        sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id }),
      ),
    );
    ids.push(...batch.map((s) => s.id));
  }
  return ids;
}

interface Report {
  latencies: number[];
  byType: Record<string, number[]>;
  events: number;
  records: [number, number, number][];
}

const eventMs = (e: temporal.api.history.v1.IHistoryEvent | undefined) =>
  e?.eventTime ? Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6) : NaN;

/**
 * Splits each delivery at the commit of the workflow task that appended the event: an event's processed_at is its
 * workflow task's start, and the task's WorkflowTaskCompleted in the history is when it reached the log. Returns the
 * worker's share (start to commit) and the API's (commit to arrival), for the events of the sessions' first streams.
 */
async function splitAtCommit(
  client: Client,
  ids: string[],
  records: Report['records'],
): Promise<{ workerMs: number[]; apiMs: number[] }> {
  const workerMs: number[] = [];
  const apiMs: number[] = [];
  const bySession = new Map<number, [number, number][]>();
  for (const [i, p, at] of records) bySession.set(i, [...(bySession.get(i) ?? []), [p, at]]);
  for (const [i, recs] of bySession) {
    const events = (await client.workflow.getHandle(ids[i]).fetchHistory()).events ?? [];
    const commits: [number, number][] = [];
    for (let k = 0; k < events.length; k++) {
      if (events[k].eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) continue;
      const done = events
        .slice(k + 1)
        .find(
          (e) =>
            e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ||
            e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
        );
      if (done?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        commits.push([eventMs(events[k]), eventMs(done)]);
    }
    for (const [p, at] of recs) {
      const c = commits.find(([started]) => Math.abs(started - p) <= 1);
      if (!c) continue;
      workerMs.push(c[1] - p);
      apiMs.push(at - c[1]);
    }
  }
  return { workerMs, apiMs };
}

/** The stream clients' process (bench/api-stream-clients.ts). */
class StreamClients {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiters: Array<{ match: (l: string) => boolean; resolve: (l: string) => void }> = [];
  private readonly idles = new Map<number, number>();
  private idleWaiters: Array<() => void> = [];

  constructor(url: string, key: string, sessions: { id: string; streams: number }[]) {
    this.child = spawn(
      process.execPath,
      [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(__dirname, 'api-stream-clients.ts')],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      if (line.startsWith('idle ')) {
        const i = Number(line.slice(5));
        this.idles.set(i, (this.idles.get(i) ?? 0) + 1);
        const ws = this.idleWaiters;
        this.idleWaiters = [];
        ws.forEach((w) => w());
        return;
      }
      const w = this.waiters.findIndex((x) => x.match(line));
      if (w >= 0) this.waiters.splice(w, 1)[0].resolve(line);
    });
    this.child.stdin.write(`${JSON.stringify({ url, key, beta: MANAGED_AGENTS_BETA, sessions })}\n`);
  }

  private next(match: (l: string) => boolean, timeoutMs = 600_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('stream clients did not answer in time')), timeoutMs);
      this.waiters.push({ match, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      this.child.once('exit', (code) => reject(new Error(`stream clients exited (${code})`)));
    });
  }

  ready(): Promise<string> {
    return this.next((l) => l === 'ready');
  }

  /** Resolves once session `index` has gone idle `count` times on each of its `streams` streams. */
  async idled(index: number, count: number, streams: number, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.idles.get(index) ?? 0) < count * streams) {
      if (Date.now() > deadline)
        throw new Error(`session ${index}: ${this.idles.get(index) ?? 0} of ${count * streams} idles on its streams`);
      await Promise.race([new Promise<void>((r) => this.idleWaiters.push(r)), sleep(1000)]);
    }
  }

  reset(): void {
    this.child.stdin.write('reset\n');
  }

  async report(): Promise<Report> {
    const line = this.next((l) => l.startsWith('{'));
    this.child.stdin.write('report\n');
    return JSON.parse(await line) as Report;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.stdin.write('exit\n');
    await Promise.race([exited, sleep(5000)]);
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

const say = (sdk: Anthropic, id: string, text: string) =>
  sdk.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });

/** The events of one SDK stream as they arrive, each with its arrival time. */
class Tap {
  private readonly seen: { type: string; at: number }[] = [];
  private wake?: () => void;

  constructor(private readonly stream: Awaited<ReturnType<Anthropic['beta']['sessions']['events']['stream']>>) {
    void (async () => {
      for await (const e of stream) {
        this.seen.push({ type: e.type, at: now() });
        this.wake?.();
      }
    })().catch(() => undefined);
  }

  /** The arrival time of the next event of type `type`, consuming everything before it. */
  async next(type: string, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.seen.shift();
      if (e?.type === type) return e.at;
      if (e) continue;
      if (Date.now() > deadline) throw new Error(`no ${type} on the stream`);
      await Promise.race([new Promise<void>((r) => (this.wake = r)), sleep(1000)]);
    }
  }

  close(): void {
    this.stream.controller.abort();
  }
}

/** (a) One turn through the API: send, then the first agent.message on the session's SDK stream, open throughout. */
async function apiTurn(sdk: Anthropic, tap: Tap, id: string, text: string): Promise<number> {
  const t0 = now();
  await say(sdk, id, text);
  const first = (await tap.next('agent.message')) - t0;
  await tap.next('session.status_idle');
  return first;
}

/** (a) The same turn driven by the Temporal client: update sendMessage, then the log polled by query. */
async function directTurn(client: Client, id: string, text: string): Promise<number> {
  const handle = client.workflow.getHandle(id);
  const t0 = now();
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
  let first: number | undefined;
  for (let from = seq + 1; ;) {
    const page = await handle.query(eventsQuery, { from, limit: 1000 });
    for (const e of page.events) {
      if (e.type === 'assistant_message' && first === undefined) first = now() - t0;
      if (e.type === 'assistant_message' && e.stopReason !== 'tool_use') return first!;
    }
    from += page.events.length;
    await sleep(DIRECT_POLL_MS);
  }
}

async function sendToFirstMessage(
  ctx: Ctx,
  client: Client,
  sdk: Anthropic,
): Promise<Record<'direct' | 'api', number[]>> {
  const [apiId] = await createSessions(sdk, 1);
  // The direct session runs the very agent file the API made for its session.
  const { agent } = await client.workflow.getHandle(apiId).query(handoverQuery);
  const directId = uniqueId('bench-api-direct');
  const direct = await startSessionRun(client, {
    workflowId: directId,
    input: { agent },
    agent: { name: 'chat', model: 'claude-test' },
  });
  ctx.stack.model(apiId);
  ctx.stack.model(directId);
  const tap = new Tap(await sdk.beta.sessions.events.stream(apiId));
  try {
    return await interleave<'direct' | 'api'>(
      ['direct', 'api'],
      ctx.quick ? 12 : 30,
      2,
      (arm, round) =>
        arm === 'api' ? apiTurn(sdk, tap, apiId, `round ${round}`) : directTurn(client, directId, `round ${round}`),
      (m) => ctx.log(`  send->agent.message ${m}`),
    );
  } finally {
    tap.close();
    await endSession(direct);
    await endSession(client.workflow.getHandle(apiId));
  }
}

interface Delivery {
  stats: ArmStats;
  /** processed_at to the commit of its workflow task, and that commit to arrival (first stream of each session). */
  workerShare: ArmStats;
  apiShare: ArmStats;
  /** How long the feeds' reads of the log's tail (an events query) took meanwhile. */
  logReadMs: ArmStats;
  byType: Record<string, ArmStats>;
  events: number;
  sendToIdleMs: ArmStats;
  queriesPerS: number;
  historyPollsPerS: number;
  idleQueriesPerS: number;
  idleHistoryPollsPerS: number;
  /** Rings whose events came from the worker's push (no query), and rings that read the log, while turns ran. */
  pushedRings: number;
  logReads: number;
  /** Of the pushed rings, those that waited for their batch; the commit to the ring; the ring to the delivery. */
  pushWaits: number;
  ringLagMs: ArmStats;
  ringToDeliverMs: ArmStats;
}

/** A phase of (b): `active` sessions take a turn at a time, `turns` turns in all, over streams already open. */
interface Phase {
  name: string;
  active: number;
  turns: number;
}

/**
 * (b) `sessions` sessions with `streams` streams each, opened once; the cost of the open streams while every
 * session idles for `idleS` seconds, then each phase in turn over the same streams, the next phase's turns on the
 * sessions after the last one's.
 */
async function delivery(
  ctx: Ctx,
  api: Awaited<ReturnType<typeof startApi>>,
  sessions: number,
  streams: number,
  idleS: number,
  phases: Phase[],
): Promise<Record<string, Delivery>> {
  const ids = await createSessions(api.sdk, sessions);
  ctx.log(`  ${sessions} x ${streams}: ${sessions} sessions created; opening ${sessions * streams} streams`);
  for (const id of ids) ctx.stack.model(id);
  const clients = new StreamClients(
    api.api.url,
    api.key,
    ids.map((id) => ({ id, streams })),
  );
  const done = new Map<number, number>();
  const out: Record<string, Delivery> = {};
  try {
    await clients.ready();
    ctx.log(`  ${sessions} x ${streams}: ${feedStats.followers} followers; idle ${idleS} s`);
    // The cost of open streams on idle sessions.
    const idle0 = { q: api.queries(), p: doorbellStats.historyPolls, t: now() };
    await sleep(idleS * 1000);
    const idleElapsed = (now() - idle0.t) / 1000;
    const idleQueriesPerS = Math.round(((api.queries() - idle0.q) / idleElapsed) * 10) / 10;
    const idleHistoryPollsPerS = Math.round(((doorbellStats.historyPolls - idle0.p) / idleElapsed) * 10) / 10;
    let first = 0;
    for (const phase of phases) {
      const label = `${sessions} x ${streams} ${phase.name}`;
      clients.reset();
      feedStats.readMs.length = 0;
      feedStats.ringLagMs.length = 0;
      feedStats.ringToDeliverMs.length = 0;
      const busy0 = {
        q: api.queries(),
        p: doorbellStats.historyPolls,
        t: now(),
        pushed: feedStats.pushedRings,
        reads: feedStats.logReads,
        waits: feedStats.pushWaits,
      };
      const sendToIdle: number[] = [];
      const base = first;
      // Lane j drives turns j, j + active, ...: a session never has two turns at once.
      const lane = async (j: number) => {
        for (let k = base + j; k < base + phase.turns; k += phase.active) {
          const i = k % sessions;
          const t0 = now();
          await say(api.sdk, ids[i], `turn ${k}`);
          const count = (done.get(i) ?? 0) + 1;
          done.set(i, count);
          await clients.idled(i, count, streams);
          sendToIdle.push(now() - t0);
        }
      };
      await Promise.all(Array.from({ length: phase.active }, (_, j) => lane(j)));
      first += phase.turns;
      const busyElapsed = (now() - busy0.t) / 1000;
      const readMs = armStats(feedStats.readMs);
      const r = await clients.report();
      const split = await splitAtCommit(api.client, ids, r.records);
      ctx.log(
        `  ${label}: ${feedStats.pushedRings - busy0.pushed} rings from the push, ${feedStats.logReads - busy0.reads} log reads, ${feedStats.pushWaits - busy0.waits} waits for a batch, commit to ring p50 ${armStats(feedStats.ringLagMs).p50Ms} ms p95 ${armStats(feedStats.ringLagMs).p95Ms} ms, ring to delivery p50 ${armStats(feedStats.ringToDeliverMs).p50Ms} ms p95 ${armStats(feedStats.ringToDeliverMs).p95Ms} ms; ${r.events} events delivered, delivery p50 ${armStats(r.latencies).p50Ms} ms p95 ${armStats(r.latencies).p95Ms} ms; the worker's share p50 ${armStats(split.workerMs).p50Ms} ms p95 ${armStats(split.workerMs).p95Ms} ms, from the commit p50 ${armStats(split.apiMs).p50Ms} ms p95 ${armStats(split.apiMs).p95Ms} ms (n=${split.apiMs.length}); log reads p50 ${readMs.p50Ms} ms p95 ${readMs.p95Ms} ms`,
      );
      out[phase.name] = {
        stats: armStats(r.latencies),
        workerShare: armStats(split.workerMs),
        apiShare: armStats(split.apiMs),
        logReadMs: readMs,
        byType: Object.fromEntries(Object.entries(r.byType).map(([k, v]) => [k, armStats(v)])),
        events: r.events,
        sendToIdleMs: armStats(sendToIdle),
        queriesPerS: Math.round(((api.queries() - busy0.q) / busyElapsed) * 10) / 10,
        historyPollsPerS: Math.round(((doorbellStats.historyPolls - busy0.p) / busyElapsed) * 10) / 10,
        idleQueriesPerS,
        idleHistoryPollsPerS,
        pushedRings: feedStats.pushedRings - busy0.pushed,
        logReads: feedStats.logReads - busy0.reads,
        pushWaits: feedStats.pushWaits - busy0.waits,
        ringLagMs: armStats(feedStats.ringLagMs),
        ringToDeliverMs: armStats(feedStats.ringToDeliverMs),
      };
    }
    return out;
  } finally {
    await clients.stop();
    // Followers outlive their streams by 15 s; ended while followed, every session would be read once more.
    for (const end = Date.now() + 30_000; feedStats.followers > 0 && Date.now() < end;) await sleep(500);
    await Promise.all(
      ids.map((id) =>
        api.client.workflow
          .getHandle(id)
          .signal(endSignal, { reason: 'benchmark' })
          .catch(() => undefined),
      ),
    );
    // The next arm starts once the worker has closed them all.
    await Promise.all(
      ids.map((id) =>
        api.client.workflow
          .getHandle(id)
          .result()
          .catch(() => undefined),
      ),
    );
  }
}

/** A floor worker (bench/floor-worker-child.ts) in a process of its own on the stack's server. */
async function spawnFloorWorker(ctx: Ctx, taskQueue: string): Promise<{ stop(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(__dirname, 'floor-worker-child.ts')],
    {
      env: {
        ...process.env,
        ...ctx.stack.childEnv({
          FLOOR_TASK_QUEUE: taskQueue,
          FLOOR_CODEC_KEY: TEST_CODEC_KEY,
          BRAIN_WORKFLOW_STACK_TRACES: 'off',
        }),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const ready = await Promise.race([
    lines.next().then((l) => !l.done),
    exited.then(() => false),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 120_000))),
  ]);
  clearTimeout(timer);
  if (!ready) {
    await stop();
    throw new Error(`floor worker not ready: ${err.trim().split('\n').slice(-3).join(' ')}`);
  }
  return { stop };
}

/**
 * Temporal's own delivery under the same load as (b)'s `1000x1` phases: `sessions` floor workflows
 * (bench/floor-workflow.ts) on a floor worker in a process of its own with the platform's worker options (a cache of
 * 150, so a turn on one of 1,000 sessions mostly replays it, as a platform turn does), each turn one `brain`
 * activity that makes a model call with the platform sessions' model latency. A turn is the client's update; its
 * delivery is from the workflow time of the turn's last task (the update's result: what `processed_at` is to an
 * event) to the update's answer reaching the client. The phases' lanes are (b)'s.
 */
async function floorDelivery(ctx: Ctx, sessions: number, phases: Phase[]): Promise<Record<string, FloorDelivery>> {
  const taskQueue = uniqueId('bench-floor-delivery');
  const worker = await spawnFloorWorker(ctx, taskQueue);
  const floorWorker = { taskQueue, hostQueue: `${taskQueue}-host`, stop: () => worker.stop() };
  const handles: WorkflowHandle[] = [];
  const out: Record<string, FloorDelivery> = {};
  try {
    for (let i = 0; i < sessions; i += 20) {
      const started = await Promise.allSettled(
        Array.from({ length: Math.min(20, sessions - i) }, () =>
          startFloorSession(ctx.stack, floorWorker, ['brain'], {
            modelCall: true,
            firstByteDelayMs: SETTINGS.modelFirstByteMs,
          }),
        ),
      );
      // Every workflow that started is ended below, even when another of its batch failed to start.
      for (const s of started) if (s.status === 'fulfilled') handles.push(s.value);
      const failed = started.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
    }
    ctx.log(`  floor: ${sessions} floor sessions started`);
    let first = 0;
    for (const phase of phases) {
      const latencies: number[] = [];
      const sendToAnswer: number[] = [];
      const base = first;
      const lane = async (j: number) => {
        for (let k = base + j; k < base + phase.turns; k += phase.active) {
          const t0 = now();
          const end = await handles[k % sessions].executeUpdate(floorTurnUpdate, { args: [`turn ${k}`] });
          const t1 = now();
          latencies.push(t1 - end);
          sendToAnswer.push(t1 - t0);
        }
      };
      await Promise.all(Array.from({ length: phase.active }, (_, j) => lane(j)));
      first += phase.turns;
      out[phase.name] = { stats: armStats(latencies), sendToAnswerMs: armStats(sendToAnswer) };
      ctx.log(
        `  floor ${sessions} ${phase.name}: ${latencies.length} turns, ${phase.active} at a time; delivery p50 ${out[phase.name].stats.p50Ms} ms p95 ${out[phase.name].stats.p95Ms} ms; send to answer p50 ${out[phase.name].sendToAnswerMs.p50Ms} ms p95 ${out[phase.name].sendToAnswerMs.p95Ms} ms`,
      );
    }
    return out;
  } finally {
    try {
      // Ended by their signal within a minute, or terminated: a floor worker that died cannot end them.
      const bound = new AbortController();
      const ended = await Promise.race([
        Promise.all(handles.map((h) => endFloor(h))).then(() => true),
        sleep(60_000, false, { signal: bound.signal }),
      ]);
      bound.abort();
      if (!ended) await Promise.all(handles.map((h) => h.terminate('benchmark').catch(() => undefined)));
    } finally {
      await worker.stop();
    }
  }
}

interface FloorDelivery {
  stats: ArmStats;
  sendToAnswerMs: ArmStats;
}

/** Each handover of `id`: from the sealing activity's scheduling in the old run to the new run's first completed workflow task. */
async function handoverTimes(client: Client, id: string): Promise<number[]> {
  const runs = await runsOf(client, id);
  const out: number[] = [];
  for (let i = 0; i + 1 < runs.length; i++) {
    if (runs[i].status.name !== 'CONTINUED_AS_NEW') continue;
    const old = (await client.workflow.getHandle(id, runs[i].runId).fetchHistory()).events ?? [];
    const next = (await client.workflow.getHandle(id, runs[i + 1].runId).fetchHistory()).events ?? [];
    const sealed = [...old].reverse().find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    const resumed = next.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    if (sealed && resumed) out.push(eventMs(resumed) - eventMs(sealed));
  }
  return out;
}

/** (c) Handovers on a dev server of their own that suggests continue-as-new after 40 history events. */
export async function handovers(ctx: Ctx): Promise<Record<'no_streams' | 'streams_100', number[]>> {
  let env: TestWorkflowEnvironment | undefined;
  let worker: ChildWorker | undefined;
  let api: Awaited<ReturnType<typeof startApi>> | undefined;
  const clients: StreamClients[] = [];
  try {
    env = await createTestEnv([
      ...DEV_SERVER_DYNAMIC_CONFIG,
      '--dynamic-config-value',
      'limit.historyCount.suggestContinueAsNew=40',
    ]);
    worker = await spawnWorker({
      TEMPORAL_ADDRESS: env.address,
      ANTHROPIC_BASE_URL: ctx.stack.mock.url,
      ANTHROPIC_API_KEY: 'test-key',
    });
    api = await startApi(env.client, ctx.log);
    const [quiet, watched] = await createSessions(api.sdk, 2);
    ctx.stack.model(quiet);
    ctx.stack.model(watched);
    const c = new StreamClients(api.api.url, api.key, [{ id: watched, streams: 100 }]);
    clients.push(c);
    await c.ready();
    let turns = 0;
    const a = api;
    await interleave<'no_streams' | 'streams_100'>(
      ['no_streams', 'streams_100'],
      ctx.quick ? 4 : 20,
      0,
      async (arm) => {
        const id = arm === 'no_streams' ? quiet : watched;
        // Enough turns for a handover or two (about 13 history events a turn).
        for (let t = 0; t < 4; t++) {
          await say(a.sdk, id, `turn ${turns++}`);
          const handle = env!.client.workflow.getHandle(id);
          for (const end = Date.now() + 60_000; ;) {
            const s = await handle.query(statusQuery);
            if (s.state !== 'running') break;
            if (Date.now() > end) throw new Error(`session ${id}: turn did not end`);
            await sleep(20);
          }
        }
        return 0;
      },
      (m) => ctx.log(`  handovers ${m}`),
    );
    for (const id of [quiet, watched])
      ctx.log(`  handovers: ${id} ran ${(await runsOf(env.client, id)).map((r) => r.status.name).join(', ')}`);
    return {
      no_streams: await handoverTimes(env.client, quiet),
      streams_100: await handoverTimes(env.client, watched),
    };
  } finally {
    for (const c of clients) await c.stop();
    await api?.api.stop().catch(() => undefined);
    await worker?.kill().catch(() => undefined);
    await env?.teardown().catch(() => undefined);
  }
}

export async function runApiStream(ctx: Ctx): Promise<BenchResult[]> {
  const worker = await spawnWorker(ctx.stack.childEnv());
  const api = await startApi(ctx.stack.client, ctx.log);
  const results: BenchResult[] = [];
  try {
    ctx.log('api_stream: send -> first agent.message, API against the Temporal client');
    const first = await sendToFirstMessage(ctx, ctx.stack.client, api.sdk);
    const direct = armStats(first.direct);
    const viaApi = armStats(first.api);
    const added = {
      p50Ms: Math.round((viaApi.p50Ms - direct.p50Ms) * 10) / 10,
      p95Ms: Math.round((viaApi.p95Ms - direct.p95Ms) * 10) / 10,
    };
    results.push({
      name: 'api_first_message',
      arms: { direct, api: viaApi },
      ratioTo: { api: 'direct' },
      addedByApi: added,
      goal: { addedP50Ms: 20 },
      notes: `From the client's send (events.send through the SDK, or the sendMessage update) to the first agent.message (on the SDK's stream, or in the log's query polled every ${DIRECT_POLL_MS} ms); model first byte ${SETTINGS.modelFirstByteMs} ms. The API adds ${added.p50Ms} ms at p50 and ${added.p95Ms} ms at p95 (goal: at most 20 ms at p50). One session per arm, the same agent file, turns interleaved.`,
    });

    // Each shape opens its streams once, then runs turns one session at a time (`steady`: what the open streams
    // cost a delivery) and then many at once (`busy`: what the turns' load on these 2 cores costs it). 1x1 is the
    // floor: one stream, the same steady turns.
    const q = ctx.quick;
    const plan: { sessions: number; streams: number; idleS: number; phases: Phase[] }[] = [
      { sessions: 1, streams: 1, idleS: 2, phases: [{ name: 'steady', active: 1, turns: q ? 20 : 40 }] },
      {
        sessions: q ? 300 : 1000,
        streams: 1,
        idleS: q ? 10 : 25,
        phases: [
          { name: 'steady', active: 1, turns: q ? 20 : 60 },
          { name: 'busy', active: q ? 20 : 25, turns: q ? 100 : 250 },
        ],
      },
      {
        sessions: 10,
        streams: 100,
        idleS: q ? 10 : 25,
        phases: [
          { name: 'steady', active: 1, turns: q ? 20 : 40 },
          { name: 'busy', active: 10, turns: q ? 30 : 60 },
        ],
      },
    ];
    const arms: BenchResult['arms'] = {};
    const ratioTo: Record<string, string> = {};
    const detail: Record<string, Omit<Delivery, 'stats'>> = {};
    const floorDetail: Record<string, Omit<FloorDelivery, 'stats'>> = {};
    const described: string[] = [];
    for (const p of plan) {
      ctx.log(`api_stream: delivery with ${p.sessions} sessions x ${p.streams} streams`);
      const shape = `${p.sessions}x${p.streams}`;
      const byPhase = await delivery(ctx, api, p.sessions, p.streams, p.idleS, p.phases);
      for (const ph of p.phases) {
        const arm = ph.name === 'steady' ? shape : `${shape}_${ph.name}`;
        const { stats, ...rest } = byPhase[ph.name];
        arms[arm] = stats;
        arms[`${arm}_from_commit`] = rest.apiShare;
        detail[arm] = rest;
        if (arm !== '1x1') ratioTo[arm] = ph.name === 'steady' ? '1x1' : shape;
        described.push(
          `${arm}: ${ph.active} session(s) taking turns at a time, ${ph.turns} turns; the worker's share (processed_at to its task's commit) p50 ${rest.workerShare.p50Ms} / p95 ${rest.workerShare.p95Ms} ms; the Temporal server saw ${rest.queriesPerS} queries/s and ${rest.historyPollsPerS} history long polls/s meanwhile`,
        );
      }
      described.push(
        `${shape} idle: ${byPhase[p.phases[0].name].idleQueriesPerS} queries/s, ${byPhase[p.phases[0].name].idleHistoryPollsPerS} long polls/s over ${p.idleS} s with every session idle and every stream open`,
      );
      if (p !== plan[1]) continue;
      // Temporal's own delivery under the same phases, on as many floor workflows.
      ctx.log(`api_stream: the floor's delivery with ${p.sessions} floor sessions`);
      // One sample per floor turn against the platform's several events per turn: the steady phase, one turn at a
      // time, takes three times the turns so that its p95 rests on as many samples as the busy phase's.
      const floorPhases = await floorDelivery(
        ctx,
        p.sessions,
        p.phases.map((ph) => (ph.active === 1 ? { ...ph, turns: ph.turns * 3 } : ph)),
      );
      for (const ph of p.phases) {
        const arm = ph.name === 'steady' ? `floor_${shape}` : `floor_${shape}_${ph.name}`;
        arms[arm] = floorPhases[ph.name].stats;
        if (ph.name !== 'steady') ratioTo[arm] = `floor_${shape}`;
        floorDetail[arm] = { sendToAnswerMs: floorPhases[ph.name].sendToAnswerMs };
      }
    }
    const open1000 = plan.filter((p) => p.sessions * p.streams >= 1000).map((p) => `${p.sessions}x${p.streams}`);
    const met = open1000.every((a) => arms[a].p95Ms < 100);
    // Delivery under load: the busy phase of 1,000 sessions x 1 stream against its steady phase, over the same streams.
    const busyShape = `${plan[1].sessions}x${plan[1].streams}`;
    const underLoad = goal(
      `delivery p95, ${plan[1].phases[1].active} of ${plan[1].sessions} sessions turning at once / one at a time`,
      arms[`${busyShape}_busy`].p95Ms / arms[busyShape].p95Ms,
      '<=',
      2,
    );
    // The same ratio for Temporal's own floor under the same phases, and the platform's busy p95 against the floor's.
    const floorBusy = arms[`floor_${busyShape}_busy`];
    const floorSteady = arms[`floor_${busyShape}`];
    const floorUnderLoad = ratio(floorBusy, floorSteady).p95;
    const busyOverFloorBusy = ratio(arms[`${busyShape}_busy`], floorBusy).p95;
    results.push({
      name: 'api_stream_delivery',
      server: ctx.stack.server,
      arms,
      ratioTo,
      plan,
      detail,
      floorDetail,
      floor: { busyOverSteadyP95: floorUnderLoad, platformBusyOverFloorBusyP95: busyOverFloorBusy },
      goals: [underLoad],
      goal: { p95Ms: 100, arms: open1000, met },
      notes: `Delivery latency on one API process (raw SSE clients in a child process): the event's processed_at (its workflow time in the log) to its arrival; *_from_commit: from the commit of the workflow task that appended it. ${described.join('; ')}. Goal: p95 under 100 ms with ${open1000.join(' and ')} streams open: ${open1000.map((a) => `${a} ${arms[a].p95Ms} ms`).join(', ')} (${met ? 'met' : 'not met'}); under the busy phases' load: ${open1000.map((a) => `${a}_busy ${arms[`${a}_busy`].p95Ms} ms`).join(', ')}; ${busyShape}_busy / ${busyShape} at p95 ${underLoad.value} (goal <= 2: ${underLoad.met ? 'met' : 'not met'}). Temporal's own floor under the same phases (floor_${busyShape}*: ${plan[1].sessions} floor workflows on a floor worker in a process of its own with the platform's worker options, a turn one activity that makes a model call with the same latency, its delivery from the workflow time of the turn's last task to the update's answer at the client): steady p95 ${floorSteady.p95Ms} ms, busy ${floorBusy.p95Ms} ms, busy / steady ${floorUnderLoad}; the platform's busy p95 / the floor's ${busyOverFloorBusy}.`,
    });
  } finally {
    await api.api.stop().catch(() => undefined);
    await worker.kill().catch(() => undefined);
  }

  ctx.log('api_stream: handovers with and without 100 streams open');
  const h = await handovers(ctx);
  const quiet = armStats(h.no_streams);
  const watched = armStats(h.streams_100);
  results.push({
    name: 'api_stream_handover',
    arms: { no_streams: quiet, streams_100: watched },
    ratioTo: { streams_100: 'no_streams' },
    notes: `Handover time (the archive-sealing activity scheduled in the old run to the first completed workflow task of the new run), on a dev server of its own that suggests continue-as-new after 40 history events, for a session with no stream and one with 100 SDK-framed SSE streams open; ${watched.n} and ${quiet.n} handovers.`,
  });
  return results;
}
