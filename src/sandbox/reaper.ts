// The reaper: removes a host's containers whose owning session has ended, or that it no longer uses.
import type { Client } from '@temporalio/client';
import { statusQuery } from '../session/contract';
import type { SandboxProvider } from './provider';
import type { OwnershipRegistry } from './ownership';

export interface ReapResult {
  removed: string[];
  kept: number;
}

/**
 * A container's owner is the session the host's registry names (a hand-off moves it), else the session it was
 * created for. It is an orphan when its owner is not running (ended, terminated, unknown), or when the running
 * owner does not list it and it is older than `graceMs` (so one being provisioned right now is left alone).
 */
export async function reapOrphans(opts: {
  provider: SandboxProvider;
  client: Client;
  hostId: string;
  registry?: OwnershipRegistry;
  graceMs?: number;
  now?: number;
}): Promise<ReapResult> {
  const grace = opts.graceMs ?? 15 * 60_000;
  const now = opts.now ?? Date.now();
  const found = await opts.provider.list(opts.hostId);
  const bySession = new Map<string, typeof found>();
  for (const s of found) {
    const owner = opts.registry?.get(s.sandboxId)?.owner ?? s.sessionId;
    bySession.set(owner, [...(bySession.get(owner) ?? []), s]);
  }
  const removed: string[] = [];
  let kept = 0;
  for (const [sessionId, containers] of bySession) {
    const handle = opts.client.workflow.getHandle(sessionId);
    let running = false;
    try {
      running = (await handle.describe()).status.name === 'RUNNING';
    } catch (err) {
      if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
    }
    let current = new Set<string>();
    if (running) {
      try {
        current = new Set((await handle.query(statusQuery)).sandboxes.map((s) => s.sandboxId));
      } catch {
        kept += containers.length;
        continue;
      }
    }
    for (const c of containers) {
      const orphan = !running || (!current.has(c.sandboxId) && now - c.createdMs > grace);
      if (!orphan) {
        kept++;
        continue;
      }
      // A replaced container of a live session shares its workspace with the current one: keep the volume.
      await opts.provider.destroy(c.sandboxId, { keepWorkspace: running });
      opts.registry?.remove(c.sandboxId);
      removed.push(c.sandboxId);
    }
  }
  return { removed, kept };
}
