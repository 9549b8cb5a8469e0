// A model call that fails transiently, seen through the SDK: session.error (retrying) and
// session.status_rescheduled, the status `rescheduling` while the retry waits, then session.status_running and the reply.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';

// Without event_deltas the stream carries only buffered events, the same as the list's.
type ApiEvent = Anthropic.Beta.Sessions.Events.BetaManagedAgentsStreamSessionEvents;

let h: Harness;
let api: TestApi;
let client: Anthropic;
let agentId: string;
let envId: string;

beforeAll(async () => {
  h = await startHarness();
  api = await startApiOn(h, ['default']);
  client = await api.client();
  agentId = (await client.beta.agents.create({ name: 'patient', model: 'claude-test' })).id;
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

async function listAll(id: string): Promise<ApiEvent[]> {
  const events: ApiEvent[] = [];
  for await (const e of client.beta.sessions.events.list(id)) events.push(e);
  return events;
}

/** Reads the stream into `seen` until `stop` holds for an event, leaving the stream open for the next read. */
async function readUntil(
  stream: AsyncIterator<ApiEvent>,
  seen: ApiEvent[],
  stop: (e: ApiEvent, seen: ApiEvent[]) => boolean,
): Promise<void> {
  for (;;) {
    const next = await stream.next();
    if (next.done) throw new Error('the stream ended first');
    seen.push(next.value);
    if (stop(next.value, seen)) return;
  }
}
const open = async (id: string) => (await client.beta.sessions.events.stream(id))[Symbol.asyncIterator]();

const say = (id: string, text: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });

it('shows two transient failures as retrying errors and status_rescheduled, each followed by status_running, then the reply', async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  const gate = `retried-${s.id}`;
  h.mock.script(s.id, {
    steps: [
      { status: 529 },
      { status: 503 },
      { gate, reply: { content: [{ type: 'text', text: 'after the storm' }] } },
    ],
  });
  const stream = await open(s.id);
  const seen: ApiEvent[] = [];
  const runningAgain = readUntil(
    stream,
    seen,
    (_e, all) => all.filter((x) => x.type === 'session.status_running').length === 3,
  );
  await say(s.id, 'hello through the storm');
  await runningAgain;
  // The third attempt is held at the model: the retried call went ahead, and the session reads running.
  expect((await client.beta.sessions.retrieve(s.id)).status).toBe('running');
  h.mock.release(gate);
  await readUntil(stream, seen, (e) => e.type === 'session.status_idle');

  expect(seen.map((e) => e.type)).toEqual([
    'user.message',
    'session.status_running',
    'session.error',
    'session.status_rescheduled',
    'session.status_running',
    'session.error',
    'session.status_rescheduled',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ]);
  const errors = seen.filter((e) => e.type === 'session.error');
  expect(errors.map((e) => e.error)).toEqual([
    { type: 'model_overloaded_error', message: expect.stringMatching(/529/), retry_status: { type: 'retrying' } },
    { type: 'model_request_failed_error', message: expect.stringMatching(/503/), retry_status: { type: 'retrying' } },
  ]);
  expect(seen.find((e) => e.type === 'agent.message')).toMatchObject({
    content: [{ type: 'text', text: 'after the storm' }],
  });
  expect(seen.at(-1)).toMatchObject({ stop_reason: { type: 'end_turn' } });
  // The list carries the same events with the same ids.
  expect(await listAll(s.id)).toEqual(seen);
  expect(new Set(seen.map((e) => ('id' in e ? e.id : undefined))).size).toBe(seen.length);
  expect((await client.beta.sessions.retrieve(s.id)).status).toBe('idle');
  expect(h.mock.requests(s.id).map((r) => r.status)).toEqual([529, 503, 200]);
  await stream.return?.();
});

it("reads rescheduling in retrieve and list while a retry waits out the server's retry-after, and an interrupt ends the wait", async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  // An hour's retry-after: the retry is still waiting whenever the test looks.
  h.mock.script(s.id, { steps: [{ status: 429, retryAfter: 3600 }] });
  const stream = await open(s.id);
  const seen: ApiEvent[] = [];
  await say(s.id, 'hello, rate limits');
  await readUntil(stream, seen, (e) => e.type === 'session.status_rescheduled');
  expect(seen.map((e) => e.type)).toEqual([
    'user.message',
    'session.status_running',
    'session.error',
    'session.status_rescheduled',
  ]);
  expect(seen[2]).toMatchObject({ error: { type: 'model_rate_limited_error', retry_status: { type: 'retrying' } } });

  expect((await client.beta.sessions.retrieve(s.id)).status).toBe('rescheduling');
  const listed: Anthropic.Beta.Sessions.BetaManagedAgentsSession[] = [];
  for await (const x of client.beta.sessions.list()) listed.push(x);
  expect(listed.find((x) => x.id === s.id)?.status).toBe('rescheduling');
  // No second request while the wait lasts.
  expect(h.mock.requests(s.id)).toHaveLength(1);

  await client.beta.sessions.events.send(s.id, { events: [{ type: 'user.interrupt' }] });
  await readUntil(stream, seen, (e) => e.type === 'session.status_idle');
  expect(seen.slice(4).map((e) => e.type)).toEqual(['user.interrupt', 'session.status_idle']);
  expect((await client.beta.sessions.retrieve(s.id)).status).toBe('idle');
  expect(await listAll(s.id)).toEqual(seen);
  await stream.return?.();
});
