// What the API writes into a session's log besides user input: a `sessions.update` as `session_updated` (shown as
// `session.updated`), and `user.interrupt` through the acknowledged interrupt, so its echo carries the id the
// event has in `events.list` and the stream. The log stays the only source of events: every API process projects
// the same ids from it.
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { interruptUpdate, updateSessionUpdate, type SessionUpdate } from '../../session/contract';
import { badRequest, conflict } from '../api-error';
import type { SessionFeeds } from './feed';
import { eventId } from './projection';
import { isSessionClosed } from '../../temporal-errors';

/** A workflow that has ended (or is gone) takes no more events. */
const ended = isSessionClosed;

/** How long an interrupt's echo waits for a handover in progress to append it, at most. */
const HANDOVER_WAIT_MS = 10_000;

/**
 * Records what `sessions.update` changed in the session's log: the title when it changed, the whole metadata bag
 * when the update set metadata and the bag changed (not when it was cleared to empty, as the SDK documents).
 * Nothing is recorded when nothing changed, or when the session has ended (its log is closed).
 */
export async function recordSessionUpdate(
  client: Client,
  sessionId: string,
  before: { title: string | null; metadata: Record<string, string> },
  after: { title: string | null; metadata: Record<string, string> },
  sent: { title: boolean; metadata: boolean },
): Promise<void> {
  const change: SessionUpdate = {};
  if (sent.title && after.title !== before.title) change.title = after.title;
  if (
    sent.metadata &&
    JSON.stringify(after.metadata) !== JSON.stringify(before.metadata) &&
    Object.keys(after.metadata).length > 0
  )
    change.metadata = after.metadata;
  if (change.title === undefined && change.metadata === undefined) return;
  try {
    await client.workflow.getHandle(sessionId).executeUpdate(updateSessionUpdate, { args: [change] });
  } catch (e) {
    // An ended session's log is closed; a run of an older build refuses the update: the row alone changes.
    if (!ended(e) && !(e instanceof WorkflowUpdateFailedError)) throw e;
  }
}

/** Interrupts the session and answers with the id of its `user.interrupt` event. */
export async function interruptAck(client: Client, feeds: SessionFeeds, sessionId: string): Promise<string> {
  let r: { seq: number | null; after: number };
  try {
    r = await client.workflow
      .getHandle(sessionId)
      .executeUpdate(interruptUpdate, { args: [{ reason: 'user.interrupt' }] });
  } catch (e) {
    if (ended(e)) throw conflict(`session ${sessionId} has ended`);
    if (e instanceof WorkflowUpdateFailedError)
      throw badRequest(`session ${sessionId} refused the interrupt: ${(e.cause?.message ?? e.message).split('\n')[0]}`);
    throw e;
  }
  if (r.seq !== null) return eventId(sessionId, r.seq);
  // A handover was in progress: its run appends the interrupt after seq `after` before it hands over.
  const deadline = Date.now() + HANDOVER_WAIT_MS;
  for (;;) {
    const feed = await feeds.get(sessionId);
    const ids = new Set(feed.events.filter((e) => e.type === 'user.interrupt').map((e) => e.id));
    for (let s = r.after; s < feed.seq; s++) if (ids.has(eventId(sessionId, s))) return eventId(sessionId, s);
    if (Date.now() > deadline)
      throw conflict(
        `session ${sessionId} took the interrupt during a handover and has not logged it yet; list its events to find it`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
