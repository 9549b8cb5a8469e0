// `agents watch` streams model tokens and tool output live, from whichever worker is doing the work, while
// the log stays the source of truth: a watcher that starts late or reconnects misses nothing.
import { SessionEventSchema, type SessionEvent } from '../src/session/events';
import { endSignal, sendMessageUpdate } from '../src/session/contract';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { spawnAgents, type Line, type LiveRun } from './helpers/cli';
import { startHarness, startSession, uniqueId, waitForEvents, type Harness } from './helpers/env';

let h: Harness;
const HOST = uniqueId('watch-host');
beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: HOST });
});
afterAll(async () => {
  await h?.stop();
});

const watch = (id: string, ...args: string[]) => spawnAgents(h.env.address, ['watch', id, ...args]);
const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

interface Preview {
  at: number;
  type: 'stream' | 'delta';
  item: { kind: 'model'; throughSeq: number } | { kind: 'tool'; toolUseId: string };
  attempt?: number;
  worker?: string;
  text: string;
}

/** Splits `watch --json` output into log events and live previews, each with when it arrived. */
function parse(lines: Line[]): { events: (SessionEvent & { at: number })[]; previews: Preview[]; order: string[] } {
  const events: (SessionEvent & { at: number })[] = [];
  const previews: Preview[] = [];
  const order: string[] = [];
  for (const l of lines) {
    const o = JSON.parse(l.text) as { seq?: number; type: string };
    if (o.seq !== undefined) {
      events.push({ ...SessionEventSchema.parse(o), at: l.at });
      order.push(`event:${o.type}`);
    } else {
      previews.push({ ...(o as Preview), at: l.at });
      order.push(`preview:${o.type}`);
    }
  }
  return { events, previews, order };
}

const textOf = (e: SessionEvent) =>
  e.type === 'assistant_message'
    ? e.content
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join('')
    : '';

/** The preview text of one item as a watcher saw it: its last `stream` line's text plus the deltas after it. */
function previewText(previews: Preview[], match: (p: Preview) => boolean): string {
  let text = '';
  for (const p of previews.filter(match)) text = p.type === 'stream' ? p.text : text + p.text;
  return text;
}

async function endAndDrain(id: string, ...watchers: LiveRun[]) {
  await h.env.client.workflow.getHandle(id).signal(endSignal, { reason: 'test over' });
  for (const w of watchers) expect(await w.done).toBe(0);
}

