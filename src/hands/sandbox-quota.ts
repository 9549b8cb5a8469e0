// SANDBOX_QUOTA: how many sandboxes one workspace may have running at once, counted in the API's database by every
// hands host that reaches it. A provision takes a lease under the workspace's advisory lock; stopping, destroying
// or replacing the sandbox gives it back, and a hand-off moves it to the receiving session. At the quota, leases are
// checked against Temporal first, so a sandbox whose session ended without returning it (a terminated workflow, a
// host that died) frees its place.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { statusQuery } from '../session/contract';
import { DEFAULT_WORKSPACE } from '../session/search-attributes';
import type { Db, Queryable } from '../storage/db';
import { randomUUID } from 'node:crypto';
import { PlatformError } from '../session/platform-error';

export class SandboxQuotaError extends PlatformError {}

export interface Lease {
  id: string;
  session_id: string;
  sandbox_id: string | null;
  /** Taken within the last minute: its provisioning may still be under way, or not yet recorded by its session. */
  fresh: boolean;
}

export interface SandboxQuota {
  /** A lease for the sandbox `name` of `sessionId`, or SandboxQuotaError; undefined when no database is open. */
  acquire(
    sessionId: string,
    name: string,
    hostId: string,
    isLive: (lease: Lease) => Promise<boolean>,
  ): Promise<string | undefined>;
  /** The provisioned sandbox the lease is for. */
  bind(leaseId: string, sandboxId: string): Promise<void>;
  /** Gives back a lease whose provisioning failed. */
  drop(leaseId: string): Promise<void>;
  /** Gives back the lease of a sandbox that stopped or was destroyed. */
  release(sandboxId: string): Promise<void>;
  /** A handed-off sandbox counts for its new session. */
  transfer(sandboxId: string, to: string, name: string): Promise<void>;
}

// The first key of the two-key advisory lock; the second is the workspace.
const SANDBOX_LOCK = 0x73616e64;

/** The workspace a session counts in: an API session's own (a sub-agent's is its root session's), else `default`. */
async function workspaceOf(tx: Queryable, sessionId: string): Promise<{ id: string; name: string }> {
  const root = sessionId.split('.')[0];
  const [row] = await tx.query<{ id: string; name: string }>(
    'select w.id, w.name from sessions s join workspaces w on w.id = s.workspace_id where s.id = $1',
    [root],
  );
  return row ?? { id: `wrkspc_${DEFAULT_WORKSPACE}`, name: DEFAULT_WORKSPACE };
}

export function createSandboxQuota(db: () => Db | undefined, limit: number): SandboxQuota {
  const run = async (fn: (q: Queryable) => Promise<unknown>) => {
    const open = db();
    if (open) await fn(open);
  };
  return {
    async acquire(sessionId, name, hostId, isLive) {
      const open = db();
      if (!open) return undefined;
      return open.transaction(async (tx) => {
        const ws = await workspaceOf(tx, sessionId);
        await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [SANDBOX_LOCK, ws.id]);
        // This slot's previous sandbox was stopped or lost (or this is a retry): its lease ends here.
        await tx.query('delete from sandbox_leases where session_id = $1 and name = $2', [sessionId, name]);
        const leases = () =>
          tx.query<Lease>(
            `select id, session_id, sandbox_id, acquired_at > now() - interval '1 minute' as fresh from sandbox_leases where workspace_id = $1`,
            [ws.id],
          );
        let held = await leases();
        if (held.length >= limit) {
          const dead = (await Promise.all(held.map(async (l) => ((await isLive(l)) ? undefined : l.id)))).filter(
            (id): id is string => id !== undefined,
          );
          if (dead.length > 0) await tx.query('delete from sandbox_leases where id = any($1::text[])', [dead]);
          held = await leases();
        }
        if (held.length >= limit) {
          throw new SandboxQuotaError(
            `workspace ${ws.name} has ${held.length} sandbox${held.length === 1 ? '' : 'es'} running, its quota (SANDBOX_QUOTA ${limit}); one frees up when a session's sandbox stops (idle) or its session ends`,
          );
        }
        const id = randomUUID();
        await tx.query(
          'insert into sandbox_leases (id, workspace_id, session_id, name, host_id) values ($1, $2, $3, $4, $5)',
          [id, ws.id, sessionId, name, hostId],
        );
        return id;
      });
    },
    bind: (leaseId, sandboxId) =>
      run(async (q) => {
        // A resumed sandbox keeps its id: any lease still naming it is this one's predecessor.
        await q.query('delete from sandbox_leases where sandbox_id = $1 and id <> $2', [sandboxId, leaseId]);
        await q.query('update sandbox_leases set sandbox_id = $2 where id = $1', [leaseId, sandboxId]);
      }),
    drop: (leaseId) => run((q) => q.query('delete from sandbox_leases where id = $1', [leaseId])),
    release: (sandboxId) => run((q) => q.query('delete from sandbox_leases where sandbox_id = $1', [sandboxId])),
    transfer: (sandboxId, to, name) =>
      run((q) =>
        q.query('update sandbox_leases set session_id = $2, name = $3 where sandbox_id = $1', [sandboxId, to, name]),
      ),
  };
}

/**
 * Whether a lease still stands for a running sandbox: its session's workflow is running and lists the sandbox as
 * running, or is still provisioning it. A fresh lease stands (its session may not have recorded the sandbox yet),
 * and so does one whose session does not answer (a session busy replaying is not proof of anything).
 */
export async function leaseIsLive(client: Client, lease: Lease): Promise<boolean> {
  if (lease.fresh) return true;
  const handle = client.workflow.getHandle(lease.session_id);
  try {
    if ((await handle.describe()).status.name !== 'RUNNING') return false;
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return false;
    return true;
  }
  // Still provisioning (a setup may take minutes); a provisioning that died is retried under the same lease.
  if (!lease.sandbox_id) return true;
  try {
    const status = await handle.query(statusQuery);
    return status.sandboxes.some((s) => s.sandboxId === lease.sandbox_id && s.state === 'running');
  } catch {
    return true;
  }
}
