// Session threads survive a brain worker's death: a coordinator delegates to two roster agents, whose threads run
// at once; the worker running everything is SIGKILLed while both threads wait on their model calls; on the next
// worker both threads reply, and the session's log and each thread's hold each step exactly once. SDK only.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { spawnBrainWorker, type ChildWorker } from '../helpers/child-worker';
import { startHarness, type Harness } from '../helpers/env';
import { eventsUntil, sayTo, type ApiEvent } from '../helpers/sdk-session';
import type { MockBlock } from '../../src/dev/model-script';

let h: Harness;
let api: TestApi;
let client: Anthropic;
const workers: ChildWorker[] = [];
const gates: string[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
  api = await startApiOn(h);
  client = await api.client();
});
afterAll(async () => {
  for (const g of gates) h?.mock.release(g);
  await Promise.all(workers.map((w) => w.kill()));
  await api?.stop();
  await h?.stop();
});

async function newWorker(): Promise<ChildWorker> {
  const w = await spawnBrainWorker(h);
  workers.push(w);
  return w;
}

const text = (t: string) => ({ reply: { content: [{ type: 'text' as const, text: t }] } });
const delegate = (id: string, agent: string, message: string): MockBlock => ({
  type: 'tool_use',
  id,
  name: 'delegate',
  input: { agent, message },
});
const count = (events: ApiEvent[], type: string) => events.filter((e) => e.type === type).length;

it('two threads running at once finish exactly once after the brain worker is SIGKILLed', async () => {
  const first = await newWorker();
  const env = (await client.beta.environments.create({ name: 'threads-crash' })).id;
  const alpha = (await client.beta.agents.create({ name: 'alpha', model: 'claude-sonnet-5-5' })).id;
  const beta = (await client.beta.agents.create({ name: 'beta', model: 'claude-sonnet-5-5' })).id;
  const lead = (
    await client.beta.agents.create({
      name: 'lead',
      model: 'claude-sonnet-5-5',
      multiagent: { type: 'coordinator', agents: [alpha, beta] },
    })
  ).id;
  const s = await client.beta.sessions.create({ agent: lead, environment_id: env });
  const threadA = `${s.id}.toolu_a`;
  const threadB = `${s.id}.toolu_b`;
  for (const [id, answer] of [
    [threadA, 'alpha answer'],
    [threadB, 'beta answer'],
  ]) {
    const gate = `${id}-held`;
    gates.push(gate);
    // Held until the worker is dead; the call's retry on the next worker gets the same answer at once.
    h.mock.script(id, { steps: [{ gate, ...text(answer) }, text(answer)] });
  }
  h.mock.script(s.id, {
    steps: [
      { reply: { content: [delegate('toolu_a', 'alpha', 'task a'), delegate('toolu_b', 'beta', 'task b')] } },
      text('both answered'),
    ],
  });
  await sayTo(client, s.id, 'split the work');
  for (const id of [threadA, threadB])
    for (let i = 0; h.mock.requests(id).length === 0; i++) {
      if (i > 600) throw new Error(`thread ${id} made no model call`);
      await new Promise((r) => setTimeout(r, 100));
    }
  const running = (await client.beta.sessions.threads.list(s.id, { statuses: ['running'] })).data;
  expect(running.map((t) => 'name' in t.agent && t.agent.name).sort()).toEqual(['alpha', 'beta', 'lead']);

  await first.kill('SIGKILL');
  await newWorker();
  const events = await eventsUntil(client, s.id, (ev) =>
    ev.some((e) => e.type === 'agent.message' && JSON.stringify(e).includes('both answered')),
  );
  expect(count(events, 'session.thread_created')).toBe(2);
  expect(count(events, 'agent.thread_message_sent')).toBe(2);
  expect(count(events, 'agent.thread_message_received')).toBe(2);
  expect(count(events, 'session.thread_status_idle')).toBe(2);
  expect(count(events, 'agent.tool_result')).toBe(2);
  const results = events
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => (e as { content: { text: string }[] }).content[0].text);
  expect(results[0]).toMatch(/\(alpha\) replied:\n\nalpha answer$/);
  expect(results[1]).toMatch(/\(beta\) replied:\n\nbeta answer$/);
  for (const t of (await client.beta.sessions.threads.list(s.id)).data) {
    expect(t.status).toBe('idle');
    if (t.parent_thread_id === null) continue;
    const own: ApiEvent[] = [];
    for await (const e of client.beta.sessions.threads.events.list(t.id, { session_id: s.id })) own.push(e);
    expect(count(own, 'agent.thread_message_received')).toBe(1);
    expect(count(own, 'agent.message')).toBe(1);
    expect(count(own, 'agent.thread_message_sent')).toBe(1);
  }
  await client.beta.sessions.archive(s.id);
});
