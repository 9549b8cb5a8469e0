// Brains are cattle: SIGKILL the worker process mid-call or while idle, start another, and the log is unchanged.
import type { WorkflowHandle } from '@temporalio/client';
import type { SessionEvent } from '../src/session/events';
import { endSignal, sendMessageUpdate, statusQuery } from '../src/workflows/messages';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { allEvents, say, startHarness, startSession, waitForEvents, type Harness } from './helpers/env';

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
  const w = await spawnWorker({ TEMPORAL_ADDRESS: h.env.address, ANTHROPIC_BASE_URL: h.mock.url, ANTHROPIC_API_KEY: 'test-key' });
  workers.push(w);
  return w;
}

const TURNS = ['Hello there', 'Please read the session log.', 'Thanks, bye'];

/** Times differ between runs, including inside tool output; everything else must be identical. */
function normalise(events: SessionEvent[]): unknown[] {
  return events.map(({ time: _t, ...rest }) => JSON.parse(JSON.stringify(rest).replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, 'T')));
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
    for (const t of TURNS) await say(handle, t);
    baseline = normalise(await finish(handle));
    await w.kill('SIGTERM');
    expect(baseline.length).toBe(11);
  });

  it('while callModel is in flight: another worker finishes the session with the same log', async () => {
    const first = await newWorker();
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 5_000 }] });
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: TURNS[0] }] });
    await waitUntil(() => h.mock.requests(handle.workflowId).length === 1);
    expect(h.mock.inFlight).toBeGreaterThan(0);
    await first.kill('SIGKILL');
    await newWorker();
    await waitForEvents(handle, (ev) => ev.some((e) => e.seq > seq && e.type === 'assistant_message'));
    for (const t of TURNS.slice(1)) await say(handle, t);
    const events = await finish(handle);
    expect(normalise(events)).toEqual(baseline);
    // The call was made at least twice (the lost attempt and its retry; a retry that lands on the dead worker's
    // stale poll, or heartbeats late on a loaded machine, adds one), yet it is answered once in the log.
    expect(h.mock.requests(handle.workflowId).length).toBeGreaterThanOrEqual(5);
  });

  it('while the session awaits input: another worker carries on with the same log', async () => {
    const first = await newWorker();
    const handle = await startSession(h);
    await say(handle, TURNS[0]);
    expect((await handle.query(statusQuery)).state).toBe('waiting_for_user');
    await first.kill('SIGKILL');
    await newWorker();
    for (const t of TURNS.slice(1)) await say(handle, t);
    const events = await finish(handle);
    expect(normalise(events)).toEqual(baseline);
    expect(h.mock.requests(handle.workflowId).length).toBe(4);
  });
});
