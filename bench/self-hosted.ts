// Self-hosted environments, served to the SDK's own runner (`EnvironmentWorker`, each in a process of its own, from
// node_modules/@anthropic-ai/sdk), beside a cloud environment on our hands host, through one API on one stack:
// - `tool_call`: from a bash call's `agent.tool_use` to its result in the session's log (the two events'
//   `processed_at`), for `echo` run by a worker through the work queue (self_hosted) against the same call in a
//   Docker sandbox on the hands host (cloud). Two long-lived sessions, a turn of 5 calls per sample, interleaved.
//   The difference is what the queue path adds: the worker reading the event stream, running the call, posting
//   `user.tool_result`, and the API's update to the session.
// - `queue_throughput`: 100 sessions (20 with --quick) created at once on one self-hosted environment, served by 4
//   workers, each session one turn of 3 bash calls: the wall time from the first message to the last idle, calls
//   per second, and the deepest queue `stats` reported meanwhile. The SDK's worker serves one session at a time
//   and lets go of it `maxIdleMs` after its turn ends (here 500 ms; the SDK's default is 60 s).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import { startTestApi, testSessionDeps, type TestApi } from '../test/helpers/api';
import { startSdkWorker } from '../test/helpers/sdk-worker';
import { createEnvironmentKey } from '../src/api/environment-keys';
import { armStats, interleave, ratio, type BenchResult, type Ctx } from './lib';

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

