// Deployments, driven only by the SDK against a real Temporal, a brain worker (which runs each firing's workflow) and
// a tools worker on the API's database (which creates the sessions): create, read, update, list, pause and archive,
// every refusal a 400 that stores nothing, `run` creating a session at once whose initial events were sent, and an
// archived agent recorded as a failed run with its reason.
import Anthropic from '@anthropic-ai/sdk';
import { ScheduleNotFoundError } from '@temporalio/client';
import type { RunningWorker } from '../../src/worker';
import { scheduleIdOf } from '../../src/api/deployment-schedules';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, startTestWorker, type Harness } from '../helpers/env';
import { runAgents } from '../helpers/cli';

let h: Harness;
let api: TestApi;
let tools: RunningWorker;
let client: Anthropic;
let envId: string;
let agentId: string;

const status = (e: unknown) => (e as InstanceType<typeof Anthropic.APIError>).status;
const messageOf = (e: unknown) =>
  ((e as InstanceType<typeof Anthropic.APIError>).error as { error: { message: string } }).error.message;
async function refused(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the request was not refused');
}

const say = (text: string) => ({ type: 'user.message' as const, content: [{ type: 'text' as const, text }] });

beforeAll(async () => {
  h = await startHarness();
  api = await startApiOn(h);
  tools = await startTestWorker(h.env.address, h.mock.url, {
    role: 'tools',
    vaultKey: api.vaultKey,
    apiDb: () => api.db,
  });
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'deploy-env' })).id;
  agentId = (await client.beta.agents.create({ name: 'nightly', model: 'claude-haiku-4-5' })).id;
});
afterAll(async () => {
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

const deploymentIds = async () => {
  const ids: string[] = [];
  for await (const d of client.beta.deployments.list({ include_archived: true })) ids.push(d.id);
  return ids;
};

it('refuses what a deployment cannot do with a 400 naming the field, and stores nothing', async () => {
  const before = await deploymentIds();
  const base = { agent: agentId, environment_id: envId, name: 'bad', initial_events: [say('hi')] };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ schedule: { type: 'cron', expression: '0 9 * *', timezone: 'UTC' } }, /5 fields/],
    [{ schedule: { type: 'cron', expression: '@daily', timezone: 'UTC' } }, /shortcuts/],
    [{ schedule: { type: 'cron', expression: '0 9 L * *', timezone: 'UTC' } }, /L, W, #/],
    [{ schedule: { type: 'cron', expression: '61 * * * *', timezone: 'UTC' } }, /minute values are 0-59/],
    [{ schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Mars/Olympus' } }, /not an IANA time zone/],
    [{ initial_events: [] }, /at least 1/],
    [{ initial_events: [{ type: 'system.message', content: [{ type: 'text', text: 'x' }] }] }, /system\.message/],
    [{ name: ' ' }, /name must not be empty/],
    [
      {
        resources: [{ type: 'github_repository', url: 'https://github.com/a/b', authorization_token: 'ghp_x' }],
      },
      /authorization_token/,
    ],
  ];
  for (const [extra, why] of cases) {
    const e = await refused(client.beta.deployments.create({ ...base, ...extra } as never));
    expect([status(e), messageOf(e)]).toEqual([400, expect.stringMatching(why)]);
  }
  for (const extra of [{ environment_id: 'env_missing' }, { vault_ids: ['vlt_missing'] }, { agent: 'agent_missing' }]) {
    const missing = await refused(client.beta.deployments.create({ ...base, ...extra }));
    expect([status(missing), messageOf(missing)]).toEqual([404, expect.stringMatching(/not found/)]);
  }
  expect(await deploymentIds()).toEqual(before);
});

it('creates, reads, updates, lists, pauses and unpauses a deployment on its Temporal Schedule', async () => {
  const d = await client.beta.deployments.create({
    agent: agentId,
    environment_id: envId,
    name: 'Weekday report',
    description: 'mornings',
    initial_events: [say('Compile the report.')],
    metadata: { team: 'ops' },
    budget: { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } },
    schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'America/Los_Angeles' },
  });
  expect(d).toMatchObject({
    type: 'deployment',
    agent: { id: agentId, type: 'agent', version: 1 },
    status: 'active',
    paused_reason: null,
    archived_at: null,
    metadata: { team: 'ops' },
    budget: { type: 'limit', max_list_cost: { amount: '500', currency: 'USD' } },
    schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'America/Los_Angeles', last_run_at: null },
  });
  // Computed by Temporal: five weekday 09:00s in Los Angeles (16:00 or 17:00 UTC).
  const upcoming = d.schedule!.upcoming_runs_at!;
  expect(upcoming).toHaveLength(5);
  for (const t of upcoming) {
    const local = new Intl.DateTimeFormat('en-US', {
      timeZone: 'America/Los_Angeles',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hour12: false,
    }).format(new Date(t));
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri),? 09:00$/);
  }
  const schedule = await h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe();
  expect(schedule.spec.timezone).toBe('America/Los_Angeles');
  expect(schedule.memo).toMatchObject({ deployment: d.id, name: 'Weekday report' });

  expect(await client.beta.deployments.retrieve(d.id)).toEqual(d);
  const updated = await client.beta.deployments.update(d.id, {
    name: 'Manual report',
    schedule: null,
    metadata: { team: null, owner: 'me' },
  });
  expect(updated).toMatchObject({ name: 'Manual report', schedule: null, metadata: { owner: 'me' } });
  expect((await h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe()).info.nextActionTimes).toEqual([]);
  // A refused update changes nothing.
  const bad = await refused(client.beta.deployments.update(d.id, { initial_events: [] }));
  expect(status(bad)).toBe(400);
  expect((await client.beta.deployments.retrieve(d.id)).initial_events).toEqual([say('Compile the report.')]);

  const paused = await client.beta.deployments.pause(d.id);
  expect(paused).toMatchObject({ status: 'paused', paused_reason: { type: 'manual' } });
  expect((await h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe()).state.paused).toBe(true);
  const listed = [];
  for await (const x of client.beta.deployments.list({ status: 'paused' })) listed.push(x.id);
  expect(listed).toContain(d.id);
  const active = await client.beta.deployments.unpause(d.id);
  expect(active).toMatchObject({ status: 'active', paused_reason: null });
  expect((await h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe()).state.paused).toBe(false);
});

