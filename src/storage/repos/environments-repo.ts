// The environments table. The config's shape is the API's (`Config`).
import type { Db, Queryable } from '../db';
import { deleteEnvironmentWork } from './work-repo';

export interface EnvironmentRow<Config = unknown> {
  id: string;
  pos: number;
  name: string;
  description: string | null;
  config: Config;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

const COLUMNS = 'id, pos, name, description, config, metadata, created_at, updated_at, archived_at';

export async function findEnvironment<Config>(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<EnvironmentRow<Config> | undefined> {
  const [row] = await db.query<EnvironmentRow<Config>>(
    `select ${COLUMNS} from environments where id = $1 and workspace_id = $2`,
    [id, workspaceId],
  );
  return row;
}

export interface EnvironmentFields {
  name: string;
  description: string | null;
  config: unknown;
  metadata: Record<string, string>;
}

/** A new environment; a name the workspace already uses fails with PostgreSQL's unique violation (23505). */
export async function insertEnvironment(
  db: Queryable,
  workspaceId: string,
  id: string,
  f: EnvironmentFields,
  now: Date,
): Promise<void> {
  await db.query(
    'insert into environments (id, workspace_id, name, description, config, metadata, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $7)',
    [id, workspaceId, f.name, f.description, f.config, f.metadata, now],
  );
}

/** Rewrites the environment's fields; a name the workspace already uses fails with a unique violation (23505). */
export async function updateEnvironment(
  db: Queryable,
  workspaceId: string,
  id: string,
  f: EnvironmentFields,
): Promise<void> {
  await db.query(
    'update environments set name = $3, description = $4, config = $5, metadata = $6, updated_at = now() where id = $1 and workspace_id = $2',
    [id, workspaceId, f.name, f.description, f.config, f.metadata],
  );
}

/** The workspace's environments, newest first, before `pos` `before` (null: from the newest). */
export async function listEnvironments<Config>(
  db: Queryable,
  workspaceId: string,
  before: number | null,
  includeArchived: boolean,
  limit: number,
): Promise<EnvironmentRow<Config>[]> {
  return db.query<EnvironmentRow<Config>>(
    `select ${COLUMNS} from environments where workspace_id = $1 and ($2::int is null or pos < $2) and ($3::boolean or archived_at is null) order by pos desc limit $4`,
    [workspaceId, before, includeArchived, limit],
  );
}

export async function archiveEnvironment(db: Queryable, workspaceId: string, id: string): Promise<void> {
  await db.query(
    'update environments set archived_at = now(), updated_at = now() where id = $1 and workspace_id = $2 and archived_at is null',
    [id, workspaceId],
  );
}

/** Whether a session not deleted uses the environment. */
export async function environmentInUse(db: Queryable, id: string): Promise<boolean> {
  return (
    (await db.query('select 1 from sessions where environment_id = $1 and deleted_at is null limit 1', [id])).length > 0
  );
}

/** Deletes the environment, in one transaction with dropping the reference of deleted sessions that still name it. */
export async function deleteEnvironment(
  db: Db,
  workspaceId: string,
  id: string,
  also?: (tx: Queryable) => Promise<unknown>,
): Promise<void> {
  await db.transaction(async (tx) => {
    await also?.(tx);
    // A deleted session keeps its row (and so its reference) until it is purged; it no longer needs the environment.
    await tx.query('update sessions set environment_id = null where environment_id = $1 and deleted_at is not null', [
      id,
    ]);
    const gone = await tx.query('delete from environments where id = $1 and workspace_id = $2 returning id', [
      id,
      workspaceId,
    ]);
    // Its work queue and keys go with it.
    if (gone.length > 0) await deleteEnvironmentWork(tx, id);
  });
}

/** An environment by id alone, whatever its workspace: for the operator's commands, which hold no workspace. */
export async function findEnvironmentById<Config>(
  db: Queryable,
  id: string,
): Promise<(EnvironmentRow<Config> & { workspace_id: string }) | undefined> {
  const [row] = await db.query<EnvironmentRow<Config> & { workspace_id: string }>(
    `select ${COLUMNS}, workspace_id from environments where id = $1`,
    [id],
  );
  return row;
}
