// The environment_keys table: a self-hosted environment's standing credentials, stored only as their SHA-256 and a
// short hint.
import type { Queryable } from '../db';

export interface EnvironmentKeyRow {
  id: string;
  workspace_id: string;
  environment_id: string;
  hint: string;
  created_at: Date;
  revoked_at: Date | null;
}
const COLUMNS = 'id, workspace_id, environment_id, hint, created_at, revoked_at';

export async function insertEnvironmentKey(
  q: Queryable,
  k: { id: string; workspaceId: string; environmentId: string; hash: string; hint: string },
): Promise<void> {
  await q.query(
    'insert into environment_keys (id, workspace_id, environment_id, hash, hint) values ($1, $2, $3, $4, $5)',
    [k.id, k.workspaceId, k.environmentId, k.hash, k.hint],
  );
}

/** Every key, live or revoked, of one environment or of all, oldest first. */
export async function listEnvironmentKeyRows(q: Queryable, environmentId: string | null): Promise<EnvironmentKeyRow[]> {
  return q.query<EnvironmentKeyRow>(
    `select ${COLUMNS} from environment_keys where ($1::text is null or environment_id = $1) order by created_at, id`,
    [environmentId],
  );
}

/** Revokes a live key; the key's row, or undefined when there is no such live key. */
export async function revokeEnvironmentKeyRow(q: Queryable, id: string): Promise<EnvironmentKeyRow | undefined> {
  const [row] = await q.query<EnvironmentKeyRow>(
    `update environment_keys set revoked_at = now() where id = $1 and revoked_at is null returning ${COLUMNS}`,
    [id],
  );
  return row;
}

/** The live key with hash `hash` whose environment still exists, with the environment's workspace. */
export async function findLiveEnvironmentKey(
  q: Queryable,
  hash: string,
): Promise<{ id: string; environment_id: string; workspace_id: string; workspace: string } | undefined> {
  const [row] = await q.query<{ id: string; environment_id: string; workspace_id: string; workspace: string }>(
    `select k.id, k.environment_id, e.workspace_id, w.name as workspace
       from environment_keys k
       join environments e on e.id = k.environment_id
       join workspaces w on w.id = e.workspace_id
      where k.hash = $1 and k.revoked_at is null`,
    [hash],
  );
  return row;
}
