// The vaults table. Deleting or archiving a vault reaches its credentials too, in one transaction.
import type { Db, Queryable } from '../db';

export interface VaultRow {
  id: string;
  pos: number;
  display_name: string;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

const VAULT_COLUMNS = 'id, pos, display_name, metadata, created_at, updated_at, archived_at';

export async function findVault(db: Queryable, workspaceId: string, id: string): Promise<VaultRow | undefined> {
  const [row] = await db.query<VaultRow>(`select ${VAULT_COLUMNS} from vaults where id = $1 and workspace_id = $2`, [
    id,
    workspaceId,
  ]);
  return row;
}

export async function insertVault(
  db: Queryable,
  workspaceId: string,
  id: string,
  displayName: string,
  metadata: Record<string, string>,
): Promise<void> {
  await db.query(
    'insert into vaults (id, workspace_id, display_name, metadata, created_at, updated_at) values ($1, $2, $3, $4, now(), now())',
    [id, workspaceId, displayName, metadata],
  );
}

export async function updateVault(
  db: Queryable,
  id: string,
  displayName: string,
  metadata: Record<string, string>,
): Promise<void> {
  await db.query('update vaults set display_name = $2, metadata = $3, updated_at = now() where id = $1', [
    id,
    displayName,
    metadata,
  ]);
}

/** The workspace's vaults, newest first, before `pos` `before` (null: from the newest). */
export async function listVaults(
  db: Queryable,
  workspaceId: string,
  before: number | null,
  includeArchived: boolean,
  limit: number,
): Promise<VaultRow[]> {
  return db.query<VaultRow>(
    `select ${VAULT_COLUMNS} from vaults where workspace_id = $1 and ($2::int is null or pos < $2) and ($3::boolean or archived_at is null) order by pos desc limit $4`,
    [workspaceId, before, includeArchived, limit],
  );
}

/** Archives the vault and its credentials not archived yet. */
export async function archiveVault(db: Db, id: string, also?: (tx: Queryable) => Promise<unknown>): Promise<void> {
  await db.transaction(async (tx) => {
    await also?.(tx);
    await tx.query('update vaults set archived_at = now(), updated_at = now() where id = $1 and archived_at is null', [
      id,
    ]);
    await tx.query(
      'update credentials set archived_at = now(), updated_at = now() where vault_id = $1 and archived_at is null',
      [id],
    );
  });
}

/** Deletes the vault and its credentials. */
export async function deleteVault(db: Db, id: string, also?: (tx: Queryable) => Promise<unknown>): Promise<void> {
  await db.transaction(async (tx) => {
    await also?.(tx);
    await tx.query('delete from credentials where vault_id = $1', [id]);
    await tx.query('delete from vaults where id = $1', [id]);
  });
}
