// Which workers stream a session right now: those running its model calls and tool executions, found by the
// identity they poll with (it names their stream endpoint).
import type { Client } from '@temporalio/client';
import { streamUrlOf } from './token';

const PREVIEW_ACTIVITIES = new Set(['callModel', 'callModelToolRefs', 'execute']);

export interface StreamingWorkers {
  /** The stream endpoints of the workers running the session's previewed activities. */
  urls: string[];
  /** A sandbox is being provisioned (no preview yet; a watcher may say so). */
  provisioning: boolean;
}

/** The session's streaming workers, or undefined when it cannot be described (gone, or Temporal out of reach). */
export async function streamingWorkers(client: Client, sessionId: string): Promise<StreamingWorkers | undefined> {
  let pending;
  try {
    pending = (await client.workflow.getHandle(sessionId).describe()).raw.pendingActivities ?? [];
  } catch {
    return undefined;
  }
  const urls = new Set<string>();
  let provisioning = false;
  for (const pa of pending) {
    const type = pa.activityType?.name ?? '';
    if (type === 'provisionSandbox') provisioning = true;
    if (!PREVIEW_ACTIVITIES.has(type)) continue;
    const url = streamUrlOf(pa.lastWorkerIdentity);
    if (url) urls.add(url);
  }
  return { urls: [...urls], provisioning };
}