const bash = (command: string) => ({
  reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
});
const done = { reply: { content: [{ type: 'text' as const, text: 'done' }] } };
const say = (client: Anthropic, id: string, text: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
const idles = (events: Event[]) =>
  events.filter(
    (e) => e.type === 'session.status_idle' && (e as { stop_reason: { type: string } }).stop_reason.type === 'end_turn',
  ).length;

async function eventsOf(client: Anthropic, id: string): Promise<Event[]> {
  const events: Event[] = [];
  for await (const e of client.beta.sessions.events.list(id)) events.push(e);
  return events;
}

async function waitIdle(client: Anthropic, id: string, n: number): Promise<Event[]> {
  for (let i = 0; i < 12_000; i++) {
    const events = await eventsOf(client, id);
    if (idles(events) >= n) return events;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`session ${id} did not reach idle ${n}`);
}

/** Each call's latency in the log: its use's processed_at to its result's, for the calls after `skip` uses. */
function callLatencies(events: Event[], skip: number): number[] {
  const at = (e: Event) => Date.parse((e as { processed_at: string }).processed_at);
  const uses = events.filter((e) => e.type === 'agent.tool_use').slice(skip);
  return uses.map((u) => {
    const r = events.find(
      (e) =>
        (e.type === 'agent.tool_result' || (e.type as string) === 'user.tool_result') &&
        (e as { tool_use_id: string }).tool_use_id === u.id,
    );
    if (!r) throw new Error(`call ${u.id} has no result`);
    return at(r) - at(u);
  });
}

export async function runSelfHosted(ctx: Ctx): Promise<BenchResult[]> {
  const { stack, quick } = ctx;
  let api: TestApi | undefined;
  const children: ChildProcess[] = [];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-self-hosted-'));
  await stack.worker({ role: 'all', apiDb: () => api?.db });
  api = await startTestApi('postgres', ['default'], testSessionDeps(stack.client), undefined, {
    WORK_LEASE_TTL_SECONDS: '10',
    WORK_LEASE_MIN_TTL_SECONDS: '1',
  });
  const results: BenchResult[] = [];
  try {
    const client = await api.client();
    const agent = await client.beta.agents.create({
      name: 'bench-self-hosted',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const cloud = await client.beta.environments.create({ name: 'bench-cloud' });
    const onPrem = await client.beta.environments.create({ name: 'bench-on-prem', config: { type: 'self_hosted' } });
    const key = await createEnvironmentKey(api.db!, onPrem.id);
    const startWorker = async (name: string, maxIdleMs: number) =>
      children.push(
        await startSdkWorker({
          apiUrl: api!.url,
          environmentId: onPrem.id,
          environmentKey: key.key,
          workdir: path.join(scratch, name),
          workerId: name,
          env: { MAX_IDLE_MS: String(maxIdleMs) },
        }),
      );

    // tool_call: one long-lived session per arm; a self-hosted worker keeps serving its session between turns.
    // It keeps its session between turns (maxIdleMs 10 min), so no sample includes a claim.
    await startWorker('latency-worker', 600_000);
    const rounds = quick ? 6 : 20;
    const CALLS = 5;
    const sessions = {
      self_hosted: await client.beta.sessions.create({ agent: agent.id, environment_id: onPrem.id }),
      cloud: await client.beta.sessions.create({ agent: agent.id, environment_id: cloud.id }),
    };
    const turn = [...Array.from({ length: CALLS }, (_, i) => bash(`echo call-${i}`)), done];
    const turnsDone = { self_hosted: 0, cloud: 0 };
    for (const s of Object.values(sessions))
      stack.mock.script(s.id, { steps: Array.from({ length: rounds + 2 }, () => turn).flat(), firstByteDelayMs: 0 });
    const samples = await interleave(
      ['self_hosted', 'cloud'] as const,
      rounds,
      1,
      async (arm) => {
        const id = sessions[arm].id;
        const n = ++turnsDone[arm];
        await say(client, id, `turn ${n}`);
        const events = await waitIdle(client, id, n);
        return callLatencies(events, (n - 1) * CALLS);
      },
      (m) => ctx.log(`  tool_call ${m}`),
    );
    const arms = { self_hosted: armStats(samples.self_hosted), cloud: armStats(samples.cloud) };
    const r = ratio(arms.self_hosted, arms.cloud);
    results.push({
      name: 'self_hosted_tool_call',
      arms,
      ratios: { self_hosted_over_cloud: r },
      ratioTo: { cloud: 'self_hosted' },
      added_p50_ms: Math.round(arms.self_hosted.p50Ms - arms.cloud.p50Ms),
      notes: `${rounds} turns per arm of ${CALLS} bash calls (\`echo\`), interleaved, after one warm-up turn; a sample is one call, from its agent.tool_use to its result in the log (processed_at). self_hosted: the SDK's EnvironmentWorker in a child process, one worker, the call through the work queue and user.tool_result. cloud: the same call in a Docker sandbox on the hands host (execute activity). Ratio p50 ${r.p50}, added p50 ${Math.round(arms.self_hosted.p50Ms - arms.cloud.p50Ms)} ms.`,
    });
    for (const c of children.splice(0)) c.kill('SIGTERM');

    // queue_throughput
    const total = quick ? 20 : 100;
    const WORKERS = 4;
    const PER_SESSION = 3;
    for (let i = 0; i < WORKERS; i++) await startWorker(`throughput-${i}`, 500);
    const many: string[] = [];
    for (let i = 0; i < total; i++) {
      const s = await client.beta.sessions.create({ agent: agent.id, environment_id: onPrem.id });
      stack.mock.script(s.id, {
        steps: [...Array.from({ length: PER_SESSION }, (_, k) => bash(`echo ${i}-${k}`)), done],
        firstByteDelayMs: 0,
      });
      many.push(s.id);
    }
    let deepest = 0;
    let polling = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const stats = await client.beta.environments.work.stats(onPrem.id);
        deepest = Math.max(deepest, stats.depth + stats.pending);
        polling = Math.max(polling, stats.workers_polling ?? 0);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const t0 = performance.now();
    await Promise.all(many.map((id) => say(client, id, 'go')));
    const finished = await Promise.all(many.map((id) => waitIdle(client, id, 1)));
    const wall = performance.now() - t0;
    watching = false;
    await watcher;
    const calls = finished.map((events) => callLatencies(events, 0)).flat();
    if (calls.length !== total * PER_SESSION)
      throw new Error(`expected ${total * PER_SESSION} calls, got ${calls.length}`);
    const perCall = armStats(calls);
    results.push({
      name: 'self_hosted_queue_throughput',
      arms: { call: perCall },
      sessions: total,
      workers: WORKERS,
      wall_ms: Math.round(wall),
      calls_per_second: Number(((total * PER_SESSION) / (wall / 1000)).toFixed(2)),
      sessions_per_second: Number((total / (wall / 1000)).toFixed(2)),
      deepest_queue: deepest,
      workers_polling_max: polling,
      notes: `${total} sessions on one self-hosted environment, created first, then one message each at once; ${WORKERS} SDK EnvironmentWorker processes, each serving one session at a time and letting go ${500} ms after its turn ends (maxIdleMs); each turn ${PER_SESSION} bash calls. Wall time from the first message to the last idle ${Math.round(wall)} ms; the call arm is each call's use-to-result time in the log, queue wait included.`,
    });
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await api?.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return results;
}
