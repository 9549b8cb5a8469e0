// A session's agent other than its stored version, driven only by the SDK: `agent_with_overrides` at create (each
// field a full replacement, checked as an agent's create checks it, the agent resource untouched, budgets priced
// on the overridden model), and `sessions.update({ agent: { tools, mcp_servers } })` while idle: the next turn's
// model call is offered the new tools, also after the worker restarts between the update and that turn; a
// session that is running refuses it with a 409 and keeps its tools.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, startTestWorker, type Harness } from '../helpers/env';
import { doneStep, eventsUntil, idles, sayTo, type ApiEvent } from '../helpers/sdk-session';
import type { RunningWorker } from '../../src/worker';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let worker: RunningWorker | undefined;
let envId: string;
let agentId: string;

const lookup = (name: string) => ({
  type: 'custom' as const,
  name,
  description: `Looks up ${name}.`,
  input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } },
});

beforeAll(async () => {
  h = await startHarness({ worker: false });
  worker = await startTestWorker(h.env.address, h.mock.url);
  api = await startApiOn(h);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'agent-env' })).id;
  agentId = (
    await client.beta.agents.create({
      name: 'base',
      model: 'claude-test',
      system: 'The stored prompt.',
      tools: [lookup('stored_tool')],
    })
  ).id;
});
afterAll(async () => {
  await worker?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

/** The tool names a model request offered. */
const offered = (id: string, call: number) =>
  ((h.mock.requests(id)[call]?.body.tools ?? []) as { name: string }[]).map((t) => t.name).sort();
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
const sessionCount = async () => {
  let n = 0;
  for await (const _ of client.beta.sessions.list()) n++;
  return n;
};

it('creates a session with agent_with_overrides: the model call and the session see the overrides, the agent is unchanged', async () => {
  const s = await client.beta.sessions.create({
    agent: {
      type: 'agent_with_overrides',
      id: agentId,
      version: 1,
      model: { id: 'claude-haiku-4-5', speed: 'standard' },
      system: null,
      tools: [lookup('override_tool')],
    },
    environment_id: envId,
  });
  expect(s.agent).toMatchObject({ id: agentId, version: 1, system: null, model: { id: 'claude-haiku-4-5' } });
  expect(s.agent.tools.map((t) => (t as { name?: string }).name)).toEqual(['override_tool']);
  h.mock.script(s.id, { steps: [doneStep] });
  await sayTo(client, s.id, 'hello');
  await eventsUntil(client, s.id, idles(1));
  const body = h.mock.requests(s.id)[0].body;
  expect(body.model).toBe('claude-haiku-4-5');
  expect(JSON.stringify(body.system ?? '')).not.toContain('The stored prompt.');
  expect(offered(s.id, 0)).toEqual(['override_tool']);
  // The agent resource is as it was, and a retrieve shows the session's own agent.
  const agent = await client.beta.agents.retrieve(agentId);
  expect(agent).toMatchObject({ version: 1, system: 'The stored prompt.', model: { id: 'claude-test' } });
  expect((await client.beta.sessions.retrieve(s.id)).agent).toEqual(s.agent);
  await client.beta.sessions.archive(s.id);
});

it('refuses overrides an agent create would refuse, naming the field, and stores nothing', async () => {
  const before = await sessionCount();
  const bad: [string, Record<string, unknown>, RegExp][] = [
    [
      'an mcp_toolset naming no server',
      { tools: [{ type: 'mcp_toolset', mcp_server_name: 'tracker' }] },
      /agent\.tools\.0\.mcp_server_name: no mcp_servers entry is named tracker/,
    ],
    [
      'a server no toolset uses',
      { mcp_servers: [{ type: 'url', name: 'tracker', url: 'https://mcp.example.com/mcp' }] },
      /agent\.mcp_servers\.0: tracker is not used by any mcp_toolset/,
    ],
    ['a custom tool listed twice', { tools: [lookup('twice'), lookup('twice')] }, /agent\.tools\.1\.name/],
    ['an unknown field', { description: 'not overridable' }, /description/],
  ];
  for (const [what, fields, message] of bad) {
    const e = await refused(
      client.beta.sessions.create({
        agent: { type: 'agent_with_overrides', id: agentId, ...fields } as never,
        environment_id: envId,
      }),
    );
    expect([what, status(e), messageOf(e)]).toEqual([what, 400, expect.stringMatching(message)]);
  }
  // A budget is priced on the overridden model: an unpriced one is refused, a priced one taken.
  const budget = { type: 'limit' as const, max_list_cost: { amount: '5', currency: 'USD' as const } };
  const unpriced = await refused(
    client.beta.sessions.create({
      agent: { type: 'agent_with_overrides', id: agentId, model: 'claude-unpriced' },
      environment_id: envId,
      budget,
    }),
  );
  expect([status(unpriced), messageOf(unpriced)]).toEqual([400, expect.stringMatching(/model_not_budgetable/)]);
  expect(await sessionCount()).toBe(before);
  const priced = await client.beta.sessions.create({
    agent: { type: 'agent_with_overrides', id: agentId, model: 'claude-haiku-4-5' },
    environment_id: envId,
    budget,
  });
  expect(priced.budget).toEqual(budget);
  await client.beta.sessions.archive(priced.id);
});

it("replaces an idle session's tools for its next turn, across a worker restart, and logs session.updated", async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  h.mock.script(s.id, { steps: [doneStep, doneStep, doneStep] });
  await sayTo(client, s.id, 'first');
  await eventsUntil(client, s.id, idles(1));
  expect(offered(s.id, 0)).toEqual(['stored_tool']);

  const updated = await client.beta.sessions.update(s.id, { agent: { tools: [lookup('new_tool'), lookup('other')] } });
  expect(updated.agent.tools.map((t) => (t as { name?: string }).name)).toEqual(['new_tool', 'other']);
  const events = await eventsUntil(client, s.id, (ev) => ev.some((e) => e.type === 'session.updated'));
  const logged = events.find(
    (e) => e.type === 'session.updated',
  ) as Anthropic.Beta.Sessions.BetaManagedAgentsSessionUpdatedEvent;
  expect(logged.agent).toEqual(updated.agent);
  // The stored agent is untouched.
  expect((await client.beta.agents.retrieve(agentId)).tools.map((t) => (t as { name?: string }).name)).toEqual([
    'stored_tool',
  ]);

  // The worker goes away between the update and the next turn; a new one carries on from history.
  await worker!.shutdown();
  worker = await startTestWorker(h.env.address, h.mock.url);
  await sayTo(client, s.id, 'second');
  await eventsUntil(client, s.id, idles(2));
  expect(offered(s.id, 1)).toEqual(['new_tool', 'other']);
  // The same tools again change nothing and log nothing (an update appends its event before it answers).
  await client.beta.sessions.update(s.id, { agent: { tools: [lookup('new_tool'), lookup('other')] } });
  await sayTo(client, s.id, 'third');
  const after = await eventsUntil(client, s.id, idles(3));
  expect(after.filter((e) => e.type === 'session.updated')).toHaveLength(1);
  expect(offered(s.id, 2)).toEqual(['new_tool', 'other']);
  expect((await client.beta.sessions.retrieve(s.id)).agent).toEqual(updated.agent);
  await client.beta.sessions.archive(s.id);
});

it('refuses an update of the tools while the session runs with a 409 and changes nothing', async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  h.mock.script(s.id, { steps: [{ gate: `${s.id}-held`, ...doneStep }] });
  await sayTo(client, s.id, 'hold on');
  await eventsUntil(client, s.id, (ev: ApiEvent[]) => ev.some((e) => e.type === 'session.status_running'));
  const e = await refused(client.beta.sessions.update(s.id, { agent: { tools: [lookup('too_soon')] } }));
  expect(e).toBeInstanceOf(Anthropic.ConflictError);
  expect(messageOf(e)).toMatch(/can change only while it is idle/);
  h.mock.release(`${s.id}-held`);
  const events = await eventsUntil(client, s.id, idles(1));
  expect(events.some((ev) => ev.type === 'session.updated')).toBe(false);
  expect((await client.beta.sessions.retrieve(s.id)).agent.tools.map((t) => (t as { name?: string }).name)).toEqual([
    'stored_tool',
  ]);
  // A bad replacement is a 400 naming the field, also while idle.
  const bad = await refused(
    client.beta.sessions.update(s.id, { agent: { tools: [{ type: 'mcp_toolset', mcp_server_name: 'nope' }] } }),
  );
  expect([status(bad), messageOf(bad)]).toEqual([400, expect.stringMatching(/agent\.tools\.0\.mcp_server_name/)]);
  await client.beta.sessions.archive(s.id);
});

