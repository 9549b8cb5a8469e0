// Removing a session for good: every run of its workflow and their histories in Temporal, its sealed archive
// segments, and the same for each child session (sub-agent) it started. Each step is idempotent, so a purge cut
// short by a crash is finished by running it again.
import type { Client } from '@temporalio/client';
import type { SessionArchive } from './archive';
import { endSignal } from './session/contract';
import { isSessionClosed, isWorkflowNotFound } from './temporal-errors';

/** How long a session has to end on its own (destroying its sandboxes, sealing its log) before it is terminated. */
const END_GRACE_MS = 15_000;
const POLL_MS = 200;
/** How often the end signal is sent again while waiting: a signal can arrive as the run continues as new. */
const RESIGNAL_MS = 2_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quoted = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The status of a session's latest run, or undefined when Temporal has none. */
async function latestStatus(client: Client, id: string): Promise<string | undefined> {
  try {
    return (await client.workflow.getHandle(id).describe()).status.name;
  } catch (e) {
    if (isWorkflowNotFound(e)) return undefined;
    throw e;
  }
}

/**
 * Ends the session's running run, if any: first by the `end` signal, so the workflow destroys its sandboxes (and
 * their workspace volumes), stops its children and seals its log the way every session ends; and if it has not
 * closed within END_GRACE_MS (no brain worker, a stuck run), by terminating it. A terminated session's sandboxes
 * are left to its hands hosts' reaper, which removes the containers and volumes of sessions that are not running.
 */
export async function stopSession(client: Client, id: string, reason = 'deleted'): Promise<void> {
  const handle = client.workflow.getHandle(id);
  const deadline = Date.now() + END_GRACE_MS;
  let signalled = 0;
  while ((await latestStatus(client, id)) === 'RUNNING') {
    if (Date.now() >= deadline) {
      await handle.terminate(`session ${reason}`).catch((e: unknown) => {
        if (!isWorkflowNotFound(e)) throw e;
      });
      return;
    }
    if (Date.now() - signalled >= RESIGNAL_MS) {
      signalled = Date.now();
      await handle.signal(endSignal, { reason }).catch((e: unknown) => {
        if (!isSessionClosed(e)) throw e;
      });
    }
    await sleep(POLL_MS);
  }
}

/** Every run of the workflow `id` Temporal still has (across continue-as-new and wakes), the latest included. */
async function runsOf(client: Client, id: string): Promise<string[]> {
  const runs = new Set<string>();
  for await (const wf of client.workflow.list({ query: `WorkflowId = ${quoted(id)}` }))
    if (wf.workflowId === id) runs.add(wf.runId);
  // Visibility trails the executions a little: the latest run is also asked for by id.
  try {
    runs.add((await client.workflow.getHandle(id).describe()).runId);
  } catch (e) {
    if (!isWorkflowNotFound(e)) throw e;
  }
  return [...runs];
}

/**
 * The child sessions `id` started: from each run's history (every child workflow it initiated, sealed or not)
 * and from the sealed log (`subagent_started`, which outlives the histories past retention).
 */
async function childrenOf(
  client: Client,
  archive: SessionArchive,
  id: string,
  runs: readonly string[],
): Promise<Set<string>> {
  const children = new Set<string>();
  for (const runId of runs) {
    let history;
    try {
      history = await client.workflow.getHandle(id, runId).fetchHistory();
    } catch (e) {
      if (isWorkflowNotFound(e)) continue;
      throw e;
    }
    for (const ev of history.events ?? []) {
      const child = ev.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
      // A status change's webhook writer (src/workflows/status-webhooks.ts) is no session.
      if (child && !child.startsWith('webhook-status-')) children.add(child);
    }
  }
  for (const segment of await archive.segments(id)) {
    if (segment.kind !== 'events') continue; // a fork's linked prefix, whose children are its source's
    const events = await archive.readSegment(id, segment, segment.fromSeq, segment.throughSeq + 1 - segment.fromSeq);
    for (const e of events) if (e.type === 'subagent_started') children.add(e.sessionId);
  }
  children.delete(id);
  return children;
}

/** Deletes one run's execution and history. The server removes it asynchronously; a run already gone is fine. */
async function deleteRun(client: Client, workflowId: string, runId: string): Promise<void> {
  try {
    await client.workflowService.deleteWorkflowExecution({
      namespace: client.options.namespace,
      workflowExecution: { workflowId, runId },
    });
  } catch (e) {
    if (!isWorkflowNotFound(e)) throw e;
  }
}

/**
 * Purges session `id` and, first, every child session it started (depth first, so a retry still finds the
 * children through the parent's history and log): stops it, deletes every run Temporal holds, then its archive.
 */
export async function purgeSession(
  client: Client,
  archive: SessionArchive,
  id: string,
  seen = new Set<string>(),
): Promise<void> {
  if (seen.has(id)) return;
  seen.add(id);
  await stopSession(client, id);
  const runs = await runsOf(client, id);
  for (const child of await childrenOf(client, archive, id, runs)) await purgeSession(client, archive, child, seen);
  // Runs started since the listing (a wake racing the delete) are stopped and listed again.
  await stopSession(client, id);
  for (const runId of new Set([...runs, ...(await runsOf(client, id))])) await deleteRun(client, id, runId);
  await archive.delete(id);
}
