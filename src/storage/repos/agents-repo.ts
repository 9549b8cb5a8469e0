// The agents and agent_versions tables: an agent's row points at its latest version; each version's body is
// immutable once written. The body's shape is the API's (`Body`).
import type { Db, Queryable } from '../db';

/** An agent at one version, joined with that version's body. */
export interface AgentRow<Body = unknown> {
  id: string;
  pos: number;
  version: number;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
  body: Body;
  version_created_at: Date;
}

const SELECT = `select a.id, a.pos, v.version, a.created_at, a.updated_at, a.archived_at, v.body, v.created_at as version_created_at
  from agents a join agent_versions v on v.agent_id = a.id`;

/** One agent of the workspace at `version` (null: the latest); `lock` holds the agent's row until the transaction ends. */
export async function findAgent<Body>(
  db: Queryable,
  workspaceId: string,
  id: string,
  version: number | null,
  lock = false,
): Promise<AgentRow<Body> | undefined> {
  const [row] = await db.query<AgentRow<Body>>(
    `${SELECT} where a.id = $1 and a.workspace_id = $2 and v.version = coalesce($3::int, a.version)${lock ? ' for update of a' : ''}`,
    [id, workspaceId, version],
  );
  return row;
}

export async function agentExists(db: Queryable, workspaceId: string, id: string): Promise<boolean> {
  return (await db.query('select 1 from agents where id = $1 and workspace_id = $2', [id, workspaceId])).length > 0;
}

/** A new agent at version 1, in one transaction. */
/** A new agent at version 1; `also` runs in the same transaction (the webhook outbox's record of it). */
export async function insertAgent(
  db: Db,
  workspaceId: string,
  id: string,
  body: unknown,
  now: Date,
  also?: (tx: Queryable) => Promise<unknown>,
): Promise<void> {
  await db.transaction(async (tx) => {
    await also?.(tx);
    await tx.query(
      'insert into agents (id, workspace_id, version, created_at, updated_at) values ($1, $2, 1, $3, $3)',
      [id, workspaceId, now],
    );
    await tx.query('insert into agent_versions (agent_id, version, body, created_at) values ($1, 1, $2, $3)', [
      id,
      body,
      now,
    ]);
  });
}

/** Writes `version` of the agent and makes it the latest; run it in the transaction that locked the agent. */
export async function insertAgentVersion(
  tx: Queryable,
  id: string,
  version: number,
  body: unknown,
  now: Date,
): Promise<void> {
  await tx.query('insert into agent_versions (agent_id, version, body, created_at) values ($1, $2, $3, $4)', [
    id,
    version,
    body,
    now,
  ]);
  await tx.query('update agents set version = $2, updated_at = $3 where id = $1', [id, version, now]);
}

export interface AgentListFilter {
  /** The `pos` the page continues after; null for the first page. */
  before: number | null;
  includeArchived: boolean;
  createdGte: string | null;
  createdLte: string | null;
  limit: number;
}

/** The workspace's agents at their latest versions, newest first. */
export async function listAgents<Body>(
  db: Queryable,
  workspaceId: string,
  f: AgentListFilter,
): Promise<AgentRow<Body>[]> {
  return db.query<AgentRow<Body>>(
    `${SELECT} and v.version = a.version where a.workspace_id = $1 and ($2::int is null or a.pos < $2)
        and ($3::boolean or a.archived_at is null)
        and ($4::timestamptz is null or date_trunc('milliseconds', a.created_at) >= $4) and ($5::timestamptz is null or date_trunc('milliseconds', a.created_at) <= $5)
        order by a.pos desc limit $6`,
    [workspaceId, f.before, f.includeArchived, f.createdGte, f.createdLte, f.limit],
  );
}

export async function archiveAgent(db: Queryable, workspaceId: string, id: string): Promise<void> {
  await db.query(
    'update agents set archived_at = coalesce(archived_at, now()), updated_at = case when archived_at is null then now() else updated_at end where id = $1 and workspace_id = $2',
    [id, workspaceId],
  );
}

/** The agent's versions, newest first, before version `before` (null: from the latest); `pos` is the version. */
export async function listAgentVersions<Body>(
  db: Queryable,
  workspaceId: string,
  id: string,
  before: number | null,
  limit: number,
): Promise<AgentRow<Body>[]> {
  return db.query<AgentRow<Body>>(
    `select a.id, v.version as pos, v.version, a.created_at, a.updated_at, a.archived_at, v.body, v.created_at as version_created_at
          from agents a join agent_versions v on v.agent_id = a.id
          where a.id = $1 and a.workspace_id = $2 and ($3::int is null or v.version < $3) order by v.version desc limit $4`,
    [id, workspaceId, before, limit],
  );
}
