// The platform against Temporal's own floor on the same server: a no-op workflow of the same shape as a platform
// turn (bench/floor-workflow.ts: the same workflow tasks and activities per turn, on the same kinds of queue, with
// empty activity bodies), run by a worker with the platform's worker options (eager activities on the server).
// floor_overhead: per-activity overhead of a platform turn (tool call) against the floor's per-activity time.
// floor_throughput: turns per second per core at saturation (text turns, model without latency) against the floor's.
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type WorkflowClientInterceptor, type WorkflowHandle } from '@temporalio/client';
import { doorbellStats } from '../src/log/history-doorbell';
import { queryRetryInterceptor } from '../src/log/query-retry';
import { LiveSessionLog } from '../src/log/session-log';
import { SessionFeeds } from '../src/api/sessions/feed';
import type { ApiSessionEvent } from '../src/api/sessions/projection';
import { parseCodecKeys } from '../src/codec/codec-keys';
import { TEST_CODEC_KEY } from '../test/helpers/test-keys';
import type { DataConverter } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { sendMessageUpdate } from '../src/session/contract';
import { DEFAULT_WORKFLOW_CACHE } from '../src/worker';
import { testAgent, testDataConverter, uniqueId } from '../test/helpers/env';
import {
  floorEndSignal,
  floorTurnUpdate,
  floorWorkflow,
  type FloorActivities,
  type FloorInput,
} from './floor-workflow';
import { AnthropicModelClient } from '../src/model/model-client';
import type { ApiMessage } from '../src/session/context';
import {
  SETTINGS,
  armStats,
  endSession,
  goal,
  interleave,
  percentile,
  totalCpuSeconds,
  type BenchResult,
  type Ctx,
  type Goal,
  type Stack,
} from './lib';
import {
  ACTIVITIES_PER_TURN,
  BENCH_AGENT,
  agentRequest,
  InProcessLoop,
  MODEL_CALLS_PER_TURN,
  platformTurn,
  profile,
  turnText,
} from './turn-overhead';

/** The platform worker's options that shape a turn's dispatch (src/worker.ts): sticky timeout, cache, heartbeat throttle. */
const PLATFORM_WORKER_OPTIONS = {
  stickyQueueScheduleToStartTimeout: '2 seconds',
  maxCachedWorkflows: DEFAULT_WORKFLOW_CACHE,
  maxHeartbeatThrottleInterval: '200 ms',
} as const;

export interface FloorWorker {
  taskQueue: string;
  hostQueue: string;
  stop(): Promise<void>;
}

/** Where a floor worker connects: the stack's server and namespace, and its model server for `floor_model`. */
export interface FloorTarget {
  address: string;
  namespace: string;
  modelUrl: string;
  /** The payload codec's converter; the test processes' by default. */
  dataConverter?: DataConverter;
}

/**
 * A worker of the floor workflow: one Worker on its own queue (workflows and the `brain` activities, which the
 * server hands back eagerly as it does the platform's model calls) and one on a host queue (the `host` activities,
 * as a hands host polls its own), on one native connection, in this process, as `stack.worker()` runs the platform.
 * Given a `Stack`, it runs on that stack; bench/floor-worker-child.ts runs one in a process of its own.
 */
export async function startFloorWorker(
  at: Stack | FloorTarget,
  taskQueue = uniqueId('bench-floor'),
): Promise<FloorWorker> {
  const target: FloorTarget =
    'env' in at ? { address: at.env.address, namespace: at.namespace, modelUrl: at.mock.url } : at;
  const hostQueue = `${taskQueue}-host`;
  const connection = await NativeConnection.connect({ address: target.address });
  const activities: FloorActivities = { noop: waitingNoop, model: floorModelCall(target.modelUrl) };
  const common = {
    connection,
    namespace: target.namespace,
    dataConverter: target.dataConverter ?? testDataConverter(),
    activities,
  };
  const workers = [
    await Worker.create({
      ...common,
      ...PLATFORM_WORKER_OPTIONS,
      taskQueue,
      workflowsPath: require.resolve('./floor-workflow'),
    }),
    await Worker.create({ ...common, taskQueue: hostQueue }),
  ];
  const running = workers.map((w) => w.run());
  return {
    taskQueue,
    hostQueue,
    async stop() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.allSettled(running);
      await connection.close().catch(() => undefined);
    },
  };
}

