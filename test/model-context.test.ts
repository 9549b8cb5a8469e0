// A model call's context comes from its own worker: the events each workflow task appended are handed to the
// worker's log cache, and the call's input carries a digest of those since the run's previous call. Only a run's
// first call reads the log by query; every later one is answered from the cache, with the same messages. A local
// model call (limits.modelCall local) reads neither: its workflow hands it the events.
import { buildContext, FULL_WINDOW } from '../src/session/context-builder';
import { sendMessageUpdate } from '../src/session/contract';
import { startHarness, startSession, waitForEvents, type Harness } from './helpers/env';
import { toolStep } from './helpers/actions';
import type { SessionEvent } from '../src/session/events';
import { temporal } from '@temporalio/proto';
import type { MockStep } from '../src/dev/model-script';
import type { AgentInput } from '../src/session/agent';

jest.setTimeout(120_000);

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.stop());

/**
 * Two turns on a session scripted with `steps`; checks that each model call saw exactly the log up to the event
 * it follows, and returns the session's events and how the worker's context cache counted the calls.
 */
async function twoTurns(agent: Partial<AgentInput>, steps: MockStep[], calls: number) {
  const handle = await startSession(h, { agent: { tools: ['session_events'], promptCaching: false, ...agent } });
  h.mock.script(handle.workflowId, { steps });
  const before = h.worker.status().modelContext!;
  const idle = (n: number) => (ev: SessionEvent[]) =>
    ev.filter((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn').length === n;
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Read the log.' }] });
  await waitForEvents(handle, idle(1));
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Once more.' }] });
  const events = await waitForEvents(handle, idle(2));
  const after = h.worker.status().modelContext!;
  const requests = h.mock.requests(handle.workflowId);
  expect(requests).toHaveLength(calls);
  const replies = events.filter((e) => e.type === 'assistant_message');
  requests.forEach((call, i) => {
    const reply = replies[i];
    const through = reply.type === 'assistant_message' ? (reply.throughSeq ?? -1) : -1;
    const expected = buildContext({
      events: events.filter((e) => e.seq <= through),
      window: FULL_WINDOW,
      system: undefined,
      tools: [],
      budgetTokens: Infinity,
    });
    expect(call.body.messages).toEqual(JSON.parse(JSON.stringify(expected.messages)));
  });
  return { handle, cache: { cached: after.cached - before.cached, read: after.read - before.read } };
}

it("answers every model call after a run's first from the worker's cache, with the context the log gives", async () => {
  const { cache } = await twoTurns(
    {},
    [
      toolStep('session_events', { from: 0, limit: 2 }),
      toolStep('session_events', { from: 1, limit: 1 }),
      { reply: { content: [{ type: 'text', text: 'Read it twice.' }] } },
      { reply: { content: [{ type: 'text', text: 'Again.' }] } },
    ],
    4,
  );
  expect(cache).toEqual({ cached: 3, read: 1 });
});

it("runs the model call as a local activity with limits.modelCall local, handed the run's events", async () => {
  const steps: MockStep[] = [
    toolStep('session_events', { from: 0, limit: 2 }),
    { reply: { content: [{ type: 'text', text: 'Read it.' }] } },
    { reply: { content: [{ type: 'text', text: 'Again.' }] } },
  ];
  const { handle, cache } = await twoTurns({ limits: { modelCall: 'local' } }, steps, 3);
  // No call read the log or the cache: each was handed its events.
  expect(cache).toEqual({ cached: 0, read: 0 });
  // In history: a marker per call, and no callModel activity.
  const history = await handle.fetchHistory();
  const E = temporal.api.enums.v1.EventType;
  const scheduled = (history.events ?? [])
    .filter((e) => e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
  expect(scheduled.filter((name) => name?.startsWith('callModel'))).toEqual([]);
  expect(
    (history.events ?? []).filter(
      (e) =>
        e.eventType === E.EVENT_TYPE_MARKER_RECORDED &&
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    ),
  ).toHaveLength(3);
});
