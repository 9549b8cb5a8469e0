// Brains are cattle: SIGKILL the worker process mid-call or while idle, start another, and the log is unchanged;
// a query that reaches another brain meanwhile cannot make its copy of the session run ahead of history.
import { Client, QueryNotRegisteredError, type WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { RUN_AHEAD_MARKER } from '../src/session/run-ahead';
import type { SessionEvent } from '../src/session/events';
import { endSignal, eventsQuery, sendMessageUpdate, statusQuery, userMessageSignal } from '../src/session/contract';
import type { MockStep } from '../src/dev/model-script';
import { readLogStep } from './helpers/actions';
import { spawnBrainWorker, type ChildWorker } from './helpers/child-worker';
import {
  allEvents,
  say,
  startHarness,
  startSession,
  testDataConverter,
  waitForEvents,
  workflowBundle,
  type Harness,
} from './helpers/env';

let h: Harness;
const workers: ChildWorker[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await h?.stop();
});

async function newWorker(): Promise<ChildWorker> {
  const w = await spawnBrainWorker(h);
  workers.push(w);
  return w;
}

/** The three turns of every session here; the second one's first reply reads the session log. */
const TURNS: { text: string; steps?: MockStep[] }[] = [
  { text: 'Hello there' },
  { text: 'What have we said so far?', steps: [readLogStep] },
  { text: 'Thanks, bye' },
];

/** Scripts the turn's replies, if it has any (the local server's built-in replies answer the rest), and says it. */
async function turn(handle: WorkflowHandle, t: (typeof TURNS)[number]): Promise<void> {
  if (t.steps) h.mock.script(handle.workflowId, { steps: t.steps });
  await say(handle, t.text);
}

/** Times differ between runs, including inside tool output; everything else must be identical. */
function normalise(events: SessionEvent[]): unknown[] {
  return events.map(({ time: _t, ...rest }) =>
    JSON.parse(JSON.stringify(rest).replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'T')),
  );
}

async function finish(handle: WorkflowHandle): Promise<SessionEvent[]> {
  await handle.signal(endSignal, { reason: 'done' });
  await handle.result();
  return allEvents(handle);
}

async function waitUntil(pred: () => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('a brain worker killed with SIGKILL', () => {
  let baseline: unknown[];

  beforeAll(async () => {
    const w = await newWorker();
    const handle = await startSession(h);
    for (const t of TURNS) await turn(handle, t);
    baseline = normalise(await finish(handle));
    await w.kill('SIGTERM');
    expect(baseline.length).toBe(11);
  });

  it('while callModel is in flight: another worker finishes the session with the same log', async () => {
    const first = await newWorker();
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 5_000 }] });
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: TURNS[0].text }] });
    await waitUntil(() => h.mock.requests(handle.workflowId).length === 1);
    expect(h.mock.inFlight).toBeGreaterThan(0);
    await first.kill('SIGKILL');
    await newWorker();
    await waitForEvents(handle, (ev) => ev.some((e) => e.seq > seq && e.type === 'assistant_message'));
    for (const t of TURNS.slice(1)) await turn(handle, t);
    const events = await finish(handle);
    expect(normalise(events)).toEqual(baseline);
    // The call was made at least twice (the lost attempt and its retry; a retry that lands on the dead worker's
    // stale poll, or heartbeats late on a loaded machine, adds one), yet it is answered once in the log.
    expect(h.mock.requests(handle.workflowId).length).toBeGreaterThanOrEqual(5);
  });

  it('while the session awaits input: another worker carries on with the same log', async () => {
    const first = await newWorker();
    const handle = await startSession(h);
    await turn(handle, TURNS[0]);
    expect((await handle.query(statusQuery)).state).toBe('waiting_for_user');
    await first.kill('SIGKILL');
    await newWorker();
    for (const t of TURNS.slice(1)) await turn(handle, t);
    const events = await finish(handle);
    expect(normalise(events)).toEqual(baseline);
    expect(h.mock.requests(handle.workflowId).length).toBe(4);
  });
});

// A query that reaches a worker while the session's sticky worker is dead can carry events no workflow task has
// processed. The run guard (src/workflows/run-guard.ts) refuses to apply them there, so the worker's copy never
// runs ahead of history: the session stays replayable and loses nothing.
async function quiescent(handle: WorkflowHandle): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const { raw } = await handle.describe();
    if (!raw.pendingWorkflowTask && (raw.pendingActivities ?? []).length === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('session never settled');
}

describe('a query that reaches a worker ahead of the workflow task', () => {
  it('is refused there, and the session carries on with every message, replayable', async () => {
    const raw = new Client({ connection: h.env.connection, dataConverter: testDataConverter() });
    // The query must reach the other worker before the signal's workflow task does. Both wait out the sticky
    // timeout, so on a loaded machine the task can win; the query is then answered from history (also correct, but
    // not the case under test), and the scenario runs again with a new session.
    let handle: WorkflowHandle | undefined;
    let second: ChildWorker | undefined;
    let refusal: unknown;
    for (let attempt = 0; attempt < 4 && !(refusal instanceof QueryNotRegisteredError); attempt++) {
      if (handle)
        await handle.terminate('the query was answered after the signal was processed').catch(() => undefined);
      // Only the brains of this test: the session's sticky worker must be the one that dies.
      await Promise.all(workers.splice(0).map((w) => w.kill()));
      const first = await newWorker();
      handle = await startSession(h);
      await say(handle, 'Hello there');
      await quiescent(handle);
      second = await newWorker();
      await first.kill('SIGKILL');

      // No task is pending, so the server sends this query straight to the dead worker's sticky queue, where it
      // waits out the sticky timeout (2 s) and then goes to the other worker with the history as it is by then:
      // ending in the signal below, which no workflow task has processed.
      const early = raw.workflow
        .getHandle(handle.workflowId)
        .query(eventsQuery, { from: 0, limit: 100 })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await new Promise((r) => setTimeout(r, 300));
      await handle.signal(userMessageSignal, { text: 'A signal while the worker was gone' });
      refusal = await early;
    }
    if (!handle || !second) throw new Error('unreachable');
    expect(refusal).toBeInstanceOf(QueryNotRegisteredError);
    expect((refusal as Error).message).toContain(RUN_AHEAD_MARKER);

    // The update lands in the task that processes the signal: the order a replay has to reproduce.
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'And an update right after' }] });
    await waitForEvents(handle, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && (e.throughSeq ?? e.seq) >= seq),
    );
    await handle.signal(endSignal, { reason: 'done' });
    await handle.result();

    const events = await allEvents(handle);
    const texts = events.filter((e) => e.type === 'user_message').map((e) => (e as { text: string }).text);
    expect(texts).toEqual(['Hello there', 'A signal while the worker was gone', 'And an update right after']);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));

    const history = await handle.fetchHistory();
    const results = [];
    for await (const r of Worker.runReplayHistories(
      { workflowBundle: await workflowBundle(), dataConverter: testDataConverter() },
      [{ workflowId: handle.workflowId, history }],
    ))
      results.push(r);
    expect(results.map((r) => r.error)).toEqual([undefined]);
    expect(second.stderr()).not.toContain('TMPRL1100');
  });
});
