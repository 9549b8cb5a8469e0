// An outcome's loop survives crashes and handovers without grading an iteration twice: a brain worker SIGKILLed while
// the grader answers (the grader is asked again, one evaluation is logged), or while the agent revises (the next
// worker goes on from the recorded verdict), and a handover in the middle of the agent's turn (the next run grades).
import { defineOutcomeUpdate, statusQuery } from '../src/session/contract';
import { graderScriptKey, isGraderRequest } from '../src/dev/model-replies';
import type { MockStep } from '../src/dev/model-script';
import type { SessionEvent } from '../src/session/events';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { runsOf, startHarness, startSession, waitForEvents, type Harness } from './helpers/env';
import { toolStep } from './helpers/actions';

let h: Harness;
const workers: ChildWorker[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});
afterAll(async () => {
  h?.mock.release('grader-held');
  h?.mock.release('revision-held');
  await h?.stop();
});

async function newWorker(): Promise<ChildWorker> {
  const w = await spawnWorker({
    TEMPORAL_ADDRESS: h.env.address,
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
  });
  workers.push(w);
  return w;
}

const say = (text: string): MockStep => ({ reply: { content: [{ type: 'text', text }] } });
const verdict = (v: string, explanation: string): MockStep => say(`VERDICT: ${v}\nEXPLANATION: ${explanation}`);
const outcome = (n: number) => ({
  outcomeId: `outc_crash${n}`,
  description: 'Write a haiku about the sea.',
  rubric: 'Three lines about the sea.',
  maxIterations: 3,
});
const graderCalls = (id: string) => h.mock.requests(id).filter((r) => isGraderRequest(r.body));
const evaluated = (events: SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'outcome_evaluated' ? [[e.iteration, e.result]] : []));
const started = (events: SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'outcome_evaluation_started' ? [e.iteration] : []));
const over = (events: SessionEvent[]) =>
  events.some((e) => e.type === 'outcome_evaluated' && e.result !== 'needs_revision');

async function until(pred: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 30_000; !pred(); await new Promise((r) => setTimeout(r, 50)))
    if (Date.now() > deadline) throw new Error('condition not met within 30 s');
}

it('a worker killed while the grader answers: the grader is asked again, and one evaluation is logged', async () => {
  const first = await newWorker();
  const handle = await startSession(h, { agent: { tools: [], sandboxes: {} } });
  const id = handle.workflowId;
  h.mock.script(id, { steps: [say('salt wind on the shore')] });
  h.mock.script(graderScriptKey(id), { steps: [{ gate: 'grader-held' }] });
  await handle.executeUpdate(defineOutcomeUpdate, { args: [outcome(1)] });
  await until(() => graderCalls(id).length === 1);
  await first.kill('SIGKILL');
  await newWorker();
  // The retry, on the new worker, gets the built-in grader (the script is spent), which is satisfied.
  const events = await waitForEvents(handle, over);
  expect(graderCalls(id).length).toBeGreaterThanOrEqual(2);
  expect(started(events)).toEqual([0]);
  expect(evaluated(events)).toEqual([[0, 'satisfied']]);
  expect((await handle.query(statusQuery)).outcomes).toMatchObject([{ result: 'satisfied', iteration: 0 }]);
});

it('a worker killed while the agent revises: the next one goes on from the verdict, each iteration graded once', async () => {
  const first = await newWorker();
  const handle = await startSession(h, { agent: { tools: [], sandboxes: {} } });
  const id = handle.workflowId;
  h.mock.script(id, { steps: [say('one line'), { gate: 'revision-held', ...say('three\nlines\nnow') }] });
  h.mock.script(graderScriptKey(id), {
    steps: [verdict('NEEDS_REVISION', 'only one line'), verdict('SATISFIED', 'three lines')],
  });
  await handle.executeUpdate(defineOutcomeUpdate, { args: [outcome(2)] });
  await until(() => h.mock.requests(id).filter((r) => !isGraderRequest(r.body)).length === 2);
  await first.kill('SIGKILL');
  await newWorker();
  h.mock.release('revision-held');
  const events = await waitForEvents(handle, over);
  expect(started(events)).toEqual([0, 1]);
  expect(evaluated(events)).toEqual([
    [0, 'needs_revision'],
    [1, 'satisfied'],
  ]);
  expect(graderCalls(id)).toHaveLength(2);
  expect((await handle.query(statusQuery)).outcomes).toMatchObject([
    { result: 'satisfied', iteration: 1, explanation: 'three lines' },
  ]);
});

it('a handover in the middle of the agent’s turn: the next run grades it, and the outcome is carried', async () => {
  await newWorker();
  const handle = await startSession(h, {
    agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
  });
  const id = handle.workflowId;
  const reads = Array.from({ length: 14 }, (_, i) => toolStep('session_events', { from: i, limit: 1 }));
  h.mock.script(id, { steps: [...reads, say('Waves'), say('Waves\nsalt wind')] });
  h.mock.script(graderScriptKey(id), {
    steps: [verdict('NEEDS_REVISION', 'one line'), verdict('SATISFIED', 'fine')],
  });
  await handle.executeUpdate(defineOutcomeUpdate, { args: [outcome(3)] });
  const live = h.env.client.workflow.getHandle(id);
  for (let i = 0; (await live.query(statusQuery)).outcomes?.[0]?.result !== 'satisfied'; i++) {
    if (i > 600) throw new Error('the outcome was not satisfied');
    await new Promise((r) => setTimeout(r, 100));
  }
  const runs = await runsOf(h.env.client, id);
  expect(runs.length).toBeGreaterThanOrEqual(2);
  const status = await live.query(statusQuery);
  expect(status.run).toBeGreaterThanOrEqual(2);
  expect(status.outcomes).toMatchObject([{ outcomeId: 'outc_crash3', result: 'satisfied', iteration: 1 }]);
  expect(graderCalls(id)).toHaveLength(2);
});
