// Resumable event streams: every frame carries `id:`, and a reconnect that sends it back as Last-Event-ID gets
// exactly the events after it, in the middle of a turn and across a handover of the session's run (the dev server
// suggests continue-as-new after a few dozen history events, as in stream-handover.test.ts). Also the
// `event_deltas` previews: `event_start` and `event_delta` frames of a reply, concluded by its buffered event.
import { statusQuery } from '../../src/session/contract';
import { startTestApi, testSessionDeps, type TestApi } from '../helpers/api';
import { runsOf, startHarness, type Harness } from '../helpers/env';

let h: Harness;
let api: TestApi;

beforeAll(async () => {
  h = await startHarness({ serverArgs: ['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=40'] });
  try {
    api = await startTestApi('postgres', ['default'], testSessionDeps(h.env.client));
  } catch (e) {
    await h.stop();
    throw e;
  }
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

interface Frame {
  id?: string;
  event: string;
  data: Record<string, unknown>;
}

/** A raw reader of the event stream, as an EventSource would read it: frames with their `id:`, and a way to hang up. */
async function openStream(sessionId: string, opts: { lastEventId?: string; query?: string } = {}) {
  const key = await api.key();
  const ctl = new AbortController();
  const res = await fetch(`${api.url}/v1/sessions/${sessionId}/events/stream${opts.query ?? ''}`, {
    headers: {
      authorization: `Bearer ${key}`,
      'anthropic-beta': 'managed-agents-2026-04-01',
      accept: 'text/event-stream',
      ...(opts.lastEventId ? { 'last-event-id': opts.lastEventId } : {}),
    },
    signal: ctl.signal,
  });
  const body = res.status === 200 ? undefined : await res.text();
  const frames: Frame[] = [];
  const waiters: Array<() => void> = [];
  let ended = false;
  const pump = (async () => {
    if (!res.body || body !== undefined) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let at = buf.indexOf('\n\n'); at >= 0; at = buf.indexOf('\n\n')) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const fields = new Map<string, string>();
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(': ');
            if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 2));
          }
          if (!fields.has('event')) continue;
          frames.push({
            id: fields.get('id'),
            event: fields.get('event')!,
            data: JSON.parse(fields.get('data') ?? '{}') as Record<string, unknown>,
          });
          for (const w of waiters.splice(0)) w();
        }
      }
    } catch {
      // Hung up by the test.
    } finally {
      ended = true;
      for (const w of waiters.splice(0)) w();
    }
  })();
  return {
    status: res.status,
    body,
    frames,
    /** Resolves once a frame satisfies `pred` (or the stream ended), with its index. */
    async until(pred: (f: Frame, i: number) => boolean): Promise<number> {
      for (;;) {
        const i = frames.findIndex(pred);
        if (i >= 0) return i;
        if (ended)
          throw new Error(`the stream ended before the frame; it had ${frames.map((f) => f.event).join(', ')}`);
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    async close() {
      ctl.abort();
      await pump;
    },
  };
}

type Stream = Awaited<ReturnType<typeof openStream>>;
const durable = (frames: Frame[]) =>
  frames.filter((f) => f.event !== 'ping' && f.event !== 'event_start' && f.event !== 'event_delta');
const idles = (s: Stream, n: number) =>
  s.until(
    (f, i) =>
      f.event === 'session.status_idle' &&
      s.frames.slice(0, i + 1).filter((g) => g.event === 'session.status_idle').length === n,
  );

async function listedIds(sessionId: string): Promise<string[]> {
  const client = await api.client();
  const ids: string[] = [];
  for await (const e of client.beta.sessions.events.list(sessionId)) ids.push(e.id);
  return ids;
}

async function newSession() {
  const client = await api.client();
  const agent = await client.beta.agents.create({ name: 'chat', model: 'claude-test' });
  const environment = await client.beta.environments.create({ name: `env-${Math.random().toString(36).slice(2)}` });
  return { client, session: await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id }) };
}

