// The event stream carries durable events from the log, so one connection keeps delivering while the brain
// worker that runs the session is SIGKILLed and another takes over.
import { spawnBrainWorker, type ChildWorker } from '../helpers/child-worker';
import { startTestApi, testSessionDeps, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';

let h: Harness;
let api: TestApi;
const workers: ChildWorker[] = [];

beforeAll(async () => {
  h = await startHarness({ worker: false });
  try {
    api = await startTestApi('postgres', ['default'], testSessionDeps(h.env.client));
  } catch (e) {
    await h.stop();
    throw e;
  }
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await api?.stop();
  await h?.stop();
});

async function brain(): Promise<ChildWorker> {
  const w = await spawnBrainWorker(h);
  workers.push(w);
  return w;
}

it('keeps one stream delivering across a SIGKILL of the brain worker: every event once, in order', async () => {
  const first = await brain();
  const client = await api.client();
  const agent = await client.beta.agents.create({ name: 'chat', model: 'claude-test' });
  const environment = await client.beta.environments.create({ name: 'env' });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });

  const stream = await client.beta.sessions.events.stream(session.id);
  const seen: { type: string; id: string; text?: string }[] = [];
  let idles = 0;
  const idled: Array<() => void> = [];
  const reading = (async () => {
    for await (const e of stream) {
      const text = e.type === 'agent.message' ? e.content.map((b) => ('text' in b ? b.text : '')).join('') : undefined;
      seen.push({ type: e.type, id: (e as { id: string }).id, ...(text !== undefined ? { text } : {}) });
      if (e.type === 'session.status_idle') {
        idles++;
        idled.shift()?.();
        if (idles === 2) break;
      }
    }
  })();
  const nextIdle = () => new Promise<void>((resolve) => idled.push(resolve));
  const say = async (text: string) => {
    const idle = nextIdle();
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
    });
    await idle;
  };

  await say('before the crash');
  await first.kill('SIGKILL');
  await brain();
  await say('after the crash');
  await reading;

  const turn = [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ];
  expect(seen.map((e) => e.type)).toEqual([...turn, ...turn]);
  expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
  const replies = seen.filter((e) => e.type === 'agent.message').map((e) => e.text);
  expect(replies).toEqual(['You said: before the crash', 'You said: after the crash']);
  // What the stream carried is what a client listing the log afterwards reads.
  const listed = [];
  for await (const e of client.beta.sessions.events.list(session.id)) listed.push(e.id);
  expect(listed).toEqual(seen.map((e) => e.id));
});
