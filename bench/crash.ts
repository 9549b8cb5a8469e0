// Crash recovery: SIGKILL the only brain worker while model calls are in flight, and time from the kill to each
// session's next event, with a standby worker already running and with one started after the kill.
import type { WorkflowHandle } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawnWorker, type ChildWorker } from '../test/helpers/child-worker';
import { testAgent, uniqueId } from '../test/helpers/env';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { SETTINGS, armStats, endSession, interleave, ratio, waitLive, type BenchResult, type Ctx } from './lib';

type Arm = 'standby' | 'cold';
const HEARTBEAT_MS = 4000;

export async function runCrash(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const env = { TEMPORAL_ADDRESS: stack.env.address, ANTHROPIC_BASE_URL: stack.mock.url, ANTHROPIC_API_KEY: 'test-key' };
  const live = new Set<ChildWorker>();
  const spawn = async () => {
    const t0 = Date.now();
    const w = await spawnWorker(env, 'brain');
    live.add(w);
    return { w, ms: Date.now() - t0 };
  };
  const kill = async (w: ChildWorker, signal: NodeJS.Signals = 'SIGKILL') => {
    await w.kill(signal);
    live.delete(w);
  };
  const perRound = ctx.quick ? 20 : 15;
  const rounds = ctx.quick ? 1 : 2;
  const spawnMs: number[] = [];
  let excluded = 0;
  const handles: WorkflowHandle[] = [];
  try {
    const samples = await interleave<Arm>(
      ['standby', 'cold'],
      rounds,
      0,
      async (arm) => {
        const doomed = await spawn();
        spawnMs.push(doomed.ms);
        const round = await Promise.all(
          Array.from({ length: perRound }, async () => {
            const id = uniqueId(`bench-crash-${arm}`);
            // The first call hangs until the worker dies; its retry answers with the pinned latency.
            stack.model(id, [{ firstByteDelayMs: 600_000 }]);
            const handle = await stack.client.workflow.start(sessionWorkflow, {
              taskQueue: BRAIN_TASK_QUEUE,
              workflowId: id,
              args: [{ agent: testAgent({ limits: { modelHeartbeatTimeoutMs: HEARTBEAT_MS } }), message: { text: 'hello' } }],
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
              if (d.status.name !== 'RUNNING') ctx.log(`session ${h.workflowId} ${d.status.name}: ${await h.result().then(String, (e: Error) => `${e.message} ${(e.cause as Error | undefined)?.message}`)}`);
            }
          }
          if (Date.now() > deadline) throw new Error(`crash: model calls not in flight within 60 s; worker stderr: ${doomed.w.stderr().slice(-2000)}`);
          await sleep(20);
        }
        // The log before the kill: the user message only.
        const before = await Promise.all(round.map((h) => waitLive(h, (ev) => ev.length > 0, 30_000, 50)));
        let replacement: { w: ChildWorker; ms: number };
        let killedAt: number;
        if (arm === 'standby') {
          replacement = await spawn();
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
        const callsAtKill = round.map((h) => stack.mock.requests(h.workflowId).filter((r) => r.path === '/v1/messages' && r.at <= killedAt).length);
        const recovered = await Promise.all(
          round.map(async (h, i) => {
            const lastSeq = before[i][before[i].length - 1].seq;
            const events = await waitLive(h, (ev) => ev.some((e) => e.seq > lastSeq), 120_000, 200);
            const next = events.find((e) => e.seq > lastSeq)!;
            return Date.parse(next.time) - killedAt;
          }),
        );
        const kept = recovered.filter((ms, i) => callsAtKill[i] === 1 && ms > 0);
        excluded += recovered.length - kept.length;
        await Promise.all(round.map((h) => endSession(h)));
        await kill(replacement.w, 'SIGTERM');
        return kept;
      },
      (m) => ctx.log(`  crash ${m}`),
    );
    const standby = armStats(samples.standby);
    const cold = armStats(samples.cold);
    const spawn50 = armStats(spawnMs);
    const notes = [
      `${rounds} rounds per arm, interleaved; each round starts ${perRound} sessions on a single child brain worker (\`agents worker --role brain\`), waits until every session's callModel is in flight at the model server, then SIGKILLs that worker; the time is from the kill to the workflow time of each session's next event (its assistant_message).`,
      `Configured: callModel heartbeat timeout ${HEARTBEAT_MS} ms (limits.modelHeartbeatTimeoutMs; the agent default is 10 s), retry after 50 ms, then the model's ${SETTINGS.modelFirstByteMs} ms first byte; a new worker process takes p50 ${spawn50.p50Ms} ms to be ready (it bundles the workflow code).`,
      `${excluded} session(s) left out because their first call had already been retried before the kill (the server saw a second request for them before the kill; the cause was not profiled).`,
      `cold/standby p50 ${ratio(cold, standby).p50}, p95 ${ratio(cold, standby).p95}.`,
      `Both arms are bounded below by the heartbeat timeout: the server only retries the call once it has missed a heartbeat. The rest is consistent with the workflow task that takes the retried call's result going first to the dead worker's sticky queue and reaching the new worker only when that task times out (the SDK's default sticky schedule-to-start timeout is 10 s); this was not confirmed from the histories.`,
      `The hands worker killed during execute is not measured here (see bench/README.md).`,
    ].join(' ');
    return [{ name: 'crash_recovery', arms: { standby, cold }, notes, ratioTo: { cold: 'standby' }, excludedSessions: excluded, heartbeatTimeoutMs: HEARTBEAT_MS, workerReadyMs: spawn50 }];
  } finally {
    await Promise.all(handles.map((h) => endSession(h)));
    for (const w of live) await w.kill('SIGKILL').catch(() => undefined);
  }
}
