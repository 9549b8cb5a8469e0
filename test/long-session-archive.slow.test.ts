// Long sessions: one session over many runs (continue-as-new), the archive that keeps every event readable,
// context compaction, `agents wake` and `agents fork`.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config';
import type { WorkflowHandle } from '@temporalio/client';
import type { MockStep } from '../src/dev/model-script';
import type { SessionEvent } from '../src/session/events';
import { sendMessageUpdate, statusQuery, userMessageSignal } from '../src/session/contract';
import {
  allEvents,
  conversationOf,
  runsOf as runsOfSession,
  say,
  startHarness,
  startSession,
  deleteWorkflowRun,
  turnDone,
  uniqueId,
  waitForEvents,
  withoutTimes,
  type Harness,
} from './helpers/env';
import { runAgents } from './helpers/cli';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const readLog = (n: number): MockStep => ({
  reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 0, limit: n } }] },
});

const runsOf = (id: string) => runsOfSession(h.env.client, id);

function expectOneLog(events: SessionEvent[]) {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
  const results = new Map<string, number>();
  for (const e of events) if (e.type === 'tool_result') results.set(e.toolUseId, (results.get(e.toolUseId) ?? 0) + 1);
  for (const e of events) if (e.type === 'tool_use') expect([e.id, results.get(e.id)]).toEqual([e.id, 1]);
}

const lastRequest = (id: string) => {
  const reqs = h.mock.requests(id).filter((r) => r.path === '/v1/messages');
  return reqs[reqs.length - 1].body;
};

describe('one session over many runs', () => {
  let handle: WorkflowHandle;
  const ROUNDS = 60;

  it('hands over between two model calls of a long tool loop and keeps one gap-free log', async () => {
    handle = await startSession(h, {
      agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
    });
    h.mock.script(handle.workflowId, { steps: Array.from({ length: ROUNDS }, () => readLog(2)) });
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log again and again' }] });
    const events = await waitForEvents(handle, turnDone(seq), 120_000);
    expectOneLog(events);
    expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(ROUNDS);
    const status = await handle.query(statusQuery);
    expect(status.run).toBeGreaterThanOrEqual(4);
    expect(status.firstSeq).toBeGreaterThan(0);
    const runs = await runsOf(handle.workflowId);
    expect(runs.slice(0, -1).every((r) => r.status.name === 'CONTINUED_AS_NEW')).toBe(true);
    for (const r of runs) expect(r.historyLength).toBeLessThan(200);
    // Each run's model calls saw the whole turn: the last request holds every round, in order.
    const messages = conversationOf(lastRequest(handle.workflowId)) as { role: string }[];
    expect(messages).toHaveLength(1 + 2 * ROUNDS);
    // The session_events calls of later runs read events 0 and 1 out of the archive.
    const last = events.filter((e) => e.type === 'tool_result').pop()!;
    expect(JSON.parse(last.type === 'tool_result' ? last.output : '').events.map((e: SessionEvent) => e.type)).toEqual([
      'session_started',
      'user_message',
    ]);
  });

  it('reads any slice of any age with `agents events --from`, after the first runs are deleted from Temporal', async () => {
    const runs = await runsOf(handle.workflowId);
    for (const r of runs.slice(0, 2)) {
      deleteWorkflowRun(h.env.address, handle.workflowId, r.runId);
    }
    for (;;) {
      const left = (await runsOf(handle.workflowId)).map((r) => r.runId);
      if (!left.includes(runs[0].runId) && !left.includes(runs[1].runId)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const r = await runAgents(h.env.address, ['events', handle.workflowId, '--from', '0', '--limit', '5', '--json']);
    expect(r.stderr).toBe('');
    const first = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as SessionEvent);
    expect(first.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(first.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'assistant_message',
      'tool_use',
      'tool_result',
    ]);
    const all = await allEvents(handle);
    const tail = await runAgents(h.env.address, [
      'events',
      handle.workflowId,
      '--from',
      String(all.length - 3),
      '--json',
    ]);
    expect(
      tail.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).seq),
    ).toEqual([all.length - 3, all.length - 2, all.length - 1]);
  });

  it('loses no signal or update sent during handovers, and drops a retried messageId across them', async () => {
    const id = uniqueId('handover');
    const hnd = await startSession(h, {
      id,
      agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
    });
    h.mock.script(id, { firstByteDelayMs: 20, steps: Array.from({ length: 40 }, () => readLog(1)) });
    await hnd.signal(userMessageSignal, { text: 'loop', messageId: 'm-loop' });
    // 24 messages or more: on a loaded machine the loop is slower, so the sending goes on until five have been sent
    // after the session handed over, and messages certainly arrive on both sides of a handover.
    const sent: Promise<unknown>[] = [];
    let n = 0;
    let afterHandover = 0;
    while (n < 24 || (n < 300 && afterHandover < 5)) {
      if (((await hnd.query(statusQuery)).run ?? 1) > 1) afterHandover++;
      const i = n++;
      sent.push(
        i % 3 === 0
          ? hnd.executeUpdate(sendMessageUpdate, { args: [{ text: `update ${i}`, messageId: `m${i}` }] })
          : hnd.signal(userMessageSignal, { text: `signal ${i}`, messageId: `m${i}` }),
      );
      await new Promise((r) => setTimeout(r, 60));
    }
    await Promise.all(sent);
    const accepted = await waitForEvents(hnd, (ev) => ev.filter((e) => e.type === 'user_message').length === n + 1);
    expect((await hnd.query(statusQuery)).run).toBeGreaterThan(1);
    const firstM0 = accepted.find((e) => e.type === 'user_message' && e.messageId === 'm0');
    expect(firstM0?.type).toBe('user_message');
    // Retries of earlier messages, now in a later run: a retried update answers the seq its first delivery got.
    await hnd.signal(userMessageSignal, { text: 'loop', messageId: 'm-loop' });
    expect((await hnd.executeUpdate(sendMessageUpdate, { args: [{ text: 'update 0', messageId: 'm0' }] })).seq).toBe(
      firstM0?.seq,
    );
    const { seq } = await hnd.executeUpdate(sendMessageUpdate, { args: [{ text: 'last' }] });
    const events = await waitForEvents(hnd, turnDone(seq), 120_000);
    expectOneLog(events);
    const texts = events.flatMap((e) => (e.type === 'user_message' ? [e.text] : []));
    expect(texts.filter((t) => t !== 'last').sort()).toEqual(
      ['loop', ...Array.from({ length: n }, (_, i) => `${i % 3 === 0 ? 'update' : 'signal'} ${i}`)].sort(),
    );
    expect(texts.filter((t) => t === 'last')).toHaveLength(1);
  });
});

