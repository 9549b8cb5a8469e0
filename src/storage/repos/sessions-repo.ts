// The sessions table: the API's index of the sessions it started (their workflows hold everything else), and the
// rows of the other tables that a session's delete removes with it.
import { deleteSessionSnapshots } from './workspace-snapshots-repo';
import type { Db, Queryable } from '../db';
import { SESSION_HOME_ROWS } from './sandbox-homes-repo';
import { SESSION_MOUNT_ROWS } from './session-mounts-repo';
import { SESSION_WORK_ROWS } from './work-repo';

export interface SessionRow {
  id: string;
  pos: number;
  agent_id: string;
  agent_version: number;
  environment_id: string;
  title: string | null;
  metadata: Record<string, string>;
  vault_ids: string[];
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  /** The budget in minor units of `budget_currency`, or null when the session has none. */
  budget_amount: number | null;
  budget_currency: string | null;
  /** An update removed the budget: it cannot be set again. */
  budget_removed: boolean;
  /** The deployment that created the session, if one did. */
  deployment_id: string | null;
  /** The agent the session runs, when it is not the agent version as stored (overrides, a mid-session update). */
  agent_config: Record<string, unknown> | null;
}

const COLUMNS =
  'id, pos, agent_id, agent_version, environment_id, title, metadata, vault_ids, created_at, updated_at, archived_at, budget_amount, budget_currency, budget_removed, deployment_id, agent_config';

/** The workspace's session `id`, unless it is deleted (or being deleted). */
export async function findSession(db: Queryable, workspaceId: string, id: string): Promise<SessionRow | undefined> {
  const [row] = await db.query<SessionRow>(
    `select ${COLUMNS} from sessions where id = $1 and workspace_id = $2 and deleted_at is null`,
    [id, workspaceId],
  );
  return row;
}

export interface NewSession {
  id: string;
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  environmentId: string;
  title: string | null;
  metadata: Record<string, string>;
  vaultIds: string[];
  budget?: { amount: number; currency: string };
  deploymentId?: string;
  /** The agent with its overrides applied, when the session was created with any. */
  agentConfig?: Record<string, unknown>;
}

export async function insertSession(db: Queryable, s: NewSession): Promise<void> {
  await db.query(
    'insert into sessions (id, workspace_id, agent_id, agent_version, environment_id, title, metadata, vault_ids, budget_amount, budget_currency, deployment_id, agent_config, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now(), now())',
    [
      s.id,
      s.workspaceId,
      s.agentId,
      s.agentVersion,
      s.environmentId,
      s.title,
      s.metadata,
      JSON.stringify(s.vaultIds),
      s.budget?.amount ?? null,
      s.budget?.currency ?? null,
      s.deploymentId ?? null,
      s.agentConfig ? JSON.stringify(s.agentConfig) : null,
    ],
  );
}

/** Records the agent the session runs from now on (a mid-session update of its tools or MCP servers). */
export async function updateSessionAgent(db: Queryable, id: string, agent: Record<string, unknown>): Promise<void> {
  await db.query('update sessions set agent_config = $2, updated_at = now() where id = $1', [
    id,
    JSON.stringify(agent),
  ]);
}

/** Sets the session's budget, or removes it for good (null). */
export async function updateSessionBudget(
  db: Queryable,
  id: string,
  budget: { amount: number; currency: string } | null,
): Promise<void> {
  await db.query(
    budget === null
      ? 'update sessions set budget_amount = null, budget_currency = null, budget_removed = true, updated_at = now() where id = $1'
      : 'update sessions set budget_amount = $2, budget_currency = $3, updated_at = now() where id = $1',
    budget === null ? [id] : [id, budget.amount, budget.currency],
  );
}

/** Removes the row of a session whose start failed (nothing else names it yet). */
export async function removeSessionRow(db: Queryable, id: string): Promise<void> {
  await db.query('delete from sessions where id = $1', [id]);
}

export async function updateSessionFields(
  db: Queryable,
  id: string,
  title: string | null,
  metadata: Record<string, string>,
): Promise<void> {
  await db.query('update sessions set title = $2, metadata = $3, updated_at = now() where id = $1', [
    id,
    title,
    metadata,
  ]);
}

export async function archiveSessionRow(db: Queryable, id: string): Promise<void> {
  await db.query('update sessions set archived_at = now(), updated_at = now() where id = $1', [id]);
}

export interface SessionListFilter {
  agentId: string | null;
  agentVersion: number | null;
  includeArchived: boolean;
  createdGt: string | null;
  createdGte: string | null;
  createdLt: string | null;
  createdLte: string | null;
  /** Sessions that mount this memory store. */
  memoryStoreId: string | null;
  /** Sessions this deployment created. */
  deploymentId: string | null;
}

