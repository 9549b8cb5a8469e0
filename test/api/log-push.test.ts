// The log push: a brain worker pushes each workflow task's new events to the API feeds that follow its sessions,
// and a feed delivers them in place of reading the log only where the history proves them: the task completed,
// by the worker that pushed the batch, and the batches continue the feed's log exactly where it stands.
import { feedStats } from '../../src/api/sessions/feed';
import { pushedEvents, type PushedBatch } from '../../src/api/sessions/log-batches';
import type { CompletedTask } from '../../src/log/history-doorbell';
import type { SessionEvent } from '../../src/session/events';
import { streamToken } from '../../src/stream/token';
import { parseCodecKeys } from '../../src/codec';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { TEST_CODEC_KEY } from '../helpers/test-keys';

const W = 'http://127.0.0.1:7400';
const msg = (seq: number): SessionEvent => ({
  seq,
  type: 'user_message',
  text: `m${seq}`,
  time: '2026-01-01T00:00:00.000Z',
});
const batch = (task: number, seqs: number[], worker = W, runId = 'run-1'): PushedBatch => ({
  type: 'batch',
  runId,
  task,
  events: seqs.map(msg),
  identity: `1@host stream=${worker}`,
});
const task = (startedEventId: number, worker = W, runId = 'run-1'): CompletedTask => ({
  runId,
  startedEventId,
  identity: `1@host stream=${worker}`,
  completedAtMs: 0,
});
const seqs = (events: SessionEvent[] | undefined) => events?.map((e) => e.seq);

describe('which pushed events a completed task proves', () => {
  it('takes the batches of the completed tasks, in order, from where the feed stands', () => {
    expect(seqs(pushedEvents([batch(3, [5, 6]), batch(8, [7])], [task(3), task(8)], 5))).toEqual([5, 6, 7]);
  });

  it('drops what the feed already holds, and delivers nothing twice', () => {
    expect(seqs(pushedEvents([batch(3, [4, 5, 6])], [task(3)], 6))).toEqual([6]);
    expect(seqs(pushedEvents([batch(3, [4, 5])], [task(3)], 6))).toEqual([]);
  });

  it('leaves a gap to the log', () => {
    expect(pushedEvents([batch(3, [7, 8])], [task(3)], 5)).toBeUndefined();
  });

  it('counts a task without a batch as empty only when a later batch starts where the log stands', () => {
    expect(seqs(pushedEvents([batch(8, [5])], [task(3), task(8)], 5))).toEqual([5]);
    // The last completed task may have appended events that have not arrived: the log says.
    expect(pushedEvents([batch(3, [5])], [task(3), task(8)], 5)).toBeUndefined();
  });

  it('never takes a batch for a task that did not complete, or that another worker completed', () => {
    expect(pushedEvents([batch(3, [5])], [task(9)], 5)).toBeUndefined();
    expect(pushedEvents([batch(3, [5], 'http://other:7400')], [task(3)], 5)).toBeUndefined();
    expect(pushedEvents([batch(3, [5], W, 'run-0')], [task(3)], 5)).toBeUndefined();
    // The same endpoint, another process (a restarted worker advertising the same URL).
    expect(pushedEvents([batch(3, [5])], [{ ...task(3), identity: `2@host stream=${W}` }], 5)).toBeUndefined();
  });

  it('takes the latest attempt of a task its worker ran twice', () => {
    const first = batch(3, [5, 6]);
    const again = { ...batch(3, [5]), events: [{ ...msg(5), text: 'again' }] };
    expect(pushedEvents([first, again], [task(3)], 5)).toEqual(again.events);
  });
});

describe('a stream fed by the log push', () => {
  let h: Harness;
  let api: TestApi;
  beforeAll(async () => {
    h = await startHarness();
    api = await startApiOn(h);
  });
  afterAll(async () => {
    await api?.stop();
    await h?.stop();
  });

  it("delivers each turn's events from the worker's push, the same events, once each and in order, as the log lists", async () => {
    const client = await api.client();
    const agent = await client.beta.agents.create({ name: 'chat', model: 'claude-test' });
    const environment = await client.beta.environments.create({ name: 'env' });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
    const before = feedStats.pushedEvents;
    const stream = await client.beta.sessions.events.stream(session.id);
    const seen: { type: string; id: string }[] = [];
    const TURNS = 4;
    const reading = (async () => {
      let idles = 0;
      for await (const e of stream) {
        seen.push({ type: e.type, id: (e as { id: string }).id });
        if (e.type === 'session.status_idle' && ++idles === TURNS) break;
      }
    })();
    for (let i = 0; i < TURNS; i++) {
      const idles = seen.filter((e) => e.type === 'session.status_idle').length;
      await client.beta.sessions.events.send(session.id, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: `turn ${i}` }] }],
      });
      for (let t = 0; t < 600 && seen.filter((e) => e.type === 'session.status_idle').length === idles; t++)
        await new Promise((r) => setTimeout(r, 50));
    }
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
    expect(seen.map((e) => e.type)).toEqual(Array.from({ length: TURNS }, () => turn).flat());
    const listed = [];
    for await (const e of client.beta.sessions.events.list(session.id)) listed.push(e.id);
    expect(listed.slice(-seen.length)).toEqual(seen.map((e) => e.id));
    // Events came by push.
    expect(feedStats.pushedEvents - before).toBeGreaterThan(0);
  });

  it("serves the worker's log endpoint only with the session's stream token", async () => {
    const url = h.worker.streamUrl!;
    const at = `${url}/v1/sessions/ses-x/log`;
    expect((await fetch(at)).status).toBe(401);
    expect(
      (
        await fetch(at, {
          headers: { authorization: `Bearer ${streamToken(parseCodecKeys(TEST_CODEC_KEY).current.key, 'ses-y')}` },
        })
      ).status,
    ).toBe(401);
    const ctl = new AbortController();
    const ok = await fetch(at, {
      headers: { authorization: `Bearer ${streamToken(parseCodecKeys(TEST_CODEC_KEY).current.key, 'ses-x')}` },
      signal: ctl.signal,
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('text/event-stream');
    ctl.abort();
  });
});
