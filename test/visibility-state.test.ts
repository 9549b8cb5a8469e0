// The state search attribute: a turn over within RUNNING_PUBLISH_DELAY_MS writes nothing to visibility (its timer is
// cancelled with the turn's last task); a longer one is listed as `running` while it runs and `waiting_for_user`
// once it ends.
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { sendMessageUpdate } from '../src/session/contract';
import { RUNNING_PUBLISH_DELAY_MS } from '../src/workflows/visibility';
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

const count = (events: Event[], attr: keyof Event) => events.filter((e) => e[attr] != null).length;

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

  // A quick turn: its timer is started and cancelled, and no state is upserted.
  const beforeQuick = await lastEventId(handle);
  await say(handle, 'a quick one');
  const quick = await eventsAfter(handle, beforeQuick);
  expect(stateUpserts(quick)).toEqual([]);
  expect(count(quick, 'timerStartedEventAttributes')).toBe(1);
  expect(count(quick, 'timerCanceledEventAttributes')).toBe(1);
  expect(count(quick, 'timerFiredEventAttributes')).toBe(0);

  // A slow turn: listed as running while the model call is out, then as waiting for the user.
  const beforeSlow = await lastEventId(handle);
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'a slow one' }] });
  await waitListed('AgentSessionState="running"', id);
  await waitForEvents(handle, turnDone(seq));
  await waitListed('AgentSessionState="waiting_for_user"', id);
  const slow = await eventsAfter(handle, beforeSlow);
  expect(stateUpserts(slow)).toEqual(['running', 'waiting_for_user']);
  expect(count(slow, 'timerFiredEventAttributes')).toBe(1);
  expect(count(slow, 'timerCanceledEventAttributes')).toBe(0);
});
