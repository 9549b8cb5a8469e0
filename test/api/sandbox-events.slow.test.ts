// A session's sandbox through the API, with the real SDK, on a real Temporal dev server, worker of every role and
// Docker engine: the first bash call lists and streams platform.sandbox_provisioned; a container killed between
// turns gives platform.sandbox_lost on the next call and platform.sandbox_provisioned for the new one.
import Anthropic from '@anthropic-ai/sdk';
import type Docker from 'dockerode';
import { resolveDockerHost } from '../../src/host/docker-host';
import type {
  PlatformEvent,
  PlatformSandboxLostEvent,
  PlatformSandboxProvisionedEvent,
} from '../../src/api/sessions/projection';

type PlatformSandboxEvent = PlatformSandboxProvisionedEvent | PlatformSandboxLostEvent;
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { docker, sessionContainers } from '../helpers/hands';

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent | PlatformEvent;

let h: Harness;
let api: TestApi;
let client: Anthropic;
let d: Docker;
let agentId: string;
let envId: string;
const sessions: string[] = [];

beforeAll(async () => {
  if (!(await resolveDockerHost())) throw new Error('no Docker engine: run npm run setup');
  d = await docker();
  h = await startHarness({ role: 'all', hostId: `api-sandbox-test-${process.pid}` });
  api = await startApiOn(h, ['default']);
  client = await api.client();
  agentId = (
    await client.beta.agents.create({
      name: 'shell',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});

afterAll(async () => {
  for (const id of sessions) await client?.beta.sessions.delete(id).catch(() => undefined);
  for (const id of sessions)
    for (const c of await sessionContainers(d, id).catch(() => []))
      await d
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

const bash = (command: string) => ({
  reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
});
const text = (t: string) => ({ reply: { content: [{ type: 'text' as const, text: t }] } });
const endsTurn = (e: { type: string }) =>
  e.type === 'session.status_idle' && (e as { stop_reason?: { type?: string } }).stop_reason?.type === 'end_turn';
/** The sandbox events (the workspace's snapshot events are tested in workspace-snapshots-hosts.slow.test.ts). */
const isPlatform = (e: { type: string }): e is PlatformSandboxEvent => e.type.startsWith('platform.sandbox_');

async function list(id: string, params: Anthropic.Beta.Sessions.EventListParams = {}): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of client.beta.sessions.events.list(id, params)) out.push(e as Event);
  return out;
}

/** Streams the session through the SDK while `send` runs a turn, until that turn ends; returns what the stream yielded. */
async function streamTurn(id: string, send: () => Promise<unknown>): Promise<Event[]> {
  const stream = await client.beta.sessions.events.stream(id);
  const seen: Event[] = [];
  const reading = (async () => {
    for await (const e of stream) {
      seen.push(e as Event);
      if (endsTurn(e)) break;
    }
  })();
  await send();
  await reading;
  return seen;
}

const say = (id: string, t: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text: t }] }] });

async function newSession(): Promise<string> {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  sessions.push(s.id);
  return s.id;
}

it('lists and streams platform.sandbox_provisioned inside the first bash call, between its use and its result', async () => {
  const id = await newSession();
  h.mock.script(id, { steps: [bash('echo hello-sandbox'), text('done')] });
  const streamed = await streamTurn(id, () => say(id, 'run it'));
  const types = streamed.map((e) => e.type);
  expect(types.indexOf('platform.sandbox_provisioned')).toBeGreaterThan(types.indexOf('agent.tool_use'));
  expect(types.indexOf('platform.sandbox_provisioned')).toBeLessThan(types.indexOf('agent.tool_result'));

  const listed = await list(id);
  const provisioned = listed.filter(isPlatform);
  expect(provisioned).toEqual([
    {
      type: 'platform.sandbox_provisioned',
      id: expect.stringMatching(/^sevt_/),
      processed_at: expect.any(String),
      sandbox_name: 'main',
      sandbox_id: expect.any(String),
      resumed: false,
      duration_ms: expect.any(Number),
      runtime: expect.stringMatching(/^(runsc|runc)$/),
      loosened: expect.any(Array),
    },
  ]);
  // The stream and the list give the same event, by id; the SDK passed the type it does not know through.
  expect(streamed.filter(isPlatform)).toEqual(provisioned);
  const [container] = await sessionContainers(d, id, false);
  expect(provisioned[0]).toMatchObject({ sandbox_id: container.Id });
  // Nothing of the hands host reaches the client.
  expect(JSON.stringify(provisioned)).not.toContain(`api-sandbox-test-${process.pid}`);
});

it('shows a container killed between turns as platform.sandbox_lost on the next call, then provisions a new one with the files intact', async () => {
  const id = await newSession();
  h.mock.script(id, {
    steps: [bash('echo kept > notes.txt'), text('written'), bash('cat notes.txt'), bash('cat notes.txt'), text('read')],
  });
  await streamTurn(id, () => say(id, 'write it'));
  const [container] = await sessionContainers(d, id, false);
  await d.getContainer(container.Id).kill();

  const streamed = await streamTurn(id, () => say(id, 'read it'));
  expect(streamed.filter(isPlatform).map((e) => e.type)).toEqual([
    'platform.sandbox_lost',
    'platform.sandbox_provisioned',
  ]);

  const listed = await list(id);
  const platform = listed.filter(isPlatform);
  expect(platform.map((e) => [e.type, e.sandbox_id])).toEqual([
    ['platform.sandbox_provisioned', container.Id],
    ['platform.sandbox_lost', container.Id],
    ['platform.sandbox_provisioned', expect.not.stringMatching(container.Id)],
  ]);
  expect(platform[1]).toMatchObject({ sandbox_name: 'main', reason: expect.any(String) });
  expect(platform[2]).toMatchObject({ resumed: false });

  // The call that found it gone is an error result; the next runs in the new sandbox, on the same workspace volume.
  const results = listed.filter(
    (e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolResultEvent => e.type === 'agent.tool_result',
  );
  expect(results.map((r) => r.is_error)).toEqual([false, true, false]);
  expect(results[2].content?.[0]).toMatchObject({ text: expect.stringContaining('kept') });
  const order = listed.map((e) => e.id);
  expect(order.indexOf(platform[1].id)).toBeLessThan(order.indexOf(results[1].id));
  expect(order.indexOf(platform[2].id)).toBeLessThan(order.indexOf(results[2].id));

  // types[] takes the platform's types like any other (the SDK's parameter is typed with the hosted names only).
  const lost = await list(id, {
    types: ['platform.sandbox_lost'] as unknown as Anthropic.Beta.Sessions.BetaManagedAgentsSessionEventType[],
  });
  expect(lost).toEqual([platform[1]]);
  expect((await list(id, { types: ['agent.tool_use'] })).some(isPlatform)).toBe(false);
});
