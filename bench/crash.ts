// Crash recovery: SIGKILL the only brain worker while model calls are in flight, and time from the kill to each
// session's next event, with a standby worker already running and with one started after the kill.
import type { WorkflowHandle } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnWorker, type ChildWorker } from '../test/helpers/child-worker';
import { removeHostSandboxes, testAgent, uniqueId } from '../test/helpers/env';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import {
  SETTINGS,
  armStats,
  cpuSeconds,
  endSession,
  interleave,
  metricSum,
  ratio,
  turnFinished,
  waitLive,
  waitRung,
  workerStatus,
  type BenchResult,
  type Ctx,
} from './lib';
import { LimitsSchema } from '../src/session/agent';
import { sendMessageUpdate } from '../src/session/contract';

type Arm = 'standby' | 'standby_heartbeat' | 'cold' | 'standby_previous';
/** Brain workers that leave a dead peer's calls to their heartbeat timeout. */
const PEER_WATCH_OFF = { BRAIN_PEER_WATCH: 'off' };
/** The defaults before recovery was bounded: a 10 s heartbeat timeout, the first retry after 1 s. */
const PREVIOUS_LIMITS = {
  modelHeartbeatTimeoutMs: 10_000,
  modelRetry: { maxAttempts: 10, initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 60_000 },
};
/** What a session gets with no limits of its own (testAgent's own test settings are overridden with these). */
const DEFAULTS = LimitsSchema.parse({});
const DEFAULT_LIMITS = { modelHeartbeatTimeoutMs: DEFAULTS.modelHeartbeatTimeoutMs, modelRetry: DEFAULTS.modelRetry };
const HANDS_HEARTBEAT_MS = 2000;
/** Rounds of each brain arm run first and not counted. */
const WARMUP_ROUNDS = 1;
/** The fewest samples an arm may report, so its p95 means something. */
const MIN_SAMPLES = 20;
const COMMAND = 'sleep 8 && echo done';
/**
 * Both arms kill this long after the commands started: late enough for the standby to be up on a loaded machine
 * (it starts once the commands run, or it would take some of them), early enough that the commands end (8 s)
 * after the kill but before any retry can start (kill + heartbeat timeout + 500 ms).
 */
const KILL_AFTER_MS = 6000;

/**
 * The hands worker killed during `execute`: sessions on an in-process brain worker run a bash command on a
 * child hands worker; once every command is running, that worker gets SIGKILL. The time is from the kill to
 * each session's tool_result, with a second hands worker of the same host already running or started after.
 */
