// SANDBOX_QUOTA with real sandboxes: a workspace at its quota gets a clear tool error for the call that needed one more
// sandbox (the session goes on, idle, not failed), another workspace is unaffected, and a sandbox given back when
// its session ends frees the place for the next call.
import Anthropic from '@anthropic-ai/sdk';
import { resolveDockerHost } from '../../src/host/docker-host';
import type { RunningWorker } from '../../src/worker';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, startTestWorker, removeHostSandboxes, type Harness } from '../helpers/env';

let h: Harness;
let api: TestApi;
let worker: RunningWorker | undefined;
const hostId = `quota-${process.pid}`;

beforeAll(async () => {
  if (!(await resolveDockerHost())) throw new Error('no Docker engine: run npm run setup');
  h = await startHarness({ worker: false });
  api = await startApiOn(h, ['team-s', 'team-t']);
  worker = await startTestWorker(h.env.address, h.mock.url, {
    role: 'all',
    hostId,
    apiDb: () => api.db,
    vaultKey: api.vaultKey,
    sandboxQuota: 1,
    reapIntervalMs: 0,
  });
});
afterAll(async () => {
  await worker?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
  await removeHostSandboxes(hostId);
});

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

async function eventsUntil(client: Anthropic, id: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  for (let i = 0; i < 1200; i++) {
    const events: Event[] = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${id} did not get there`);
}
const idles = (n: number) => (events: Event[]) => events.filter((e) => e.type === 'session.status_idle').length >= n;
const results = (events: Event[]) =>
  events.filter(
    (e) => e.type === 'agent.tool_result',
  ) as Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolResultEvent[];
const text = (r: Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolResultEvent) =>
  (r.content as { text: string }[]).map((c) => c.text).join('');

async function sessionIn(workspace: string) {
  const client = await api.client(workspace);
  const agent = await client.beta.agents.create({
    name: 'sandboxed',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const env = await client.beta.environments.create({ name: `env-${workspace}` });
  return { client, agent, env };
}

it('refuses a sandbox past the workspace quota as a tool error, and frees the place when the holding session ends', async () => {
  const { client, agent, env } = await sessionIn('team-s');
  const bash = (command: string) => ({
    reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
  });
  const end = { reply: { content: [{ type: 'text' as const, text: 'done' }] } };
  const say = (id: string, t: string) =>
    client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: t }] }] });

  const holder = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(holder.id, { steps: [bash('echo holding'), end] });
  await say(holder.id, 'take a sandbox');
  const held = await eventsUntil(client, holder.id, idles(1));
  expect(results(held).map((r) => [r.is_error, text(r)])).toEqual([[false, expect.stringContaining('holding')]]);

  const second = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(second.id, { steps: [bash('echo refused'), end, bash('echo second-run'), end] });
  await say(second.id, 'take another');
  const refused = await eventsUntil(client, second.id, idles(1));
  const [r] = results(refused);
  expect(r.is_error).toBe(true);
  expect(text(r)).toMatch(
    /could not be provisioned: .*workspace team-s has 1 sandbox running, its quota \(SANDBOX_QUOTA 1\)/,
  );
  expect((await client.beta.sessions.retrieve(second.id)).status).toBe('idle');

  // Another workspace has a quota of its own.
  const other = await sessionIn('team-t');
  const elsewhere = await other.client.beta.sessions.create({ agent: other.agent.id, environment_id: other.env.id });
  h.mock.script(elsewhere.id, { steps: [bash('echo elsewhere'), end] });
  await other.client.beta.sessions.events.send(elsewhere.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
  });
  const there = await eventsUntil(other.client, elsewhere.id, idles(1));
  expect(results(there).map((x) => x.is_error)).toEqual([false]);

  // The holder ends (archive), its sandbox is destroyed and given back: the next call gets one.
  await client.beta.sessions.archive(holder.id);
  for (let i = 0; i < 600; i++) {
    const rows = await api.db!.query<{ n: number }>(
      'select count(*)::int as n from sandbox_leases where session_id = $1',
      [holder.id],
    );
    if (rows[0].n === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  await say(second.id, 'try again');
  const after = await eventsUntil(client, second.id, idles(2));
  const last = results(after).at(-1)!;
  expect([last.is_error, text(last)]).toEqual([false, expect.stringContaining('second-run')]);
  for (const id of [second.id, elsewhere.id])
    await (id === elsewhere.id ? other.client : client).beta.sessions.archive(id);
});