/** What the `noop` activities of each floor workflow run by this process waited, in ms, in order. */
const waits = new Map<string, number[]>();

/** The `noop` activity: nothing, or, given `waitMs`, a wait that long, measured and kept for `waitedMs`. */
async function waitingNoop(waitMs?: number): Promise<void> {
  if (!waitMs) return;
  const t0 = performance.now();
  await sleep(waitMs);
  const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
  const list = waits.get(workflowId) ?? [];
  waits.set(workflowId, list);
  list.push(performance.now() - t0);
}

/** The waits the `noop` activities of floor workflow `workflowId` have made in this process so far, in ms. */
export function waitedMs(workflowId: string): readonly number[] {
  return waits.get(workflowId) ?? [];
}

/**
 * The floor's model call: the request a platform session of `testAgent()` sends for a text turn (its model, system
 * prompt, tools, output limit and caching, the conversation so far), through the platform's model client to the
 * model server at `modelUrl`. The conversation is kept here, per session, as the in-process loop keeps its own.
 */
function floorModelCall(modelUrl: string): FloorActivities['model'] {
  const agent = testAgent();
  const client = new AnthropicModelClient({ apiKey: 'test-key', baseURL: modelUrl });
  const conversations = new Map<string, ApiMessage[]>();
  return async (sessionId, text) => {
    const messages = conversations.get(sessionId) ?? [];
    conversations.set(sessionId, messages);
    messages.push({ role: 'user', content: [{ type: 'text', text }] } as ApiMessage);
    const reply = await client.createMessage(agentRequest(agent, sessionId, messages), {});
    messages.push({ role: 'assistant', content: reply.content } as ApiMessage);
  };
}

/**
 * Starts a floor session whose turns run `shape`, with a session's default limits; with `modelCall`, its `brain`
 * activities call the model (the stack's model server answers its id at once, or after `firstByteDelayMs`).
 */
export async function startFloorSession(
  stack: Stack,
  worker: FloorWorker,
  shape: FloorInput['shape'],
  opts: { modelCall?: boolean; firstByteDelayMs?: number; waitMs?: number[] } = {},
): Promise<WorkflowHandle<typeof floorWorkflow>> {
  const { limits } = testAgent();
  const workflowId = uniqueId(opts.modelCall ? 'bench-floor-model' : 'bench-floor');
  if (opts.modelCall) stack.model(workflowId, [], opts.firstByteDelayMs ?? 0);
  return stack.client.workflow.start(floorWorkflow, {
    taskQueue: worker.taskQueue,
    workflowId,
    args: [
      {
        ...(opts.modelCall ? { modelCall: true } : {}),
        ...(opts.waitMs ? { waitMs: opts.waitMs } : {}),
        shape,
        hostQueue: worker.hostQueue,
        brainHeartbeatMs: limits.modelHeartbeatTimeoutMs,
        hostHeartbeatMs: limits.handsHeartbeatTimeoutMs,
        hostScheduleToStartMs: limits.handsScheduleToStartMs,
      },
    ],
  });
}

/** One floor turn, timed as a platform turn is: the client's update to the workflow time of the turn's last task. */
export async function floorTurn(handle: WorkflowHandle, text: string): Promise<number> {
  const t0 = Date.now();
  const end = await handle.executeUpdate(floorTurnUpdate, { args: [text] });
  return end - t0;
}

export async function endFloor(handle: WorkflowHandle | undefined): Promise<void> {
  if (!handle) return;
  await handle.signal(floorEndSignal).catch(() => undefined);
  await handle.result().catch(() => undefined);
}

const r1 = (n: number) => Math.round(n * 10) / 10;