/** The workspace's sessions past `pos` `key` (exclusive; null: from the start) in `order`, the first `limit` of them. */
export async function listSessions(
  db: Queryable,
  workspaceId: string,
  f: SessionListFilter,
  key: number | null,
  order: 'asc' | 'desc',
  limit: number,
): Promise<SessionRow[]> {
  return db.query<SessionRow>(
    // Times compare at the millisecond precision the API shows them in, so a returned created_at bounds exactly.
    `select ${COLUMNS} from sessions cross join lateral (select date_trunc('milliseconds', created_at) as ms) t where workspace_id = $1 and deleted_at is null
      and ($2::text is null or agent_id = $2) and ($3::int is null or agent_version = $3)
      and ($4::boolean or archived_at is null)
      and ($5::timestamptz is null or ms > $5) and ($6::timestamptz is null or ms >= $6) and ($7::timestamptz is null or ms < $7) and ($8::timestamptz is null or ms <= $8)
      and ($13::text is null or deployment_id = $13)
      and ($12::text is null or exists (select 1 from session_mounts m where m.session_id = sessions.id and m.kind = 'memory_store' and m.ref_id = $12))
      and ($9::int is null or (case when $10 = 'asc' then pos > $9 else pos < $9 end))
      order by case when $10 = 'asc' then pos end asc, case when $10 = 'desc' then pos end desc limit $11`,
    [
      workspaceId,
      f.agentId,
      f.agentVersion,
      f.includeArchived,
      f.createdGt,
      f.createdGte,
      f.createdLt,
      f.createdLte,
      key,
      order,
      limit,
      f.memoryStoreId,
      f.deploymentId,
    ],
  );
}

/** Whether session `id` is marked deleted. */
export async function sessionDeleted(db: Queryable, id: string): Promise<boolean> {
  const [gone] = await db.query('select 1 from sessions where id = $1 and deleted_at is not null', [id]);
  return gone !== undefined;
}

/** Marks the workspace's session `id` deleted (again, if an earlier attempt did); false when it has no such session. */
export async function markSessionDeleted(db: Queryable, workspaceId: string, id: string): Promise<boolean> {
  const [row] = await db.query<{ id: string }>(
    'update sessions set deleted_at = coalesce(deleted_at, now()), updated_at = now() where id = $1 and workspace_id = $2 returning id',
    [id, workspaceId],
  );
  return row !== undefined;
}

/** The sessions marked deleted, oldest first. */
export async function deletedSessionIds(db: Queryable): Promise<string[]> {
  return (await db.query<{ id: string }>('select id from sessions where deleted_at is not null order by pos')).map(
    (r) => r.id,
  );
}

/**
 * Every table that holds rows of a session, each with the statement that removes them (the session's own row
 * last, as the others reference it). A new table keyed by a session adds its statement here. The audit trail
 * (`audit_log`) is the one table that keeps the id: it records that a key created and deleted the session, by
 * id, action and time only, and holds nothing of the session itself.
 */
const SESSION_ROWS: readonly string[] = [
  'delete from session_resources where session_id = $1',
  'delete from sandbox_leases where session_id = $1',
  ...SESSION_MOUNT_ROWS,
  ...SESSION_HOME_ROWS,
  ...SESSION_WORK_ROWS,
  'delete from sessions where id = $1',
];

/** Removes every row of session `id`, in one transaction. */
export async function deleteSessionRows(db: Db, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    // Workspace snapshots go with the chunks only they use (workspace-snapshots-repo.ts).
    await deleteSessionSnapshots(tx, id);
    for (const sql of SESSION_ROWS) await tx.query(sql, [id]);
  });
}

// The first key of the two-key advisory lock: which kind of count the second key (the workspace) is locked for.
const SESSION_LOCK = 0x73657373;

const OPEN = 'workspace_id = $1 and ended_at is null and archived_at is null and deleted_at is null';

/** Takes the workspace's session-count lock until the transaction `tx` ends. */
export async function lockSessionCount(tx: Queryable, workspaceId: string): Promise<void> {
  await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [SESSION_LOCK, workspaceId]);
}

/** How many of the workspace's sessions are open: not ended, archived or deleted. */
export async function countOpenSessions(tx: Queryable, workspaceId: string): Promise<number> {
  const [row] = await tx.query<{ n: number }>(`select count(*)::int as n from sessions where ${OPEN}`, [workspaceId]);
  return row.n;
}

/** A session row whose workflow is not found is one still starting, unless it is older than this. */
export const SESSION_START_GRACE_SECONDS = 60;

/** The workspace's open sessions; `old` when created more than `graceSeconds` ago. */
export async function openSessions(
  tx: Queryable,
  workspaceId: string,
  graceSeconds: number,
): Promise<{ id: string; old: boolean }[]> {
  return tx.query<{ id: string; old: boolean }>(
    `select id, created_at < now() - make_interval(secs => $2) as old from sessions where ${OPEN}`,
    [workspaceId, graceSeconds],
  );
}

export async function markSessionsEnded(tx: Queryable, ids: string[]): Promise<void> {
  await tx.query('update sessions set ended_at = now() where id = any($1::text[]) and ended_at is null', [ids]);
}
