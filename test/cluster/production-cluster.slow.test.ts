// The platform on a production Temporal cluster (test/helpers/temporal-cluster.ts): the server built from the Go
// module proxy, on PostgreSQL, its frontend, history, matching and internal worker services as four processes, the
// search attributes registered with the Temporal CLI. A session through the API; one long turn that hands over,
// survives a SIGKILL of its brain worker and a restart of each Temporal service in turn with nothing lost; and
// `agents doctor` naming what a namespace lacks.
import type Anthropic from '@anthropic-ai/sdk';
import { MockModelServer } from '../../src/dev/model-server';
import type { MockStep } from '../../src/dev/model-script';
import { WORKSPACE_KEY, SESSION_SEARCH_ATTRIBUTES } from '../../src/session/search-attributes';
import { sendMessageUpdate } from '../../src/session/contract';
import { BRAIN_TASK_QUEUE } from '../../src/session/queues';
import { sessionWorkflow } from '../../src/workflows';
import { runDoctor, type DoctorReport } from '../../src/doctor';
import { startTestApi, testSessionDeps, type TestApi } from '../helpers/api';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker';
import { runAgents } from '../helpers/cli';
import { callsAnsweredOnce, readLogStep } from '../helpers/cluster';
import { allEvents, expectGapFreeAndValid, runsOf, testAgent, turnDone, uniqueId, waitForEvents } from '../helpers/env';
import { eventsUntil, idles, sayTo } from '../helpers/sdk-session';
import { TEMPORAL_SERVICES, startTemporalCluster, type TemporalCluster } from '../helpers/temporal-cluster';

/** A namespace as an operator might leave it: no search attributes, 12 h retention, eager activities off. */
const BARE = 'bare';

let c: TemporalCluster;
let mock: MockModelServer;
let api: TestApi;
const workers: ChildWorker[] = [];

beforeAll(async () => {
  // The first run builds the server (several minutes), later runs take it from the cache.
  c = await startTemporalCluster({
    dynamicConfig: {
      'system.enableActivityEagerExecution': [{ value: true }, { value: false, constraints: { namespace: BARE } }],
    },
    log: (m) => process.stderr.write(`${m}\n`),
  });
  try {
    mock = new MockModelServer();
    await mock.start();
    api = await startTestApi('postgres', ['default'], testSessionDeps(c.client));
  } catch (e) {
    await mock?.stop();
    await c.stop();
    throw e;
  }
}, 30 * 60_000);
afterAll(async () => {
  for (const w of workers) await w.kill();
  await api?.stop();
  await mock?.stop();
  await c?.stop();
});

async function brain(): Promise<ChildWorker> {
  const w = await spawnWorker({
    TEMPORAL_ADDRESS: c.address,
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    STREAM_LISTEN: 'off',
  });
  workers.push(w);
  return w;
}

const check = (r: DoctorReport, name: string) => r.checks.find((x) => x.name === name)!;

it('runs a session through the API: two turns as API events, the session found by its search attributes in PostgreSQL visibility', async () => {
  await brain();
  const client: Anthropic = await api.client();
  const agent = await client.beta.agents.create({ name: 'on-cluster', model: 'claude-test' });
  const environment = await client.beta.environments.create({ name: 'env' });
  const session = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: environment.id,
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello cluster' }] }],
  });
  const turn = [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ];
  expect((await eventsUntil(client, session.id, idles(1))).map((e) => e.type)).toEqual(turn);
  await sayTo(client, session.id, 'and again');
  const events = await eventsUntil(client, session.id, idles(2));
  expect(events.map((e) => e.type)).toEqual([...turn, ...turn]);
  const replies = events.flatMap((e) =>
    e.type === 'agent.message' ? [e.content.map((b) => ('text' in b ? b.text : '')).join('')] : [],
  );
  expect(replies).toEqual(['You said: hello cluster', 'You said: and again']);
  expect((await client.beta.sessions.retrieve(session.id)).status).toBe('idle');

  // The attributes the operator registered index the session: a list query on the visibility store finds it.
  const query = `AgentName = 'on-cluster' AND ${WORKSPACE_KEY.name} = 'default'`;
  let found: string[] = [];
  for (
    const deadline = Date.now() + 60_000;
    !found.includes(session.id);
    await new Promise((r) => setTimeout(r, 250))
  ) {
    if (Date.now() > deadline) throw new Error(`visibility did not find ${session.id} by ${query}: ${found}`);
    found = [];
    for await (const wf of c.client.workflow.list({ query })) found.push(wf.workflowId);
  }
});