it('resumes a stream cut in the middle of a turn right after its last event: nothing lost, nothing repeated', async () => {
  const { client, session } = await newSession();
  h.mock.script(session.id, {
    steps: [{ gate: 'resume-mid-turn', reply: { content: [{ type: 'text', text: 'held reply' }] } }],
  });
  const first = await openStream(session.id);
  expect(first.status).toBe(200);
  await client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
  });
  // The turn is running and its model call is held: hang up here.
  await first.until((f) => f.event === 'session.status_running');
  await first.close();
  const seenFirst = durable(first.frames);
  // Every frame carried the id of the event it is.
  expect(seenFirst.every((f) => f.id === f.data.id)).toBe(true);
  const last = seenFirst[seenFirst.length - 1].id!;

  // The rest of the turn lands in the log while nobody listens, and the next message with it.
  h.mock.release('resume-mid-turn');
  const watcher = await openStream(session.id, { lastEventId: last });
  await idles(watcher, 1);
  await watcher.close();
  await client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'again' }] }],
  });

  const second = await openStream(session.id, { lastEventId: last });
  await idles(second, 2);
  await second.close();
  const seenSecond = durable(second.frames);
  expect(seenSecond.every((f) => f.id === f.data.id)).toBe(true);
  expect(seenSecond[0].event).toBe('span.model_request_start');
  const texts = seenSecond
    .filter((f) => f.event === 'agent.message')
    .map((f) => (f.data.content as { text: string }[])[0].text);
  expect(texts).toEqual(['held reply', 'You said: again']);
  // Together the two connections carried the log once, in order: what a list reads.
  expect([...seenFirst, ...seenSecond].map((f) => f.id)).toEqual(await listedIds(session.id));
});

it('resumes across a handover of the session run, and from the start with the session id', async () => {
  const { client, session } = await newSession();
  const say = async (text: string, watch: Stream, n: number) => {
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
    });
    await idles(watch, n);
  };
  const first = await openStream(session.id);
  await say('turn 0', first, 1);
  await first.close();
  const last = first.frames[first.frames.length - 1].id!;
  const runBefore = (await h.env.client.workflow.getHandle(session.id).query(statusQuery)).run;

  // While the client is away, turns go on until the session has handed over to a new run.
  const watcher = await openStream(session.id);
  let turns = 0;
  for (let i = 1; (await h.env.client.workflow.getHandle(session.id).query(statusQuery)).run === runBefore; i++) {
    await say(`turn ${i}`, watcher, i);
    turns = i;
  }
  await watcher.close();
  expect((await runsOf(h.env.client, session.id)).some((r) => r.status.name === 'CONTINUED_AS_NEW')).toBe(true);

  const resumed = await openStream(session.id, { lastEventId: last });
  await say(`turn ${turns + 1}`, resumed, turns + 1);
  await resumed.close();
  const ids = [...durable(first.frames), ...durable(resumed.frames)].map((f) => f.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids).toEqual(await listedIds(session.id));
  expect(
    durable(resumed.frames)
      .filter((f) => f.event === 'agent.message')
      .map((f) => (f.data.content as { text: string }[])[0].text),
  ).toEqual(Array.from({ length: turns + 1 }, (_, i) => `You said: turn ${i + 1}`));

  // The session's own id is the cursor of the log's start: the whole log, sealed runs included.
  const fromStart = await openStream(session.id, { lastEventId: session.id });
  await idles(fromStart, turns + 2);
  await fromStart.close();
  expect(durable(fromStart.frames).map((f) => f.id)).toEqual(ids);
});

it('refuses a Last-Event-ID that names no event of the session, and event_deltas it does not know', async () => {
  const { session } = await newSession();
  const unknown = await openStream(session.id, { lastEventId: 'sevt_nothere' });
  expect(unknown.status).toBe(400);
  expect(unknown.body).toMatch(/Last-Event-ID/);
  const bad = await openStream(session.id, { query: '?event_deltas[]=agent.tool_use' });
  expect(bad.status).toBe(400);
  expect(bad.body).toMatch(/event_deltas/);
});

