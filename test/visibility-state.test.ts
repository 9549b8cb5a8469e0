// The state search attribute: a turn that starts from waiting_for_user is published as `running` only once it has run
// RUNNING_PUBLISH_DELAY_MS (its timer is cancelled with the turn's last task otherwise); a longer one is listed as
// `running` while it runs and `waiting_for_user` once it ends; an approval's wait and its end are published at once.
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { optionalTsToMs, tsToMs } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { resolveToolUseUpdate, sendMessageUpdate } from '../src/session/contract';
import { RUNNING_PUBLISH_DELAY_MS } from '../src/workflows/visibility';
import { requiresAction, toolStep } from './helpers/actions';
import { say, startHarness, startSession, turnDone, uniqueId, waitForEvents, type Harness } from './helpers/env';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

type Event = temporal.api.history.v1.IHistoryEvent;

/** The history's events from the one after `fromId` on. */
async function eventsAfter(handle: WorkflowHandle, fromId: number): Promise<Event[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((e) => Number(e.eventId) > fromId);
}

/** The AgentSessionState values the events upsert, in order. */
function stateUpserts(events: Event[]): string[] {
  return events.flatMap((e) => {
    const field = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.AgentSessionState;
    if (!field) return [];
    const value = defaultPayloadConverter.fromPayload<string | string[]>(field);
    return [Array.isArray(value) ? value.join(',') : value];
  });
}

/** The state timers (RUNNING_PUBLISH_DELAY_MS long) the events start, and how each ended. */
function stateTimers(events: Event[]): { id: string; ended: 'fired' | 'canceled' | 'pending'; lastedMs: number }[] {
  return events
    .filter((e) => optionalTsToMs(e.timerStartedEventAttributes?.startToFireTimeout) === RUNNING_PUBLISH_DELAY_MS)
    .map((start) => {
      const id = start.timerStartedEventAttributes!.timerId!;
      const end = events.find(
        (e) => (e.timerFiredEventAttributes ?? e.timerCanceledEventAttributes)?.timerId === id && e !== start,
      );
      return {
        id,
        ended: !end ? 'pending' : end.timerFiredEventAttributes ? 'fired' : 'canceled',
        lastedMs: end ? tsToMs(end.eventTime) - tsToMs(start.eventTime) : NaN,
      };
    });
}

async function lastEventId(handle: WorkflowHandle): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  return Number(events[events.length - 1].eventId);
}

/** Polls the visibility store until `query` lists the session, or fails after 30 s. */
async function waitListed(query: string, id: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ids: string[] = [];
    for await (const wf of h.env.client.workflow.list({ query: `WorkflowId="${id}" AND ${query}` }))
      ids.push(wf.workflowId);
    if (ids.includes(id)) return;
    if (Date.now() > deadline) throw new Error(`${query} does not list ${id}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

it('publishes running only for a turn that outlasts the delay, and its end after it', async () => {
  const id = uniqueId('ses-visibility');
  h.mock.script(id, {
    steps: [
      { reply: { content: [{ type: 'text', text: 'quick' }] } },
      { firstByteDelayMs: RUNNING_PUBLISH_DELAY_MS + 3000, reply: { content: [{ type: 'text', text: 'slow' }] } },
    ],
  });
  const handle = await startSession(h, { id });
  await waitListed('AgentSessionState="waiting_for_user"', id);

  // A quick turn: one state timer, which its end cancels, and no state upserted. (A machine too loaded to end the
  // turn within the delay lets the timer fire: then the turn is published as running, as any long turn is.)
  const beforeQuick = await lastEventId(handle);
  await say(handle, 'a quick one');
  const quick = await eventsAfter(handle, beforeQuick);
  const [quickTimer, ...more] = stateTimers(quick);
  expect(more).toEqual([]);
  if (quickTimer.ended === 'canceled') {
    expect(quickTimer.lastedMs).toBeLessThan(RUNNING_PUBLISH_DELAY_MS);
    expect(stateUpserts(quick)).toEqual([]);
  } else {
    expect(quickTimer.ended).toBe('fired');
    expect(stateUpserts(quick)).toEqual(['running', 'waiting_for_user']);
  }

  // A slow turn: listed as running while the model call is out, then as waiting for the user.
  const beforeSlow = await lastEventId(handle);
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'a slow one' }] });
  await waitListed('AgentSessionState="running"', id);
  await waitForEvents(handle, turnDone(seq));
  await waitListed('AgentSessionState="waiting_for_user"', id);
  const slow = await eventsAfter(handle, beforeSlow);
  expect(stateUpserts(slow)).toEqual(['running', 'waiting_for_user']);
  expect(stateTimers(slow)).toMatchObject([{ ended: 'fired' }]);
});

it("publishes an approval's wait and the turn's return to running at once", async () => {
  const id = uniqueId('ses-visibility-approval');
  h.mock.script(id, {
    steps: [
      toolStep('session_events', { from: 0, limit: 1 }),
      // After the approval the turn runs on past the delay: its running is published when it resumes, not 2 s in.
      { firstByteDelayMs: RUNNING_PUBLISH_DELAY_MS + 1500, reply: { content: [{ type: 'text', text: 'read it' }] } },
    ],
  });
  const handle = await startSession(h, {
    id,
    agent: { tools: ['session_events'], policies: { session_events: 'always_ask' } },
  });
  await waitListed('AgentSessionState="waiting_for_user"', id);
  const before = await lastEventId(handle);
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read your log' }] });
  const [pending] = await requiresAction(handle);
  await waitListed('AgentSessionState="requires_action"', id);
  await handle.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: pending.toolUseId, allow: true }] });
  await waitListed('AgentSessionState="running"', id);
  await waitForEvents(handle, turnDone(seq));
  await waitListed('AgentSessionState="waiting_for_user"', id);
  const events = await eventsAfter(handle, before);
  const states = stateUpserts(events);
  // The turn's start: running after the delay if the model's first reply came later than it, else never.
  expect(states.slice(-3)).toEqual(['requires_action', 'running', 'waiting_for_user']);
  expect(states.slice(0, -3)).toEqual(stateTimers(events)[0].ended === 'fired' ? ['running'] : []);
  // After the approval, running is upserted with no timer of its own, before the model's reply completes.
  const upsertId = (state: string) => Number(events.filter((e) => stateUpserts([e])[0] === state).pop()!.eventId);
  const lastModelCall = events.filter((e) => e.activityTaskCompletedEventAttributes).pop()!;
  expect(upsertId('running')).toBeGreaterThan(upsertId('requires_action'));
  expect(upsertId('running')).toBeLessThan(Number(lastModelCall.eventId));
  expect(stateTimers(events.filter((e) => Number(e.eventId) > upsertId('requires_action')))).toEqual([]);
});
