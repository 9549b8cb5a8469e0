// Whether a session's status changes go to the webhook outbox. A session reports them (one child workflow per change,
// src/workflows/status-webhooks.ts) only while an enabled endpoint of its workspace takes one of those events: the API
// says which at the start (`statusWebhooks` in the input), and when a workspace's endpoints change (each change marks
// the workspace in the same transaction) the relay tells every open session of the workspace by signal, and marks
// ended those whose workflow has closed, so the next change skips them. A session created while an endpoint changes
// reads again once its workflow has started, so one of the two always sees the change.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { statusWebhooksSignal, type StatusWebhooks } from '../session/contract';
import type { Queryable } from '../storage/db';
import { endpointsTakeAny, markAnnounced, pendingAnnouncements } from '../storage/repos/webhooks-repo';
import { SESSION_START_GRACE_SECONDS, markSessionsEnded, openSessions } from '../storage/repos/sessions-repo';
import { SESSION_STATUS_EVENT_TYPES } from './delivery';

/** Signals sent at once while announcing to a workspace's sessions. */
const CONCURRENCY = 16;

/** Whether the workspace's sessions should report their status changes now. */
export function statusWebhooksWanted(db: Queryable, workspaceId: string): Promise<StatusWebhooks> {
  return endpointsTakeAny(db, workspaceId, SESSION_STATUS_EVENT_TYPES);
}

/**
 * Tells one session; a session whose workflow has closed (or not started yet) has nothing to be told. Whether its
 * workflow took the signal.
 */
export async function tellSession(client: Client, sessionId: string, word: StatusWebhooks): Promise<boolean> {
  try {
    await client.workflow.getHandle(sessionId).signal(statusWebhooksSignal, word);
    return true;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    return false;
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
    const open = await openSessions(db, workspaceId, SESSION_START_GRACE_SECONDS);
    // Not found past the start's grace: the workflow has closed (the quota's count marks such sessions the same way).
    const ended: string[] = [];
    for (let i = 0; i < open.length; i += CONCURRENCY)
      await Promise.all(
        open.slice(i, i + CONCURRENCY).map(async ({ id, old }) => {
          if (!(await tellSession(client, id, word)) && old) ended.push(id);
        }),
      );
    if (ended.length > 0) await markSessionsEnded(db, ended);
    await markAnnounced(db, workspaceId, changedAt);
  }
  return pending.length;
}