async function handsCrash(ctx: Ctx): Promise<{ standby: number[]; cold: number[]; notes: string }> {
  const { stack } = ctx;
  const hostId = `${stack.hostId}-hands`;
  const env = stack.childEnv({ HANDS_HOST_ID: hostId });
  const live = new Set<ChildWorker>();
  const spawn = async () => {
    const w = await spawnWorker(env, 'hands');
    live.add(w);
    return w;
  };
  const brain = await stack.worker({ role: 'brain' });
  const handles: WorkflowHandle[] = [];
  let infra = 0;
  let early = 0;
  // A session whose command finished before the kill is left out: a few more sessions than the 20 samples needed.
  const rounds = ctx.quick ? 1 : 2;
  const perRound = ctx.quick ? 24 : 12;
  try {
    const samples = await interleave<Arm>(
      ['standby', 'cold'],
      rounds,
      0,
      async (arm) => {
        const doomed = await spawn();
        const round = await Promise.all(
          Array.from({ length: perRound }, async () => {
            const id = uniqueId(`bench-crash-hands-${arm}`);
            stack.model(id);
            const handle = await stack.client.workflow.start(sessionWorkflow, {
              taskQueue: BRAIN_TASK_QUEUE,
              workflowId: id,
              // A first turn provisions the sandbox: many provisions at once spread over seconds on a loaded
              // machine, so the command the kill interrupts starts in a second turn, in every session at once.
              args: [
                {
                  agent: testAgent({ limits: { handsHeartbeatTimeoutMs: HANDS_HEARTBEAT_MS } }),
                  message: { text: 'please run `true`' },
                },
              ],
            });
            handles.push(handle);
            return handle;
          }),
        );
        await Promise.all(round.map((h) => waitLive(h, turnFinished(0), 180_000, 100)));
        const seqs = await Promise.all(
          round.map(
            async (h) =>
              (await h.executeUpdate(sendMessageUpdate, { args: [{ text: `please run \`${COMMAND}\`` }] })).seq,
          ),
        );
        // The command under way: the execute activity is running on the doomed worker.
        await Promise.all(
          round.map((h, i) =>
            waitLive(h, (ev) => ev.some((e) => e.seq > seqs[i] && e.type === 'tool_use'), 120_000, 50, seqs[i]),
          ),
        );
        const running = Date.now();
        let killedAt: number;
        let replacement: ChildWorker;
        if (arm === 'standby') {
          replacement = await spawn();
          await sleep(Math.max(0, running + KILL_AFTER_MS - Date.now()));
          killedAt = Date.now();
          await doomed.kill('SIGKILL');
        } else {
          await sleep(Math.max(0, running + KILL_AFTER_MS - Date.now()));
          killedAt = Date.now();
          await doomed.kill('SIGKILL');
          replacement = await spawn();
        }
        live.delete(doomed);
        const times = await Promise.all(
          round.map(async (h, i) => {
            const events = await waitRung(
              stack.client,
              h,
              (ev) => ev.some((e) => e.seq > seqs[i] && e.type === 'tool_result'),
              120_000,
              seqs[i],
            );
            const result = events.find((e) => e.seq > seqs[i] && e.type === 'tool_result')!;
            if (result.type === 'tool_result' && result.error) infra++;
            return Date.parse(result.time) - killedAt;
          }),
        );
        await Promise.all(round.map((h) => endSession(h)));
        await replacement.kill('SIGTERM');
        live.delete(replacement);
        const kept = times.filter((t) => t > 0);
        early += times.length - kept.length;
        return kept;
      },
      (m) => ctx.log(`  crash hands ${m}`),
    );
    const notes = `Hands: ${rounds} round(s) per arm of ${perRound} sessions on an in-process brain worker and a child hands worker (\`agents worker --role hands\`, host ${hostId}); ${KILL_AFTER_MS} ms after every session's \`${COMMAND}\` (its second turn, the first one provisioning the sandbox with \`true\`) was running (in both arms, so each command has ended on its own before a retry can start), SIGKILL; the time is from the kill to each session's tool_result (arms hands_standby, hands_cold), against limits.handsHeartbeatTimeoutMs ${HANDS_HEARTBEAT_MS} ms and a retry after 500 ms on the same host queue, where the idempotent wrapper returns the command's recorded result. ${infra} tool_result(s) were errors (infra) rather than the command's output; ${early} arrived before the kill and were left out.`;
    return { ...samples, notes };
  } finally {
    await Promise.all(handles.map((h) => endSession(h)));
    for (const w of live) await w.kill('SIGKILL').catch(() => undefined);
    await brain.shutdown().catch(() => undefined);
    await removeHostSandboxes(hostId).catch(() => undefined);
  }
}

/** Waits until a child brain worker follows a peer running `calls` activities (its `kill -USR2` report). */
async function following(worker: ChildWorker, calls: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await workerStatus(worker);
    if (status?.peers?.peers.some((p) => p.activities >= calls)) return;
    if (Date.now() > deadline)
      throw new Error(
        `crash: the standby does not follow the doomed worker's ${calls} calls within 30 s: ${JSON.stringify(status?.peers)}`,
      );
    await sleep(100);
  }
}