describe('an archive that cannot be written', () => {
  it('shows the failure as an event, keeps the session in its run, and hands over once the archive works again', async () => {
    const id = uniqueId('no-archive');
    // A file where the session's archive directory belongs: every seal fails, as on a broken disk.
    const blocker = path.join(loadConfig().dataDir, 'archive', encodeURIComponent(id));
    fs.mkdirSync(path.dirname(blocker), { recursive: true });
    fs.writeFileSync(blocker, 'not a directory');
    try {
      const hnd = await startSession(h, {
        id,
        agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
      });
      h.mock.script(id, { steps: Array.from({ length: 30 }, () => readLog(1)) });
      const { seq } = await hnd.executeUpdate(sendMessageUpdate, { args: [{ text: 'loop while the disk is broken' }] });
      // An `error` event does not end this turn: wait for the model's last reply.
      const replied = (after: number) => (ev: SessionEvent[]) =>
        ev.some((e) => e.seq > after && e.type === 'assistant_message' && e.stopReason === 'end_turn');
      let events = await waitForEvents(hnd, replied(seq), 120_000);
      expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(30);
      const failures = events.filter((e) => e.type === 'error' && e.kind === 'archive');
      expect(failures.length).toBeGreaterThanOrEqual(1);
      expect(failures[0]).toMatchObject({
        message: expect.stringMatching(/could not seal events 0 to \d+ into the session archive/),
      });
      expect((await hnd.query(statusQuery)).run).toBe(1);
      fs.rmSync(blocker);
      h.mock.script(id, { steps: Array.from({ length: 30 }, () => readLog(1)) });
      const next = await hnd.executeUpdate(sendMessageUpdate, { args: [{ text: 'and again' }] });
      events = await waitForEvents(hnd, replied(next.seq), 120_000);
      expectOneLog(events);
      expect((await hnd.query(statusQuery)).run).toBeGreaterThan(1);
    } finally {
      if (fs.statSync(blocker, { throwIfNoEntry: false })?.isFile()) fs.rmSync(blocker);
    }
  });
});