it('finishes a turn across handovers, a brain SIGKILL and a restart of each Temporal service, with every event once and in order', async () => {
  if (workers.length === 0) await brain();
  const id = uniqueId('prod');
  // Five gated model calls in one long turn: at each, one fault while the call is in flight.
  const faults = ['brain', ...TEMPORAL_SERVICES] as const;
  const gateAt = faults.map((_, i) => 6 * (i + 1)); // the 6th, 12th, ... 30th call of the turn
  const steps: MockStep[] = [];
  for (let n = 1; n <= 34; n++) {
    const k = gateAt.indexOf(n);
    steps.push(k >= 0 ? { gate: `${id}-${faults[k]}`, ...readLogStep } : readLogStep);
  }
  steps.push({ reply: { content: [{ type: 'text', text: 'done' }] } });
  mock.script(id, { steps });
  const handle = await c.client.workflow.start(sessionWorkflow, {
    taskQueue: BRAIN_TASK_QUEUE,
    workflowId: id,
    args: [{ agent: testAgent({ tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } }) }],
  });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log again and again' }] });

  for (const [k, fault] of faults.entries()) {
    for (const deadline = Date.now() + 180_000; mock.requests(id).length < gateAt[k];) {
      if (Date.now() > deadline)
        throw new Error(
          `call ${gateAt[k]} (before the ${fault} fault) not seen; ${mock.requests(id).length} seen\n${workers.at(-1)?.stderr().slice(-2000)}\n${c.logs()}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
    if (fault === 'brain') {
      await workers.at(-1)!.kill('SIGKILL');
      await brain();
    } else {
      await c.restartService(fault);
    }
    mock.release(`${id}-${fault}`);
  }

  const events = await waitForEvents(handle, turnDone(seq), 300_000);
  expectGapFreeAndValid(events);
  expect(events.filter((e) => e.type === 'error')).toEqual([]);
  const { uses, results } = callsAnsweredOnce(events);
  // A call a fault cut short is retried, and the retry takes the script's next step.
  expect(uses.length).toBeGreaterThanOrEqual(34 - faults.length);
  expect(results).toEqual(uses);
  const last = events.at(-1)!;
  expect(last).toMatchObject({ type: 'assistant_message' });
  expect(JSON.stringify(last)).toContain('done');
  // The turn handed over (continue-as-new) on the way, and the log reads the same from its start.
  expect((await runsOf(c.client, id)).length).toBeGreaterThanOrEqual(2);
  expect((await allEvents(handle)).map((e) => e.seq)).toEqual(events.map((e) => e.seq));
});

it('agents doctor passes on the prepared namespace and names what a bare one lacks, with commands that fix it', async () => {
  const env = { ...process.env, TEMPORAL_ADDRESS: c.address };
  const only = ['temporal', 'search-attributes', 'retention', 'dynamic-config'] as const;
  const good = await runDoctor({ env: { ...env, TEMPORAL_NAMESPACE: 'default' }, only: [...only] });
  expect(good.checks.map((x) => [x.name, x.ok])).toEqual([['config', true], ...only.map((n) => [n, true])]);
  expect(check(good, 'retention').detail).toMatch(/keeps closed runs 3 days/);
  expect(check(good, 'dynamic-config').detail).toMatch(/eager activity execution on/);

  await c.createNamespace(BARE, '12h', false);
  const r = await runAgents(c.address, ['doctor', '--json', '--check', only.join(',')], { TEMPORAL_NAMESPACE: BARE });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/doctor: search-attributes, retention, dynamic-config failed/);
  const bare = JSON.parse(r.stdout) as DoctorReport;
  expect(check(bare, 'temporal').ok).toBe(true);
  const sa = check(bare, 'search-attributes');
  expect(sa.ok).toBe(false);
  for (const k of SESSION_SEARCH_ATTRIBUTES) expect(sa.detail).toContain(k.name);
  const retention = check(bare, 'retention');
  expect(retention).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/keeps closed runs 12 h; .*at least 24 h/),
  });
  const dyn = check(bare, 'dynamic-config');
  expect(dyn).toMatchObject({ ok: false, detail: expect.stringMatching(/eager activity execution is off/) });
  expect(dyn.fix).toContain('system.enableActivityEagerExecution');

  // The commands doctor prints are the operator's fix: run as printed, they make the checks pass.
  const commands = [sa.fix!, retention.fix!].flatMap((fix) =>
    [...fix.matchAll(/`(temporal [^`]+)`/g)].map((m) => m[1]),
  );
  expect(commands).toHaveLength(SESSION_SEARCH_ATTRIBUTES.length + 1);
  for (const command of commands) c.temporal(command.split(' ').slice(1));
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 500))) {
    const again = await runDoctor({
      env: { ...env, TEMPORAL_NAMESPACE: BARE },
      only: ['search-attributes', 'retention'],
    });
    if (again.ok) break;
    if (Date.now() > deadline) throw new Error(`doctor still fails after the fixes: ${JSON.stringify(again.checks)}`);
  }
});