export async function runCrash(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const env = stack.childEnv();
  const live = new Set<ChildWorker>();
  const spawn = async (extra: Record<string, string> = {}) => {
    const t0 = Date.now();
    const w = await spawnWorker({ ...env, ...extra }, 'brain');
    live.add(w);
    return { w, ms: Date.now() - t0 };
  };
  const kill = async (w: ChildWorker, signal: NodeJS.Signals = 'SIGKILL') => {
    await w.kill(signal);
    live.delete(w);
  };
  // Some sessions' first call is retried before the kill and is left out: start more than the 20 samples needed.
  const perRound = ctx.quick ? 30 : 15;
  const rounds = ctx.quick ? 1 : 2;
  const spawnMs: number[] = [];
  let excluded = 0;
  const handles: WorkflowHandle[] = [];
  try {
    const sampleRound = async (arm: Arm): Promise<number[]> => {
      const watchOff = arm === 'standby_heartbeat' || arm === 'standby_previous';
      const extra = watchOff ? PEER_WATCH_OFF : {};
      const doomed = await spawn(extra);
      spawnMs.push(doomed.ms);
      const round = await Promise.all(
        Array.from({ length: perRound }, async () => {
          const id = uniqueId(`bench-crash-${arm}`);
          // The first call hangs until the worker dies; its retry answers with the pinned latency.
          stack.model(id, [{ firstByteDelayMs: 600_000 }]);
          const handle = await stack.client.workflow.start(sessionWorkflow, {
            taskQueue: BRAIN_TASK_QUEUE,
            workflowId: id,
            // The defaults a user gets, or (standby_previous) the ones before them.
            args: [
              {
                agent: testAgent({ limits: arm === 'standby_previous' ? PREVIOUS_LIMITS : DEFAULT_LIMITS }),
                message: { text: 'hello' },
              },
            ],
          });
          handles.push(handle);
          return handle;
        }),
      );
      const deadline = Date.now() + 60_000;
      while (!round.every((h) => stack.mock.requests(h.workflowId).some((r) => r.path === '/v1/messages'))) {
        if (Date.now() > deadline) {
          for (const h of round) {
            const d = await h.describe();
            if (d.status.name !== 'RUNNING')
              ctx.log(
                `session ${h.workflowId} ${d.status.name}: ${await h.result().then(String, (e: Error) => `${e.message} ${(e.cause as Error | undefined)?.message}`)}`,
              );
          }
        }
        if (Date.now() > deadline)
          throw new Error(
            `crash: model calls not in flight within 60 s; worker stderr: ${doomed.w.stderr().slice(-2000)}`,
          );
        await sleep(20);
      }
      // The log before the kill: the user message only.
      const before = await Promise.all(round.map((h) => waitLive(h, (ev) => ev.length > 0, 30_000, 50)));
      let replacement: { w: ChildWorker; ms: number };
      let killedAt: number;
      if (arm !== 'cold') {
        replacement = await spawn(extra);
        // A standby runs before the crash: it has found the doomed worker and follows its calls.
        if (!watchOff) await following(replacement.w, round.length);
        killedAt = Date.now();
        await kill(doomed.w);
      } else {
        killedAt = Date.now();
        await kill(doomed.w);
        replacement = await spawn();
      }
      spawnMs.push(replacement.ms);
      // A session whose first call was already retried before the kill (a heartbeat missed on a loaded
      // machine) did not lose its call to the kill: it is left out and counted.
      const callsAtKill = round.map(
        (h) => stack.mock.requests(h.workflowId).filter((r) => r.path === '/v1/messages' && r.at <= killedAt).length,
      );
      const recovered = await Promise.all(
        round.map(async (h, i) => {
          const lastSeq = before[i][before[i].length - 1].seq;
          // Read when the history rings, not by polling: until the retried call's result is in, each query would
          // make the standby replay the session (nothing is cached there yet), beside the replays being timed.
          const events = await waitRung(stack.client, h, (ev) => ev.some((e) => e.seq > lastSeq), 120_000, lastSeq + 1);
          const next = events.find((e) => e.seq > lastSeq)!;
          return Date.parse(next.time) - killedAt;
        }),
      );
      const kept = recovered.filter((ms, i) => callsAtKill[i] === 1 && ms > 0);
      excluded += recovered.length - kept.length;
      await Promise.all(round.map((h) => endSession(h)));
      await kill(replacement.w, 'SIGTERM');
      return kept;
    };
    const arms: Arm[] = ['standby', 'standby_heartbeat', 'cold', 'standby_previous'];
    // One round of each arm first, not counted: the run's first round paid one-off costs (the standby arm, first,
    // took 2.1 s in it and 1.3 s in its second round, and the same again in other runs).
    const samples = await interleave<Arm>(arms, rounds, WARMUP_ROUNDS, sampleRound, (m) => ctx.log(`  crash ${m}`));
    // Sessions left out can leave an arm short of the samples a p95 needs: top it up, one round at a time.
    let topUps = 0;
    for (const arm of arms) {
      while (samples[arm].length < MIN_SAMPLES && topUps < 4) {
        topUps++;
        const more = await sampleRound(arm);
        samples[arm].push(...more);
        ctx.log(`  crash top-up ${arm}: ${more.map((x) => x.toFixed(1)).join(' ')}`);
      }
    }
    const standby = armStats(samples.standby);
    const heartbeat = armStats(samples.standby_heartbeat);
    const cold = armStats(samples.cold);
    const previous = armStats(samples.standby_previous);
    const hands = await handsCrash(ctx);
    const cost = await heartbeatCost(ctx, (m) => ctx.log(`  crash heartbeats ${m}`));
    const spawn50 = armStats(spawnMs);
    const notes = [
      `${rounds} rounds per arm after ${WARMUP_ROUNDS} warm-up round, interleaved; each round starts ${perRound} sessions on a single child brain worker (\`agents worker --role brain\`), waits until every session's callModel is in flight at the model server, then SIGKILLs that worker; the time is from the kill to the workflow time of each session's next event (its assistant_message).`,
      `Every arm runs with the defaults a user gets except standby_previous. In standby, the standby brain worker follows the doomed one's running calls (BRAIN_PEER_WATCH=on, the default; the round waits until it does) and, when the doomed worker's stream breaks and its port refuses the reconnect, fails each call by id with a next retry delay of 1 ms, so the server retries it at once instead of after the first retry interval; standby_heartbeat and standby_previous run both workers with BRAIN_PEER_WATCH=off, and cold has no worker running at the kill, so theirs wait for the server's heartbeat timeout:`,
      `callModel heartbeat timeout ${DEFAULTS.modelHeartbeatTimeoutMs} ms (the call heartbeats every quarter of it), first retry after ${DEFAULTS.modelRetry.initialIntervalMs} ms, and the retried call resets the session's sticky queue, so the task that takes its result goes straight to a live worker; standby_previous runs the earlier defaults (${PREVIOUS_LIMITS.modelHeartbeatTimeoutMs} ms, first retry after ${PREVIOUS_LIMITS.modelRetry.initialIntervalMs} ms) on the same code. Then the model's ${SETTINGS.modelFirstByteMs} ms first byte. A new worker process takes p50 ${spawn50.p50Ms} ms to be ready (it loads the workflow bundle \`npm run build\` wrote).`,
      `${topUps} top-up round(s) after the interleaved ones, for arms left under ${MIN_SAMPLES} samples.`,
      `${excluded} session(s) left out because their first call had already been retried before the kill (the server saw a second request for them before the kill).`,
      `standby_heartbeat/standby p50 ${ratio(heartbeat, standby).p50}, p95 ${ratio(heartbeat, standby).p95}; cold/standby p50 ${ratio(cold, standby).p50}, p95 ${ratio(cold, standby).p95}; standby_previous/standby p50 ${ratio(previous, standby).p50}, p95 ${ratio(previous, standby).p95}.`,
      `standby's floor is the peer's notice, the retried call's read of its context (a replay on the standby) and the model's first byte; the other arms' is the heartbeat timeout: the server retries the call once it has missed its heartbeats, between three quarters of the timeout and the whole of it after the kill.`,
      cost.notes,
      hands.notes,
    ].join(' ');
    return [
      {
        name: 'crash_recovery',
        arms: {
          standby,
          standby_heartbeat: heartbeat,
          cold,
          standby_previous: previous,
          hands_standby: armStats(hands.standby),
          hands_cold: armStats(hands.cold),
        },
        notes,
        ratioTo: {
          standby_heartbeat: 'standby',
          cold: 'standby',
          standby_previous: 'standby',
          hands_cold: 'hands_standby',
        },
        excludedSessions: excluded,
        heartbeatTimeoutMs: DEFAULTS.modelHeartbeatTimeoutMs,
        previousHeartbeatTimeoutMs: PREVIOUS_LIMITS.modelHeartbeatTimeoutMs,
        workerReadyMs: spawn50,
        heartbeatCost: cost.figures,
      },
    ];
  } finally {
    await Promise.all(handles.map((h) => endSession(h)));
    for (const w of live) await w.kill('SIGKILL').catch(() => undefined);
  }
}