it('runs at once: a session with deployment_id whose initial events were sent, recorded as a manual run', async () => {
  const d = await client.beta.deployments.create({
    agent: agentId,
    environment_id: envId,
    name: 'on demand',
    initial_events: [say('first task'), say('second task')],
    metadata: { from: 'deployment' },
  });
  // Paused, a deployment still runs when asked.
  await client.beta.deployments.pause(d.id);
  const run = await client.beta.deployments.run(d.id);
  expect(run).toMatchObject({
    type: 'deployment_run',
    deployment_id: d.id,
    agent: { id: agentId, type: 'agent', version: 1 },
    error: null,
    trigger_context: { type: 'manual' },
  });
  const session = await client.beta.sessions.retrieve(run.session_id!);
  expect(session).toMatchObject({ deployment_id: d.id, title: 'on demand', metadata: { from: 'deployment' } });
  const texts: string[] = [];
  for (let i = 0; i < 100 && texts.length < 2; i++) {
    texts.length = 0;
    for await (const e of client.beta.sessions.events.list(session.id))
      if (e.type === 'user.message') texts.push(...e.content.map((b) => (b.type === 'text' ? b.text : '')));
    if (texts.length < 2) await new Promise((r) => setTimeout(r, 100));
  }
  expect(texts).toEqual(['first task', 'second task']);
  const byDeployment = [];
  for await (const s of client.beta.sessions.list({ deployment_id: d.id })) byDeployment.push(s.id);
  expect(byDeployment).toEqual([session.id]);
  expect(await client.beta.deploymentRuns.retrieve(run.id)).toEqual(run);
  const runs = [];
  for await (const r of client.beta.deploymentRuns.list({ deployment_id: d.id })) runs.push(r.id);
  expect(runs).toEqual([run.id]);
});

it('records a failed run with its reason when the agent was archived, and an archived deployment creates nothing', async () => {
  const agent = await client.beta.agents.create({ name: 'retiring', model: 'claude-haiku-4-5' });
  const d = await client.beta.deployments.create({
    agent: agent.id,
    environment_id: envId,
    name: 'orphaned',
    initial_events: [say('hello')],
    schedule: { type: 'cron', expression: '*/5 * * * *', timezone: 'UTC' },
  });
  await client.beta.agents.archive(agent.id);
  const run = await client.beta.deployments.run(d.id);
  expect(run.session_id).toBeNull();
  expect(run.error).toEqual({ type: 'agent_archived_error', message: expect.stringMatching(/is archived/) });
  const failed = [];
  for await (const r of client.beta.deploymentRuns.list({ deployment_id: d.id, has_error: true })) failed.push(r.id);
  expect(failed).toEqual([run.id]);

  const archived = await client.beta.deployments.archive(d.id);
  expect(archived).toMatchObject({ status: 'active', archived_at: expect.any(String) });
  expect(archived.schedule?.upcoming_runs_at).toEqual([]);
  await expect(h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe()).rejects.toBeInstanceOf(
    ScheduleNotFoundError,
  );
  const again = await refused(client.beta.deployments.run(d.id));
  expect([status(again), messageOf(again)]).toEqual([400, expect.stringMatching(/archived/)]);
  const all = [];
  for await (const r of client.beta.deploymentRuns.list({ deployment_id: d.id })) all.push(r.id);
  expect(all).toEqual([run.id]);
  expect(await deploymentIds()).toContain(d.id);
  const live = [];
  for await (const x of client.beta.deployments.list()) live.push(x.id);
  expect(live).not.toContain(d.id);
});

it('answers the command line: agents deployments list, show, pause, unpause, run and runs with --json', async () => {
  const d = await client.beta.deployments.create({
    agent: agentId,
    environment_id: envId,
    name: 'from the cli',
    initial_events: [say('hello from cron')],
    schedule: { type: 'cron', expression: '15 3 * * 0', timezone: 'UTC' },
  });
  const env = { AGENTS_API_URL: api.url, AGENTS_API_KEY: await api.key() };
  const agents = async (...args: string[]) => {
    const r = await runAgents(h.env.address, ['deployments', ...args, '--json'], env);
    expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, '']);
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  expect((await agents('list')).map((x) => x.id)).toContain(d.id);
  expect((await agents('show', d.id))[0]).toMatchObject({ id: d.id, schedule: { expression: '15 3 * * 0' } });
  expect((await agents('pause', d.id))[0]).toMatchObject({ status: 'paused' });
  expect((await agents('unpause', d.id))[0]).toMatchObject({ status: 'active' });
  const [run] = await agents('run', d.id);
  expect(run).toMatchObject({ deployment_id: d.id, trigger_context: { type: 'manual' }, error: null });
  expect((await agents('runs', d.id)).map((r) => r.id)).toEqual([run.id]);
  const missing = await runAgents(h.env.address, ['deployments', 'show', 'depl_missing'], env);
  expect([missing.code, missing.stderr]).toEqual([1, expect.stringMatching(/404: deployment depl_missing not found/)]);
});
