// The `auto` policy's judgement is made once per call: a brain worker SIGKILLed after the judgement (while the call
// waits for a person), or while the judge is still answering, or a handover while the call waits, leaves one
// tool_judged in the log and the call waiting on the same decision; the next worker or run does not judge it again.
import { resolveToolUseUpdate, sendMessageUpdate } from '../src/session/contract';
import { isJudgeRequest, judgeScriptKey } from '../src/dev/model-replies';
import type { SessionEvent } from '../src/session/events';
import { spawnBrainWorker, type ChildWorker } from './helpers/child-worker';
import { startHarness, startSession, waitForEvents, type Harness } from './helpers/env';
import { messagesUntilHandover, requiresAction, toolStep } from './helpers/actions';

let h: Harness;
const workers: ChildWorker[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
// Each test's workers go with it, so the next one's kill hits the worker that runs its calls.
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});
afterAll(async () => {
  h?.mock.release('judge-held');
  await h?.stop();
});

async function newWorker(): Promise<ChildWorker> {
  const w = await spawnBrainWorker(h);
  workers.push(w);
  return w;
}

const agent = { tools: ['session_events' as const], policies: { session_events: 'auto' as const } };
const judgeCalls = (id: string) => h.mock.requests(id).filter((r) => isJudgeRequest(r.body));
const judged = (events: SessionEvent[]) => events.filter((e) => e.type === 'tool_judged');
const ended = (events: SessionEvent[]) =>
  events.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn');

async function until(pred: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 30_000; !pred(); await new Promise((r) => setTimeout(r, 50)))
    if (Date.now() > deadline) throw new Error('condition not met within 30 s');
}

it('a worker killed after the judgement: the call waits on it, and runs once approved, judged once', async () => {
  const first = await newWorker();
  const handle = await startSession(h, { agent });
  const id = handle.workflowId;
  h.mock.script(id, { steps: [toolStep('session_events', { from: 0, limit: 5 })] });
  h.mock.script(judgeScriptKey(id), {
    steps: [{ reply: { content: [{ type: 'text', text: 'DECISION: ASK\nREASON: scripted to ask.' }] } }],
  });
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
  const asked = await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'approval_requested'));
  const use = asked.find((e) => e.type === 'tool_use')!;
  expect(judged(asked)).toMatchObject([
    { toolUseId: (use as { id: string }).id, permission: 'ask', reasonCode: 'high_risk' },
  ]);

  await first.kill('SIGKILL');
  await newWorker();
  await handle.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: (use as { id: string }).id, allow: true }] });
  const events = await waitForEvents(handle, ended);
  expect(judged(events)).toHaveLength(1);
  expect(judgeCalls(id)).toHaveLength(1);
  expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ isError: false });
});

it('a worker killed while the judge answers: the judge is asked again, and one judgement is logged', async () => {
  const first = await newWorker();
  const handle = await startSession(h, { agent });
  const id = handle.workflowId;
  h.mock.script(id, { steps: [toolStep('session_events', { from: 0, limit: 5 })] });
  h.mock.script(judgeScriptKey(id), { steps: [{ gate: 'judge-held' }] });
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
  await until(() => judgeCalls(id).length === 1);
  await first.kill('SIGKILL');
  await newWorker();
  // The retry, on the new worker, gets the built-in judge (the script is spent), which allows the call.
  const events = await waitForEvents(handle, ended);
  expect(judgeCalls(id).length).toBeGreaterThanOrEqual(2);
  expect(judged(events)).toMatchObject([{ permission: 'allow' }]);
  expect(events.some((e) => e.type === 'approval_requested')).toBe(false);
  expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(1);
});

it('a handover while an escalated call waits: the new run waits on the same judgement, judged once', async () => {
  await newWorker();
  const handle = await startSession(h, { agent: { ...agent, limits: { historyEvents: 100 } } });
  const id = handle.workflowId;
  h.mock.script(id, { steps: [toolStep('session_events', { from: 0, limit: 5 })] });
  h.mock.script(judgeScriptKey(id), {
    steps: [{ reply: { content: [{ type: 'text', text: 'DECISION: ASK\nREASON: scripted to ask.' }] } }],
  });
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
  const [pending] = await requiresAction(handle);
  await messagesUntilHandover(handle);
  const live = h.env.client.workflow.getHandle(id);
  expect(await requiresAction(live)).toMatchObject([
    { toolUseId: pending.toolUseId, policy: 'session_events: auto (high_risk)' },
  ]);
  await live.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: pending.toolUseId, allow: true }] });
  const events = await waitForEvents(live, ended);
  expect(judged(events)).toHaveLength(1);
  expect(judgeCalls(id)).toHaveLength(1);
  expect(events.filter((e) => e.type === 'tool_result')).toMatchObject([{ isError: false }]);
});