/**
 * What heartbeats cost the Temporal server: `sessions` sessions whose model call hangs, all in flight on child
 * brain workers (100 calls each), with the default heartbeat timeout and with the previous one; over a quiet window, the server's
 * CPU (from /proc) and its heartbeat calls (from its metrics).
 */
async function heartbeatCost(
  ctx: Ctx,
  log: (m: string) => void,
): Promise<{
  notes: string;
  figures: Record<string, { heartbeatsPerS: number; serverCores: number; workerCores: number; retried: number }>;
}> {
  const { stack } = ctx;
  const sessions = ctx.quick ? 300 : 1000;
  const windowMs = 10_000;
  const serverPid = stack.serverPid();
  const figures: Record<string, { heartbeatsPerS: number; serverCores: number; workerCores: number; retried: number }> =
    {};
  for (const [arm, limits] of [
    ['default', DEFAULT_LIMITS],
    ['previous', PREVIOUS_LIMITS],
  ] as const) {
    // A worker runs at most 100 activities at once (the SDK's default slots): ten workers hold the calls.
    const workers = await Promise.all(
      Array.from({ length: Math.ceil(sessions / 100) }, () => spawnWorker(stack.childEnv(), 'brain')),
    );
    const workerCpu = () => workers.reduce((n, w) => n + cpuSeconds(w.process.pid!), 0);
    const handles: WorkflowHandle[] = [];
    try {
      const ids = Array.from({ length: sessions }, () => uniqueId(`bench-hb-${arm}`));
      for (let i = 0; i < ids.length; i += 50) {
        await Promise.all(
          ids.slice(i, i + 50).map(async (id) => {
            stack.model(id, [{ firstByteDelayMs: 600_000 }]);
            handles.push(
              await stack.client.workflow.start(sessionWorkflow, {
                taskQueue: BRAIN_TASK_QUEUE,
                workflowId: id,
                args: [{ agent: testAgent({ limits }), message: { text: 'hello' } }],
              }),
            );
          }),
        );
      }
      const deadline = Date.now() + 300_000;
      while (!ids.every((id) => stack.mock.requests(id).some((r) => r.path === '/v1/messages'))) {
        if (Date.now() > deadline)
          throw new Error(`heartbeat cost: ${sessions} model calls not in flight within 300 s`);
        await sleep(500);
      }
      await sleep(2000);
      const beats = () =>
        stack.metricsUrl
          ? metricSum(stack.metricsUrl, 'service_requests', ['operation="RecordActivityTaskHeartbeat"'])
          : Promise.resolve(NaN);
      const [b0, s0, w0, t0] = [await beats(), serverPid ? cpuSeconds(serverPid) : NaN, workerCpu(), Date.now()];
      await sleep(windowMs);
      const [b1, s1, w1, t1] = [await beats(), serverPid ? cpuSeconds(serverPid) : NaN, workerCpu(), Date.now()];
      const secs = (t1 - t0) / 1000;
      // A call the server gave up on while its worker lived (a heartbeat too late) shows as a second request.
      const retried = ids.filter(
        (id) => stack.mock.requests(id).filter((r) => r.path === '/v1/messages').length > 1,
      ).length;
      figures[arm] = {
        heartbeatsPerS: Math.round((b1 - b0) / secs),
        serverCores: Math.round(((s1 - s0) / secs) * 1000) / 1000,
        workerCores: Math.round(((w1 - w0) / secs) * 1000) / 1000,
        retried,
      };
      log(`${arm}: ${JSON.stringify(figures[arm])}`);
    } finally {
      await Promise.all(handles.map((h) => h.terminate('benchmark over').catch(() => undefined)));
      await Promise.all(workers.map((w) => w.kill('SIGKILL')));
    }
  }
  const d = figures.default;
  const p = figures.previous;
  const notes = `Heartbeat cost: ${sessions} sessions with a model call in flight (hanging) on ${Math.ceil(sessions / 100)} child brain workers (100 activity slots each), measured over ${windowMs / 1000} s: with the default heartbeat timeout (${DEFAULTS.modelHeartbeatTimeoutMs} ms) the server took ${d.heartbeatsPerS} heartbeat calls/s and used ${d.serverCores} cores (the worker ${d.workerCores}), and ${d.retried} of the live calls were retried (a heartbeat too late); with the previous ${PREVIOUS_LIMITS.modelHeartbeatTimeoutMs} ms, ${p.heartbeatsPerS} calls/s and ${p.serverCores} cores (worker ${p.workerCores}), ${p.retried} retried.`;
  return { notes, figures };
}
