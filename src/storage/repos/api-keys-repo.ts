// The workspaces and api_keys tables. A key is stored only as its hash and a short hint.
import type { Queryable } from '../db';

/** The id of the workspace named `name`, inserted with `newId` when there is none. */
export async function ensureWorkspace(tx: Queryable, newId: string, name: string): Promise<string> {
  await tx.query('insert into workspaces (id, name) values ($1, $2) on conflict (name) do nothing', [newId, name]);
  const [ws] = await tx.query<{ id: string }>('select id from workspaces where name = $1', [name]);
  return ws.id;
}

/** The id of the workspace named `name`, or undefined when there is none. */
export async function findWorkspaceId(q: Queryable, name: string): Promise<string | undefined> {
  const [ws] = await q.query<{ id: string }>('select id from workspaces where name = $1', [name]);
  return ws?.id;
}

export async function insertApiKey(
  tx: Queryable,
  id: string,
  workspaceId: string,
  hash: string,
  hint: string,
): Promise<void> {
  await tx.query('insert into api_keys (id, workspace_id, hash, hint) values ($1, $2, $3, $4)', [
    id,
    workspaceId,
    hash,
    hint,
  ]);
}

export interface ApiKeyRow {
  id: string;
  /** The workspace's name. */
  name: string;
  hint: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** Every key, live or revoked, oldest first. */
export async function listApiKeyRows(db: Queryable): Promise<ApiKeyRow[]> {
  return db.query<ApiKeyRow>(
    'select k.id, w.name, k.hint, k.created_at, k.revoked_at from api_keys k join workspaces w on w.id = k.workspace_id order by k.created_at, k.id',
  );
}

/** Revokes a live key; its workspace's id, or undefined when there is no such live key. */
export async function revokeApiKeyRow(tx: Queryable, id: string): Promise<string | undefined> {
  const rows = await tx.query<{ workspace_id: string }>(
    'update api_keys set revoked_at = now() where id = $1 and revoked_at is null returning workspace_id',
    [id],
  );
  return rows[0]?.workspace_id;
}

/** The workspace (id and name) of the live key with hash `hash`, and the key's id. */
export async function findLiveKey(
  db: Queryable,
  hash: string,
): Promise<{ id: string; name: string; key_id: string } | undefined> {
  const [row] = await db.query<{ id: string; name: string; key_id: string }>(
    'select w.id, w.name, k.id as key_id from api_keys k join workspaces w on w.id = k.workspace_id where k.hash = $1 and k.revoked_at is null',
    [hash],
  );
  return row;
}