it('previews a reply as event_start and event_delta frames under the id its agent.message then carries', async () => {
  const { client, session } = await newSession();
  const reply = 'one two three four five six seven eight';
  h.mock.script(session.id, {
    steps: [
      {
        midGate: 'deltas-mid',
        chunkDelayMs: 5,
        reply: {
          content: [
            { type: 'thinking', thinking: 'let me see' },
            { type: 'text', text: reply },
          ],
        },
      },
    ],
  });
  const plain = await openStream(session.id);
  const s = await openStream(session.id, { query: '?event_deltas[]=agent.message&event_deltas[]=agent.thinking' });
  await client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'go' }] }],
  });
  // Half the reply has streamed and the rest is held: the preview is under way before any buffered reply.
  await s.until((f) => f.event === 'event_delta');
  h.mock.release('deltas-mid');
  await idles(s, 1);
  await idles(plain, 1);
  await Promise.all([s.close(), plain.close()]);

  const message = s.frames.find((f) => f.event === 'agent.message')!;
  const thinking = s.frames.find((f) => f.event === 'agent.thinking')!;
  const starts = s.frames.filter((f) => f.event === 'event_start');
  expect(starts.map((f) => f.data.event)).toEqual([
    { type: 'agent.thinking', id: thinking.data.id },
    { type: 'agent.message', id: message.data.id },
  ]);
  const deltas = s.frames.filter((f) => f.event === 'event_delta');
  expect(
    deltas.every((f) => f.data.event_id === message.data.id && (f.data.delta as { index: number }).index === 0),
  ).toBe(true);
  expect(deltas.map((f) => (f.data.delta as { content: { text: string } }).content.text).join('')).toBe(reply);
  // Every preview comes before the buffered event that concludes it, and nothing follows that.
  const at = s.frames.indexOf(message);
  expect(s.frames.slice(at).some((f) => f.event === 'event_delta' || f.event === 'event_start')).toBe(false);
  expect(s.frames.indexOf(starts[0])).toBeLessThan(s.frames.indexOf(thinking));
  // Previews are never stored: a stream without event_deltas and the list carry the same events, none of them.
  expect(durable(s.frames).map((f) => f.id)).toEqual(plain.frames.filter((f) => f.event !== 'ping').map((f) => f.id));
  expect(await listedIds(session.id)).toEqual(durable(s.frames).map((f) => f.id));
});

it('records sessions.update in the log as session.updated, and echoes user.interrupt with the id it is listed and streamed under', async () => {
  const { client, session } = await newSession();
  h.mock.script(session.id, { steps: [{ gate: 'interrupt-held' }] });
  const s = await openStream(session.id);
  await client.beta.sessions.update(session.id, { title: 'first', metadata: { team: 'red' } });
  // An update that changes nothing records nothing.
  await client.beta.sessions.update(session.id, { title: 'first' });
  await client.beta.sessions.update(session.id, { title: 'second' });
  // Interrupted while idle, then in the middle of a turn whose model call is held.
  const idleEcho = await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
  await client.beta.sessions.events.send(session.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'wait' }] }],
  });
  await s.until((f) => f.event === 'session.status_running');
  const turnEcho = await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
  await idles(s, 1);
  await s.close();
  h.mock.release('interrupt-held');

  const listed = [];
  for await (const e of client.beta.sessions.events.list(session.id)) listed.push(e);
  const updates = listed.filter((e) => e.type === 'session.updated');
  expect(updates).toEqual([
    expect.objectContaining({ title: 'first', metadata: { team: 'red' } }),
    expect.not.objectContaining({ metadata: expect.anything() }),
  ]);
  expect(updates[1]).toMatchObject({ title: 'second' });
  const interrupts = listed.filter((e) => e.type === 'user.interrupt').map((e) => e.id);
  expect(interrupts).toEqual([idleEcho.data![0].id, turnEcho.data![0].id]);
  // The stream carried the same events under the same ids, the interrupted turn ending idle.
  const streamed = durable(s.frames);
  expect(
    streamed.filter((f) => f.event === 'session.updated' || f.event === 'user.interrupt').map((f) => f.id),
  ).toEqual([...updates.map((e) => e.id), ...interrupts]);
  expect(streamed.map((f) => f.event).slice(-2)).toEqual(['user.interrupt', 'session.status_idle']);
  expect((await client.beta.sessions.retrieve(session.id)).title).toBe('second');
});
