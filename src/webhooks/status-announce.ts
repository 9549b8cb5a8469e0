// Whether a session's status changes go to the webhook outbox. A session reports them (one child workflow per change,
// src/workflows/status-webhooks.ts) only while an enabled endpoint of its workspace takes one of those events: the API
// says which at the start (`statusWebhooks` in the input), and when a workspace's endpoints change (each change marks
// the workspace in the same transaction) the relay tells every session of the workspace by signal. A session created
// while an endpoint changes reads again once its workflow has started, so one of the two always sees the change.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { statusWebhooksSignal, type StatusWebhooks } from '../session/contract';
import type { Queryable } from '../storage/db';
import {
  endpointsTakeAny,
  markAnnounced,
  pendingAnnouncements,
  workspaceSessionIds,
} from '../storage/repos/webhooks-repo';
import { SESSION_STATUS_EVENT_TYPES } from './delivery';

/** Signals sent at once while announcing to a workspace's sessions. */
const CONCURRENCY = 16;

/** Whether the workspace's sessions should report their status changes now. */
export function statusWebhooksWanted(db: Queryable, workspaceId: string): Promise<StatusWebhooks> {
  return endpointsTakeAny(db, workspaceId, SESSION_STATUS_EVENT_TYPES);
}

/** Tells one session; a session whose workflow has closed (or never started) has nothing to be told. */
export async function tellSession(client: Client, sessionId: string, word: StatusWebhooks): Promise<void> {
  try {
    await client.workflow.getHandle(sessionId).signal(statusWebhooksSignal, word);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}

/**
 * Announces each workspace whose endpoints changed to its sessions; a workspace is marked announced only once every
 * session was told, so a pass that fails (Temporal away) is taken up again by the next. Returns the workspaces done.
 */
export async function announceStatusWebhooks(db: Queryable, client: Client, limit = 20): Promise<number> {
  const pending = await pendingAnnouncements(db, limit);
  for (const { workspace_id: workspaceId, changed_at: changedAt } of pending) {
    const word = await statusWebhooksWanted(db, workspaceId);
    const ids = await workspaceSessionIds(db, workspaceId);
    for (let i = 0; i < ids.length; i += CONCURRENCY)
      await Promise.all(ids.slice(i, i + CONCURRENCY).map((id) => tellSession(client, id, word)));
    await markAnnounced(db, workspaceId, changedAt);
  }
  return pending.length;
}