it("changes only a coordinator's own tools: its delegate tools stay, and its thread keeps its agent's tools", async () => {
  const helper = (
    await client.beta.agents.create({ name: 'helper', model: 'claude-test', tools: [lookup('helper_tool')] })
  ).id;
  const lead = (
    await client.beta.agents.create({
      name: 'lead',
      model: 'claude-test',
      tools: [lookup('lead_tool')],
      multiagent: { type: 'coordinator', agents: [helper] },
    })
  ).id;
  const s = await client.beta.sessions.create({ agent: lead, environment_id: envId });
  const updated = await client.beta.sessions.update(s.id, { agent: { tools: [lookup('lead_new')] } });
  expect(updated.agent.multiagent?.type).toBe('coordinator');
  h.mock.script(`${s.id}.toolu_d1`, { steps: [doneStep] });
  h.mock.script(s.id, {
    steps: [
      {
        reply: {
          content: [{ type: 'tool_use', id: 'toolu_d1', name: 'delegate', input: { agent: 'helper', message: 'go' } }],
        },
      },
      doneStep,
    ],
  });
  await sayTo(client, s.id, 'delegate it');
  await eventsUntil(client, s.id, idles(1));
  expect(offered(s.id, 0)).toEqual(['delegate', 'lead_new', 'message_thread']);
  expect(offered(`${s.id}.toolu_d1`, 0)).toEqual(['helper_tool']);
  await client.beta.sessions.archive(s.id);
});