describe('context compaction', () => {
  it('keeps a session going past a small budget; the model re-reads a compacted event with session_events', async () => {
    const hnd = await startSession(h, {
      agent: { tools: ['session_events'], sandboxes: {}, limits: { contextTokens: 1000 } },
    });
    const id = hnd.workflowId;
    for (let i = 1; i <= 6; i++) await say(hnd, `turn ${i}: ${'lorem ipsum '.repeat(60)}`);
    let events = await allEvents(hnd);
    const compactions = events.filter((e) => e.type === 'context_compacted');
    expect(compactions.length).toBeGreaterThanOrEqual(1);
    for (const c of compactions) {
      if (c.type !== 'context_compacted') continue;
      expect(c.tokensAfter).toBeLessThan(c.tokensBefore);
      expect(c.summary).toMatch(/\[1\] turn 1/);
    }
    // After a compaction the request carries the summary in the system prompt and no longer holds turn 1.
    const req = lastRequest(id);
    expect(JSON.stringify(req.system)).toContain('<summary>');
    expect(JSON.stringify(req.messages)).not.toContain('turn 1:');
    // The model asks for event 1, which was compacted away, and gets it word for word.
    h.mock.script(id, {
      steps: [{ reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 1, limit: 1 } }] } }],
    });
    events = await say(hnd, 'what did I say first?');
    const result = events.filter((e) => e.type === 'tool_result').pop();
    expect(result?.type === 'tool_result' && JSON.parse(result.output).events[0]).toMatchObject({
      seq: 1,
      type: 'user_message',
      text: expect.stringMatching(/^turn 1: lorem/),
    });
    expectOneLog(events);
  });
});

describe('agents wake', () => {
  it('restores a terminated session mid-turn; its next turn sees the whole log', async () => {
    const hnd = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {} } });
    const id = hnd.workflowId;
    await say(hnd, 'remember the word zebra');
    h.mock.script(id, { steps: [{ firstByteDelayMs: 60_000 }] });
    await hnd.executeUpdate(sendMessageUpdate, { args: [{ text: 'a slow one' }] });
    while (h.mock.requests(id).length < 2) await new Promise((r) => setTimeout(r, 50));
    await hnd.terminate('simulated loss of the run');
    const before = await allEvents(hnd);
    const r = await runAgents(h.env.address, ['wake', id]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/woke .* continues at seq 4/);
    // The interrupted turn carries on in the new run. (A handle from `start` is bound to the first run's
    // chain; a woken run starts a new chain, so it is reached by id alone.)
    const woken = h.env.client.workflow.getHandle(id);
    let events = await waitForEvents(woken, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 2);
    expect(withoutTimes(events.slice(0, before.length))).toEqual(withoutTimes(before));
    expect(events[before.length]).toMatchObject({ type: 'error', kind: 'session' });
    events = await say(woken, 'which word?');
    expectOneLog(events);
    expect(JSON.stringify(conversationOf(lastRequest(id)))).toContain('remember the word zebra');
    expect((await woken.query(statusQuery)).run).toBe(2);
    const again = await runAgents(h.env.address, ['wake', id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/is running; there is nothing to wake/);
  });
});

describe('agents fork', () => {
  it('diverges from the source at a seq without touching the source log', async () => {
    const src = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {} } });
    await say(src, 'alpha');
    const at = (await allEvents(src)).length - 1;
    await say(src, 'beta');
    const sourceBefore = await allEvents(src);
    const forkId = uniqueId('fork');
    const r = await runAgents(h.env.address, [
      'fork',
      src.workflowId,
      '--at',
      String(at),
      '--id',
      forkId,
      '--json',
      'gamma',
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ sessionId: forkId });
    const fork = h.env.client.workflow.getHandle(forkId);
    const events = await waitForEvents(fork, (ev) => ev.some((e) => e.type === 'assistant_message' && e.seq > at));
    expect(withoutTimes(events.slice(0, at + 1))).toEqual(withoutTimes(sourceBefore.slice(0, at + 1)));
    expect(events[at + 1]).toMatchObject({
      type: 'session_started',
      forkedFrom: { sessionId: src.workflowId, seq: at },
    });
    expect(events[at + 2]).toMatchObject({ type: 'user_message', text: 'gamma' });
    const conversation = JSON.stringify(conversationOf(lastRequest(forkId)));
    expect(conversation).toContain('alpha');
    expect(conversation).not.toContain('beta');
    // The source is unchanged, and goes on by itself.
    expect(await allEvents(src)).toEqual(sourceBefore);
    await say(src, 'delta');
    expect((await allEvents(fork)).some((e) => e.type === 'user_message' && e.text === 'delta')).toBe(false);
    const bad = await runAgents(h.env.address, ['fork', src.workflowId, '--at', '9999', '--id', uniqueId('fork')]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/cannot fork at 9999/);
  });
});