/**
 * The waits of the timed floor's activities, in a turn's order: about what the loop's own calls take at p50 (the
 * model's tool_use reply, the execute, the model's text reply; 385 to 390, 79 to 94 and 457 to 464 ms in the runs).
 */
const TIMED_FLOOR_WAIT_MS = [390, 90, 460];

export async function runFloorOverhead(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const WARMUP = ctx.quick ? 1 : 2;
  const TURNS_RUN = ctx.quick ? 15 : 40;
  const dockerHost = await resolveDockerHost();
  if (!dockerHost) throw new Error('no Docker engine');
  const provider = new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage() });
  const worker = await stack.worker();
  const floorWorker = await startFloorWorker(stack);
  const loop = new InProcessLoop(ctx, provider, uniqueId('bench-floor-inprocess'));
  stack.model(loop.id);
  const id = uniqueId('bench-floor-platform');
  stack.model(id);
  let handle: WorkflowHandle | undefined;
  let floor: WorkflowHandle | undefined;
  let floorTimed: WorkflowHandle | undefined;
  try {
    await loop.provision();
    handle = await stack.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: id,
      args: [{ agent: BENCH_AGENT() }],
    });
    // The platform turn: callModel (brain queue, eager), execute (the hands host's queue), callModel.
    floor = await startFloorSession(stack, floorWorker, ['brain', 'host', 'brain']);
    // The same floor with activities that wait as long as the loop's calls take: a turn as long as the platform's.
    floorTimed = await startFloorSession(stack, floorWorker, ['brain', 'host', 'brain'], {
      waitMs: TIMED_FLOOR_WAIT_MS,
    });
    const h = handle;
    const f = floor;
    const ft = floorTimed;
    const samples = await interleave<'inprocess' | 'platform' | 'floor' | 'floor_timed'>(
      ['inprocess', 'platform', 'floor', 'floor_timed'],
      TURNS_RUN,
      WARMUP,
      async (arm, round) => {
        if (arm === 'platform') return platformTurn(stack, h, turnText(round));
        if (arm === 'floor') return floorTurn(f, turnText(round));
        if (arm === 'floor_timed') {
          // Its turn beyond what its activities waited (measured in them): the floor's own time in that turn.
          const before = waitedMs(ft.workflowId).length;
          const ms = await floorTurn(ft, turnText(round));
          return (
            ms -
            waitedMs(ft.workflowId)
              .slice(before)
              .reduce((a, b) => a + b, 0)
          );
        }
        const t0 = Date.now();
        await loop.turn(turnText(round));
        return Date.now() - t0;
      },
      (m) => ctx.log(`  floor_overhead ${m}`),
    );
    const inprocess = armStats(samples.inprocess);
    const platform = armStats(samples.platform);
    const floorStats = armStats(samples.floor);
    const floorTimedStats = armStats(samples.floor_timed);
    const prof = await profile(h, TURNS_RUN);
    const floorProf = await profile(f, TURNS_RUN);
    const floorTimedProf = await profile(ft, TURNS_RUN);
    const modelMs = loop.modelMs.slice(-MODEL_CALLS_PER_TURN * TURNS_RUN);
    const inModel = percentile(modelMs, 0.5);
    // The loop's model calls by their place in the turn (a tool_use reply, then a text one, which stream differently),
    // against the platform's callModel activities at the same place: a median of both kinds together falls between.
    const inModelByCall = Array.from({ length: MODEL_CALLS_PER_TURN }, (_, k) =>
      percentile(
        modelMs.filter((_, i) => i % MODEL_CALLS_PER_TURN === k),
        0.5,
      ),
    );
    const inExecute = percentile(loop.executeMs.slice(-TURNS_RUN), 0.5);
    const perActivity = (platform.p50Ms - inprocess.p50Ms) / ACTIVITIES_PER_TURN;
    const perActivityP95 = (platform.p95Ms - inprocess.p95Ms) / ACTIVITIES_PER_TURN;
    // The same, with the model and the exec's own time taken from the loop's medians instead of its whole turn.
    const perActivityByParts = (platform.p50Ms - MODEL_CALLS_PER_TURN * inModel - inExecute) / ACTIVITIES_PER_TURN;
    const floorPerActivity = floorStats.p50Ms / ACTIVITIES_PER_TURN;
    const ratioP50 = perActivity / floorPerActivity;
    const ratioP95 = perActivityP95 / (floorStats.p95Ms / ACTIVITIES_PER_TURN);
    const timedPerActivity = floorTimedStats.p50Ms / ACTIVITIES_PER_TURN;
    const timedP50 = perActivity / timedPerActivity;
    const timedP95 = perActivityP95 / (floorTimedStats.p95Ms / ACTIVITIES_PER_TURN);
    // Where the platform's time beyond the timed floor goes, per turn, from the two histories (medians). The
    // activities' own excess is against the loop's calls; the floor's activities have theirs inside its remainder.
    const tasks = prof.workflowTasksPerTurn;
    const against = floorTimedProf;
    const remainder = {
      perTurnMs: r1(platform.p50Ms - inprocess.p50Ms - floorTimedStats.p50Ms),
      workflowTaskRunMs: r1(tasks * prof.workflowTaskRun - against.workflowTasksPerTurn * against.workflowTaskRun),
      workflowTaskDispatchMs: r1(
        tasks * prof.workflowTaskScheduleToStart - against.workflowTasksPerTurn * against.workflowTaskScheduleToStart,
      ),
      callModelBeyondModelMs: r1(inModelByCall.reduce((a, m, k) => a + (prof.callModelRunByCall[k] ?? NaN) - m, 0)),
      executeBeyondExecMs: r1(prof.executeRun - inExecute),
      completionToNextTaskMs: r1(
        ACTIVITIES_PER_TURN *
          (prof.activityCompletedToNextWorkflowTaskStart - against.activityCompletedToNextWorkflowTaskStart),
      ),
      activityDispatchMs: r1(ACTIVITIES_PER_TURN * (prof.activityScheduleToStart - against.activityScheduleToStart)),
    };
    const gTimed = goal(
      "per-activity overhead of a platform turn / Temporal's floor for a turn of the same shape and length (p50)",
      timedP50,
      '<=',
      1.25,
    );
    const g = goal(
      "per-activity overhead of a platform turn / the no-op floor's per-activity time, empty bodies (p50)",
      ratioP50,
      '<=',
      1.25,
    );
    const met = (x: Goal) => (x.met ? 'met' : 'not met');
    const notes = [
      `${TURNS_RUN} turns per arm after ${WARMUP} warm-up turns, interleaved, on the ${stack.server} server. inprocess: the model call (bash tool_use), the execute in a gVisor sandbox and the model call (text), called directly (model first byte ${SETTINGS.modelFirstByteMs} ms); platform: the same turn as a session (${tasks} workflow tasks, ${ACTIVITIES_PER_TURN} activities per turn); floor: a no-op workflow of the same shape (${floorProf.workflowTasksPerTurn} workflow tasks per turn, activities callModel-like on the workflow's queue with eager dispatch, execute-like on a host queue, callModel-like; empty bodies, the session's timeouts), on the same server, run by an in-process worker with the platform's worker options; floor_timed: the same floor whose activities wait ${TIMED_FLOOR_WAIT_MS.join(', ')} ms (about the loop's calls), so that its turn lasts as long as the platform's, its arm the turn beyond those waits (measured in the activities).`,
      `Overhead per activity = (platform turn - inprocess turn, i.e. the model's and the exec's own time) / ${ACTIVITIES_PER_TURN}: ${r1(perActivity)} ms at p50 (${r1(perActivityByParts)} ms with the loop's median model call ${r1(inModel)} ms and execute ${r1(inExecute)} ms subtracted instead). Against the timed floor's ${r1(timedPerActivity)} ms per activity (${floorTimedStats.p50Ms} ms per turn beyond its waits): ${timedP50.toFixed(3)}x (goal <= 1.25: ${met(gTimed)}); at p95 ${timedP95.toFixed(3)}x. Against the empty floor's ${r1(floorPerActivity)} ms (its whole turn ${floorStats.p50Ms} ms, over before any timeout of its tasks comes due): ${ratioP50.toFixed(3)}x (${met(g)}); at p95 ${ratioP95.toFixed(3)}x.`,
      `Beyond the timed floor, per turn (${remainder.perTurnMs} ms at p50), from the histories' medians: workflow task processing ${remainder.workflowTaskRunMs} ms (platform ${tasks} x ${prof.workflowTaskRun} ms against timed floor ${against.workflowTasksPerTurn} x ${against.workflowTaskRun} ms; empty floor ${floorProf.workflowTaskRun} ms), workflow task dispatch ${remainder.workflowTaskDispatchMs} ms, activity dispatch ${remainder.activityDispatchMs} ms, activity completion to the next task ${remainder.completionToNextTaskMs} ms (platform ${prof.activityCompletedToNextWorkflowTaskStart}, timed floor ${against.activityCompletedToNextWorkflowTaskStart}, empty floor ${floorProf.activityCompletedToNextWorkflowTaskStart} ms each), callModel beyond the model ${remainder.callModelBeyondModelMs} ms (by the call's place in the turn, ${prof.callModelRunByCall.join(' and ')} ms in the activity against ${inModelByCall.map(r1).join(' and ')} ms in the loop), execute beyond the exec ${remainder.executeBeyondExecMs} ms (${prof.executeRun} against ${r1(inExecute)} ms); the last two hold the SDK's path to and from an activity, which the floor's activities have inside its remainder.`,
    ].join(' ');
    return [
      {
        name: 'floor_overhead',
        server: stack.server,
        arms: { inprocess, platform, floor: floorStats, floor_timed: floorTimedStats },
        ratioTo: { platform: 'inprocess' },
        perActivityMs: {
          platform: r1(perActivity),
          platformByParts: r1(perActivityByParts),
          floor: r1(floorPerActivity),
          floorTimed: r1(timedPerActivity),
        },
        ratio: { p50: Math.round(ratioP50 * 1000) / 1000, p95: Math.round(ratioP95 * 1000) / 1000 },
        ratioTimed: { p50: Math.round(timedP50 * 1000) / 1000, p95: Math.round(timedP95 * 1000) / 1000 },
        goals: [gTimed, g],
        profileMs: {
          platform: prof,
          floor: floorProf,
          floorTimed: floorTimedProf,
          inprocessModelCall: r1(inModel),
          inprocessModelCallByCall: inModelByCall.map(r1),
          inprocessExecute: r1(inExecute),
        },
        remainderMs: remainder,
        notes,
      },
    ];
  } finally {
    if (handle) await endSession(handle);
    await endFloor(floor);
    await endFloor(floorTimed);
    await loop.destroy();
    await floorWorker.stop();
    await worker.shutdown().catch(() => undefined);
  }
}

