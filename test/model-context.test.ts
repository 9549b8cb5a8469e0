// A model call's context comes from its own worker: the events each workflow task appended are handed to the
// worker's log cache, and the call's input carries a digest of those since the run's previous call. Only a run's
// first call reads the log by query; every later one is answered from the cache, with the same messages.
import { buildContext, FULL_WINDOW } from '../src/session/context-builder';
import { sendMessageUpdate } from '../src/session/contract';
import { startHarness, startSession, waitForEvents, type Harness } from './helpers/env';
import { toolStep } from './helpers/actions';
import type { SessionEvent } from '../src/session/events';

jest.setTimeout(120_000);

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.stop());

it('answers every model call after a run\'s first from the worker\'s cache, with the context the log gives', async () => {
  const handle = await startSession(h, { agent: { tools: ['session_events'], promptCaching: false } });
  h.mock.script(handle.workflowId, {
    steps: [
      toolStep('session_events', { from: 0, limit: 2 }),
      toolStep('session_events', { from: 1, limit: 1 }),
      { reply: { content: [{ type: 'text', text: 'Read it twice.' }] } },
      { reply: { content: [{ type: 'text', text: 'Again.' }] } },
    ],
  });
  const before = h.worker.status().modelContext!;
  const idle = (n: number) => (ev: SessionEvent[]) => ev.filter((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn').length === n;
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Read the log.' }] });
  await waitForEvents(handle, idle(1));
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Once more.' }] });
  const events = await waitForEvents(handle, idle(2));

  const after = h.worker.status().modelContext!;
  expect({ cached: after.cached - before.cached, read: after.read - before.read }).toEqual({ cached: 3, read: 1 });
  // Each call saw exactly the log up to the event it follows.
  const calls = h.mock.requests(handle.workflowId);
  expect(calls).toHaveLength(4);
  const replies = events.filter((e) => e.type === 'assistant_message');
  calls.forEach((call, i) => {
    const reply = replies[i];
    const through = reply.type === 'assistant_message' ? (reply.throughSeq ?? -1) : -1;
    const expected = buildContext({ events: events.filter((e) => e.seq <= through), window: FULL_WINDOW, system: undefined, tools: [], budgetTokens: Infinity });
    expect(call.body.messages).toEqual(JSON.parse(JSON.stringify(expected.messages)));
  });
});