describe('agents watch', () => {
  it('shows streamed model tokens before the turn’s assistant_message is appended, as JSON and as text', async () => {
    const id = uniqueId('watch-tokens');
    const reply = words(20, 'tok');
    h.mock.script(id, { steps: [{ reply: { content: [{ type: 'text', text: reply }] }, chunkDelayMs: 150 }] });
    const handle = await startSession(h, { id });
    const json = watch(id, '--json');
    const plain = watch(id);
    await json.waitFor((l) => l.text.includes('"session_started"'));
    await plain.waitFor((l) => l.text.startsWith('#0 session_started'));
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'talk slowly' }] });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message'));
    await endAndDrain(id, json, plain);

    const { events, previews, order } = parse(json.lines);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const assistant = events.find((e) => e.type === 'assistant_message')!;
    const model = previews.filter((p) => p.item.kind === 'model');
    expect(model.length).toBeGreaterThan(3);
    expect(model[0]).toMatchObject({
      type: 'stream',
      item: { kind: 'model', throughSeq: assistant.seq - 1 },
      attempt: 1,
      worker: h.worker.streamUrl,
    });
    // The first tokens reached the watcher before the workflow appended the reply to the log.
    expect(model[0].at).toBeLessThan(Date.parse(assistant.time));
    expect(model[1].at).toBeLessThan(Date.parse(assistant.time));
    expect(order.indexOf('preview:stream')).toBeLessThan(order.indexOf('event:assistant_message'));
    expect(previewText(previews, (p) => p.item.kind === 'model')).toBe(textOf(assistant));
    expect(textOf(assistant)).toBe(reply);

    // As text (not a terminal): the preview, then the event from the log, with no colour codes.
    const out = plain.lines.map((l) => l.text).join('\n');
    expect(out).toContain(`… model: ${reply}`);
    expect(out.indexOf('… model: ')).toBeLessThan(out.indexOf('assistant_message'));
    expect(out).toMatch(/#\d+ session_ended: test over/);
    expect(out).not.toContain('\u001b[');
  });

  it('catches up without gaps when a watcher starts mid-turn or is restarted', async () => {
    const id = uniqueId('watch-reconnect');
    const reply = words(60, 'w');
    // The reply's second half waits at a gate, so the second watcher surely joins while it is still streaming.
    const gate = `${id}-half`;
    h.mock.script(id, {
      steps: [{ reply: { content: [{ type: 'text', text: reply }] }, chunkDelayMs: 20, midGate: gate }],
    });
    const handle = await startSession(h, { id });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'a long answer please' }] });
    // Both watchers join once the stream waits at the gate, halfway through the reply.
    while (!h.mock.requests(id).some((r) => (r.textDeltaAt?.length ?? 0) >= 30))
      await new Promise((r) => setTimeout(r, 20));
    const first = watch(id, '--json');
    // A preview of the reply so far: its first frame (deltas follow only once the gate opens).
    await first.waitFor((l) => /"type":"(stream|delta)"/.test(l.text));
    await first.kill();
    // A second watcher joins while the same reply is still streaming.
    const second = watch(id, '--json');
    await second.waitFor((l) => l.text.includes('"type":"stream"'));
    h.mock.release(gate);
    await second.waitFor((l) => l.text.includes('"type":"assistant_message"'));
    await endAndDrain(id, second);

    const before = parse(first.lines);
    const after = parse(second.lines);
    const assistant = after.events.find((e) => e.type === 'assistant_message')!;
    // It started mid-turn: its first preview already held the tokens streamed so far, and arrived before the reply was logged.
    const joined = after.previews.find((p) => p.type === 'stream' && p.item.kind === 'model')!;
    expect(joined.text.length).toBeGreaterThan(0);
    expect(reply.startsWith(joined.text)).toBe(true);
    expect(joined.at).toBeLessThan(Date.parse(assistant.time));
    expect(previewText(after.previews, (p) => p.item.kind === 'model')).toBe(reply);
    expect(previewText(before.previews, (p) => p.item.kind === 'model').length).toBeGreaterThan(0);
    // The log it printed is whole: every seq from 0 to session_ended, the reply from the log, not the stream.
    expect(after.events.map((e) => e.seq)).toEqual(after.events.map((_, i) => i));
    expect(after.events.at(-1)!.type).toBe('session_ended');
    expect(textOf(assistant)).toBe(reply);
    // Restarted from where the first left off, a watcher prints exactly the rest.
    const resumed = spawnAgents(h.env.address, ['watch', id, '--json', '--from', String(before.events.length)]);
    expect(await resumed.done).toBe(0);
    const rest = parse(resumed.lines).events;
    expect([...before.events, ...rest].map((e) => e.seq)).toEqual(after.events.map((e) => e.seq));
  });

  it('streams bash output from the hands worker before the tool_result is appended', async () => {
    const id = uniqueId('watch-tool');
    const command = 'for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.4; done';
    h.mock.script(id, { steps: [{ reply: { content: [{ type: 'tool_use', name: 'bash', input: { command } }] } }] });
    const handle = await startSession(h, { id });
    const json = watch(id, '--json');
    await json.waitFor((l) => l.text.includes('"session_started"'));
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'count for me' }] });
    await json.waitFor((l) => l.text.includes('"type":"tool_result"'), 90_000);
    await endAndDrain(id, json);

    const { events, previews } = parse(json.lines);
    const use = events.find((e) => e.type === 'tool_use')!;
    const result = events.find((e) => e.type === 'tool_result')!;
    const tool = previews.filter((p) => p.item.kind === 'tool');
    expect(tool[0]).toMatchObject({
      type: 'stream',
      item: { kind: 'tool', toolUseId: use.type === 'tool_use' ? use.id : '' },
      worker: h.worker.streamUrl,
    });
    const firstTick = tool.find((p) => p.text.includes('tick1'))!;
    expect(firstTick.at).toBeLessThan(Date.parse(result.time));
    expect(tool.filter((p) => p.type === 'delta').length).toBeGreaterThan(1);
    expect(previewText(previews, (p) => p.item.kind === 'tool')).toBe('tick1\ntick2\ntick3\ntick4\ntick5\ntick6\n');
    expect(result.type === 'tool_result' && result.output).toBe('tick1\ntick2\ntick3\ntick4\ntick5\ntick6\n[exit 0]');
  });

  it('finds the brain worker streaming its session among several, and follows a retry to another worker', async () => {
    // Only child brain workers serve this test, so one can be SIGKILLed mid-stream.
    await h.worker.shutdown();
    const env = { TEMPORAL_ADDRESS: h.env.address, ANTHROPIC_BASE_URL: h.mock.url, ANTHROPIC_API_KEY: 'test-key' };
    const workers: ChildWorker[] = [];
    try {
      workers.push(await spawnWorker(env, 'brain'), await spawnWorker(env, 'brain'));
      const urls = workers.map((w) => /\(stream (\S+)\)/.exec(w.stderr())![1]);
      expect(new Set(urls).size).toBe(2);
      const id = uniqueId('watch-two');
      const reply = words(40, 'x');
      const slow = { reply: { content: [{ type: 'text' as const, text: reply }] }, chunkDelayMs: 150 };
      h.mock.script(id, { steps: [slow, slow] });
      const handle = await startSession(h, { id });
      const json = watch(id, '--json');
      await json.waitFor((l) => l.text.includes('"session_started"'));
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'stream from somewhere' }] });
      const opened = await json.waitFor((l) => l.text.includes('"type":"stream"'));
      const streaming = (JSON.parse(opened.text) as Preview).worker!;
      expect(urls).toContain(streaming);
      await json.waitFor((l) => l.text.includes('"type":"delta"'));
      // The worker streaming the reply dies; the retry runs on the other one, and the watcher finds it there.
      await workers[urls.indexOf(streaming)].kill();
      const other = urls.find((u) => u !== streaming)!;
      await json.waitFor((l) => l.text.includes('"type":"stream"') && l.text.includes('"attempt":2'), 60_000);
      await json.waitFor((l) => l.text.includes('"type":"assistant_message"'), 60_000);
      await endAndDrain(id, json);

      const { events, previews } = parse(json.lines);
      const opens = previews.filter((p) => p.type === 'stream');
      expect(opens.map((p) => [p.attempt, p.worker])).toEqual([
        [1, streaming],
        [2, other],
      ]);
      const assistant = events.find((e) => e.type === 'assistant_message')!;
      expect(previews.filter((p) => p.attempt === 2 || p.type === 'delta').at(-1)!.at).toBeLessThanOrEqual(
        json.lines.find((l) => l.text.includes('"assistant_message"'))!.at,
      );
      expect(previewText(previews, () => true)).toBe(reply);
      expect(textOf(assistant)).toBe(reply);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    } finally {
      for (const w of workers) await w.kill();
    }
  });
});