interface Window {
  turns: number;
  wallS: number;
  /** CPU seconds of this process (the worker, the clients, the model server) and of the Temporal server. */
  benchCpuS: number;
  serverCpuS: number;
  latencies: number[];
}

/** A session whose turn failed (it leaves the arm), with why. */
interface Failed {
  sessionId: string;
  error: string;
}

/** `sessions` closed loops of turns for `seconds`: every loop starts its next turn when its last one ends. */
async function saturate(
  stack: Stack,
  sessions: WorkflowHandle[],
  seconds: number,
  turn: (h: WorkflowHandle, i: number) => Promise<number>,
  failed: Failed[],
): Promise<Window> {
  const pids = stack.serverPids();
  const [c0, s0, t0] = [process.cpuUsage(), totalCpuSeconds(pids), performance.now()];
  const end = Date.now() + seconds * 1000;
  const latencies: number[] = [];
  let i = 0;
  await Promise.all(
    [...sessions].map(async (h) => {
      try {
        while (Date.now() < end) latencies.push(await turn(h, i++));
      } catch (err) {
        // A session that cannot finish a turn leaves the arm; the result lists it.
        failed.push({ sessionId: h.workflowId, error: (err as Error).message.slice(0, 500) });
        sessions.splice(sessions.indexOf(h), 1);
      }
    }),
  );
  const c1 = process.cpuUsage(c0);
  return {
    turns: latencies.length,
    wallS: (performance.now() - t0) / 1000,
    benchCpuS: (c1.user + c1.system) / 1e6,
    serverCpuS: totalCpuSeconds(pids) - s0,
    latencies,
  };
}

