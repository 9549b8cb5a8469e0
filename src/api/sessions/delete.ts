// DELETE /v1/sessions/{id} removes a session permanently: its runs and histories in Temporal, its archive, its
// children, its sandboxes (through the workflow's own end), and every row that names it. The row is marked first,
// which makes the id a 404 on every other route at once and lets the work be finished after a crash: a retried
// delete finds the marked row and carries on, and each API process finishes the marked rows it finds at start.
import type { Client } from '@temporalio/client';
import type { SessionArchive } from '../../archive';
import { purgeSession } from '../../session-purge';
import type { Db } from '../../storage/db';
import type { BlobStore } from '../../storage/blobs';
import { deleteSessionFiles } from '../../storage/repos/files-repo';
import { stopSessionWork } from '../environment-work';
import { deleteSessionRows, deletedSessionIds, markSessionDeleted } from '../../storage/repos/sessions-repo';
import { recordWebhookEvent, webhookEventId } from '../../webhooks/webhook-events';

export interface DeleteDeps {
  db: Db;
  client: Client;
  archive: SessionArchive;
  /** The blob store the session's files (its outputs) are in. */
  blobs: BlobStore;
}

/** Deletes session `id` of the workspace; false when it has no such session (or it is deleted already). */
export async function deleteSession(deps: DeleteDeps, workspaceId: string, id: string): Promise<boolean> {
  // A row marked by an earlier attempt is found again, so a retry finishes what that one started.
  const marked = await deps.db.transaction(async (tx) => {
    if (!(await markSessionDeleted(tx, workspaceId, id))) return false;
    await recordWebhookEvent(tx, {
      workspaceId,
      type: 'session.deleted',
      data: { id },
      id: webhookEventId(`${id}/deleted`),
    });
    return true;
  });
  if (!marked) return false;
  await finish(deps, id);
  return true;
}

/** The steps after the mark, in the order that keeps each repeatable: what is found through the row goes last. */
async function finish(deps: DeleteDeps, id: string): Promise<void> {
  await purgeSession(deps.client, deps.archive, id);
  // A self-hosted worker still serving it is told to stop (its heartbeat reads stopping); the item stays listed.
  await stopSessionWork(deps.db, id);
  // The files scoped to the session (its outputs) go with it, blobs included; then the rows that name it.
  await deps.db.transaction((tx) => deleteSessionFiles(tx, deps.blobs, id));
  await deleteSessionRows(deps.db, id);
}

/**
 * Finishes the deletes that a stopped process left marked, one at a time in the background. Returns a stop
 * function that lets the delete under way finish and starts no other.
 */
export function resumeDeletes(deps: DeleteDeps, log: (m: string) => void): () => Promise<void> {
  let stopped = false;
  const run = (async () => {
    for (const id of await deletedSessionIds(deps.db)) {
      if (stopped) return;
      await finish(deps, id).catch((e: unknown) =>
        log(`could not finish deleting session ${id} (the next start tries again): ${(e as Error).message}`),
      );
    }
  })().catch((e: unknown) => log(`could not look for unfinished session deletes: ${(e as Error).message}`));
  return async () => {
    stopped = true;
    await run;
  };
}