export async function runFloorThroughput(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const cores = os.cpus().length;
  const concurrent = Number(process.env.BENCH_FLOOR_SESSIONS ?? (ctx.quick ? 24 : 32));
  const windowS = ctx.quick ? 6 : 15;
  const windows = ctx.quick ? 2 : 4;
  const worker = await stack.worker({ role: 'brain' });
  const floorWorker = await startFloorWorker(stack);
  const platform: WorkflowHandle[] = [];
  const floor: WorkflowHandle[] = [];
  const floorModel: WorkflowHandle[] = [];
  let feeds: SessionFeeds | undefined;
  const unsubscribe: (() => void)[] = [];
  try {
    // A text turn: one model call, no tool; the model answers at once, so the turn is all platform.
    for (let k = 0; k < concurrent; k++) {
      const id = uniqueId('bench-floor-tput');
      stack.model(id, [], 0);
      platform.push(
        await stack.client.workflow.start(sessionWorkflow, {
          taskQueue: BRAIN_TASK_QUEUE,
          workflowId: id,
          args: [{ agent: testAgent() }],
        }),
      );
      floor.push(await startFloorSession(stack, floorWorker, ['brain']));
      floorModel.push(await startFloorSession(stack, floorWorker, ['brain'], { modelCall: true }));
    }
    // The platform's turns are followed as the API follows a session: one feed per session (src/api/sessions/feed.ts)
    // that long-polls the history and takes each completed task's events from the batch its brain worker pushed,
    // reading the log by query only where no batch proves them. Its client counts those queries: reading the log
    // is part of what a turn costs.
    let queries = 0;
    const counting: WorkflowClientInterceptor = {
      query(input, next) {
        queries++;
        return next(input);
      },
    };
    const reader = new Client({
      connection: stack.env.connection,
      namespace: stack.namespace,
      dataConverter: testDataConverter(),
      interceptors: { workflow: [counting, queryRetryInterceptor] },
    });
    feeds = new SessionFeeds(
      new LiveSessionLog(reader),
      reader,
      (m) => ctx.log(`  floor_throughput: ${m}`),
      parseCodecKeys(TEST_CODEC_KEY).current.key,
    );
    /** Per session, the next agent.message's waiter: a text turn appends exactly one. */
    const replies = new Map<string, (e: ApiSessionEvent) => void>();
    for (const h of platform) {
      const feed = await feeds.get(h.workflowId);
      unsubscribe.push(
        feed.subscribe((events) => {
          for (const e of events) if (e.type === 'agent.message') replies.get(h.workflowId)?.(e);
        }),
      );
    }
    const platformTurnText = async (h: WorkflowHandle, i: number) => {
      let timer: NodeJS.Timeout | undefined;
      const reply = new Promise<ApiSessionEvent>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no agent.message within 60 s on ${h.workflowId}`)), 60_000);
        replies.set(h.workflowId, resolve);
      });
      const t0 = Date.now();
      try {
        await h.executeUpdate(sendMessageUpdate, { args: [{ text: `turn ${i}` }] });
        return Date.parse((await reply).processed_at ?? '') - t0;
      } finally {
        clearTimeout(timer);
        replies.delete(h.workflowId);
      }
    };
    const floorTurnText = (h: WorkflowHandle, i: number) => floorTurn(h, `turn ${i}`);
    type Arm = 'platform' | 'floor' | 'floor_model';
    const arms: Record<Arm, Window[]> = { platform: [], floor: [], floor_model: [] };
    const failed: Record<Arm, Failed[]> = { platform: [], floor: [], floor_model: [] };
    const live: Record<Arm, WorkflowHandle[]> = {
      platform: [...platform],
      floor: [...floor],
      floor_model: [...floorModel],
    };
    const reads = { queries: 0, historyPolls: 0 };
    // A short window of each first (caches, JIT), then windows rotating which arm goes first.
    await saturate(stack, live.platform, Math.min(5, windowS), platformTurnText, failed.platform);
    await saturate(stack, live.floor, Math.min(5, windowS), floorTurnText, failed.floor);
    await saturate(stack, live.floor_model, Math.min(5, windowS), floorTurnText, failed.floor_model);
    const rotation: Arm[] = ['platform', 'floor', 'floor_model'];
    for (let w = 0; w < windows; w++) {
      const order = [...rotation.slice(w % 3), ...rotation.slice(0, w % 3)];
      for (const arm of order) {
        const [q0, p0] = [queries, doorbellStats.historyPolls];
        const win = await saturate(
          stack,
          live[arm],
          windowS,
          arm === 'platform' ? platformTurnText : floorTurnText,
          failed[arm],
        );
        arms[arm].push(win);
        if (arm === 'platform') {
          reads.queries += queries - q0;
          reads.historyPolls += doorbellStats.historyPolls - p0;
        }
        ctx.log(
          `  floor_throughput ${w + 1}/${windows} ${arm}: ${win.turns} turns in ${win.wallS.toFixed(1)} s (${(win.turns / win.wallS / cores).toFixed(1)}/s/core), cpu bench ${win.benchCpuS.toFixed(1)} s, server ${win.serverCpuS.toFixed(1)} s`,
        );
      }
    }
    const sum = (ws: Window[], k: 'turns' | 'wallS' | 'benchCpuS' | 'serverCpuS') => ws.reduce((a, x) => a + x[k], 0);
    const rate = (ws: Window[]) => {
      const turns = sum(ws, 'turns');
      const cpuMsPerTurn = ((sum(ws, 'benchCpuS') + sum(ws, 'serverCpuS')) * 1000) / turns;
      return {
        turns,
        turnsPerSecond: r1(turns / sum(ws, 'wallS')),
        turnsPerSecondPerCore: Math.round((turns / sum(ws, 'wallS') / cores) * 100) / 100,
        cpuMsPerTurn: {
          bench: r1((sum(ws, 'benchCpuS') * 1000) / turns),
          server: r1((sum(ws, 'serverCpuS') * 1000) / turns),
          total: r1(cpuMsPerTurn),
        },
        turnsPerCpuSecond: r1(1000 / cpuMsPerTurn),
        machineShare:
          Math.round(((sum(ws, 'benchCpuS') + sum(ws, 'serverCpuS')) / sum(ws, 'wallS') / cores) * 100) / 100,
      };
    };
    const p = rate(arms.platform);
    const f = rate(arms.floor);
    const fm = rate(arms.floor_model);
    const tput = p.turnsPerSecondPerCore / f.turnsPerSecondPerCore;
    const perCpu = p.turnsPerCpuSecond / f.turnsPerCpuSecond;
    // The floor with the model call: what a platform that added nothing to the call could reach against the floor.
    const modelCeiling = fm.turnsPerSecondPerCore / f.turnsPerSecondPerCore;
    const overModelFloor = p.turnsPerSecondPerCore / fm.turnsPerSecondPerCore;
    const r3 = (n: number) => Math.round(n * 1000) / 1000;
    const prof = await profile(live.platform[0] ?? platform[0], 3);
    const floorProf = await profile(live.floor[0] ?? floor[0], 3);
    const platformTurns = arms.platform.reduce((a, w) => a + w.turns, 0);
    const queriesPerTurn = r1(reads.queries / platformTurns);
    const historyPollsPerTurn = r1(reads.historyPolls / platformTurns);
    const g = goal("platform turns per second per core / the no-op floor's, at saturation", tput, '>=', 0.8);
    const notes = [
      `On the ${stack.server} server: ${concurrent} sessions per arm, each a closed loop (its next turn when its last ends), ${windows} windows of ${windowS} s per arm, the three arms rotating which goes first, after one unmeasured window each. platform: a text turn (sendMessage update, one callModel activity, the model answering at once; ${prof.workflowTasksPerTurn} workflow tasks per turn), its end the reply's arrival at a feed of the API's (src/api/sessions/feed.ts: a history long poll per session, each completed task's events from its brain worker's push, the log read by query only where no batch proves them; ${queriesPerTurn} events queries and ${historyPollsPerTurn} history long polls per turn, part of the platform's cost here) and timed to the reply's processed_at; floor: a no-op workflow of the same shape (one activity on the workflow's queue, eager; ${floorProf.workflowTasksPerTurn} workflow tasks per turn), its end the update's return. Both workers in this process with the platform's worker options.`,
      `Turns per second per core (turns / wall seconds / ${cores} cores): platform ${p.turnsPerSecondPerCore} against floor ${f.turnsPerSecondPerCore}: ${tput.toFixed(3)}x (goal >= 0.8: ${g.met ? 'met' : 'not met'}). The stack's processes (this process: workers, clients, model server; the Temporal server) used ${p.machineShare} and ${f.machineShare} of the ${cores} cores (the rest: other users of the machine, Docker, idle). CPU per turn: platform ${p.cpuMsPerTurn.total} ms (this process ${p.cpuMsPerTurn.bench}, server ${p.cpuMsPerTurn.server}) against floor ${f.cpuMsPerTurn.total} ms (${f.cpuMsPerTurn.bench}, ${f.cpuMsPerTurn.server}): turns per CPU second ${perCpu.toFixed(3)}x the floor's.`,
      `floor_model, the floor whose activity makes the platform's model call (the same request of the same agent, the conversation so far, through the platform's model client to the same model server; no reader but the update's return): ${fm.turnsPerSecondPerCore} turns per second per core, CPU per turn ${fm.cpuMsPerTurn.total} ms (${fm.cpuMsPerTurn.bench}, ${fm.cpuMsPerTurn.server}); ${modelCeiling.toFixed(3)}x the floor's rate, the most the ratio above can reach with this model call however little the platform adds to it; the platform ${overModelFloor.toFixed(3)}x floor_model's rate.`,
      failed.platform.length + failed.floor.length + failed.floor_model.length > 0
        ? `Sessions that could not finish a turn and left their arm: platform ${failed.platform.length}, floor ${failed.floor.length}, floor_model ${failed.floor_model.length} (failedSessions has each one's error).`
        : 'Every session finished every turn.',
    ].join(' ');
    return [
      {
        name: 'floor_throughput',
        server: stack.server,
        arms: {
          platform: armStats(arms.platform.flatMap((w) => w.latencies)),
          floor: armStats(arms.floor.flatMap((w) => w.latencies)),
          floor_model: armStats(arms.floor_model.flatMap((w) => w.latencies)),
        },
        ratioTo: { platform: 'floor', floor_model: 'floor' },
        concurrentSessions: concurrent,
        throughput: { platform: p, floor: f, floor_model: fm },
        ratio: {
          turnsPerSecondPerCore: r3(tput),
          turnsPerCpuSecond: r3(perCpu),
          modelCeiling: r3(modelCeiling),
          platformOverFloorModel: r3(overModelFloor),
        },
        readsPerTurn: { queries: queriesPerTurn, historyPolls: historyPollsPerTurn },
        failedSessions: failed,
        goals: [g],
        notes,
      },
    ];
  } finally {
    // A session stuck in a failing workflow task never ends on its own: terminated after 15 s.
    const ended = async (h: WorkflowHandle, end: (h: WorkflowHandle) => Promise<void>) => {
      const done = await Promise.race([end(h).then(() => true), sleep(15_000).then(() => false)]);
      if (!done) await h.terminate('benchmark over').catch(() => undefined);
    };
    for (const u of unsubscribe) u();
    feeds?.close();
    await Promise.all([
      ...platform.map((h) => ended(h, endSession)),
      ...[...floor, ...floorModel].map((h) => ended(h, endFloor)),
    ]);
    await floorWorker.stop();
    await worker.shutdown().catch(() => undefined);
  }
}
