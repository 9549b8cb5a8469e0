// The credentials table as the API writes it: public fields (`auth`, whose shape is the API's) beside the secrets
// sealed to the vault public key (`sealed`), which no read here returns.
import type { Db, Queryable } from '../db';

export interface CredentialRow<Auth = unknown> {
  id: string;
  pos: number;
  vault_id: string;
  display_name: string | null;
  auth: Auth;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

const CREDENTIAL_COLUMNS = 'id, pos, vault_id, display_name, auth, metadata, created_at, updated_at, archived_at';

export async function findCredential<Auth>(
  db: Queryable,
  workspaceId: string,
  vaultId: string,
  id: string,
): Promise<CredentialRow<Auth> | undefined> {
  const [row] = await db.query<CredentialRow<Auth>>(
    `select ${CREDENTIAL_COLUMNS} from credentials where id = $1 and vault_id = $2 and workspace_id = $3`,
    [id, vaultId, workspaceId],
  );
  return row;
}

export interface NewCredential {
  id: string;
  workspaceId: string;
  vaultId: string;
  displayName: string | null;
  auth: { mcp_server_url: string };
  sealed: Record<string, string>;
  metadata: Record<string, string>;
}

/**
 * Inserts the credential unless the vault already holds one not archived for the same `auth.mcp_server_url`: false
 * then, and nothing is written. The vault's row lock makes the check and the insert one step.
 */
/** Inserts the credential unless the vault holds a live one for its server; `also` runs in the same transaction. */
export async function insertCredentialUnlessClash(
  db: Db,
  c: NewCredential,
  also?: (tx: Queryable) => Promise<unknown>,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.query('select 1 from vaults where id = $1 for update', [c.vaultId]);
    const clash = await tx.query(
      `select id from credentials where vault_id = $1 and archived_at is null and auth->>'mcp_server_url' = $2`,
      [c.vaultId, c.auth.mcp_server_url],
    );
    if (clash.length > 0) return false;
    await tx.query(
      'insert into credentials (id, workspace_id, vault_id, display_name, auth, sealed, metadata, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, now(), now())',
      [c.id, c.workspaceId, c.vaultId, c.displayName, c.auth, c.sealed, c.metadata],
    );
    await also?.(tx);
    return true;
  });
}

/** Rewrites the public fields; `replaced` secrets are merged over the sealed ones. */
export async function updateCredential(
  db: Queryable,
  id: string,
  displayName: string | null,
  auth: unknown,
  replaced: Record<string, string>,
  metadata: Record<string, string>,
): Promise<void> {
  await db.query(
    'update credentials set display_name = $2, auth = $3, sealed = sealed || $4::jsonb, metadata = $5, updated_at = now() where id = $1',
    [id, displayName, auth, JSON.stringify(replaced), metadata],
  );
}

/** The vault's credentials, newest first, before `pos` `before` (null: from the newest). */
export async function listCredentials<Auth>(
  db: Queryable,
  vaultId: string,
  before: number | null,
  includeArchived: boolean,
  limit: number,
): Promise<CredentialRow<Auth>[]> {
  return db.query<CredentialRow<Auth>>(
    `select ${CREDENTIAL_COLUMNS} from credentials where vault_id = $1 and ($2::int is null or pos < $2) and ($3::boolean or archived_at is null) order by pos desc limit $4`,
    [vaultId, before, includeArchived, limit],
  );
}

export async function archiveCredential(db: Queryable, id: string): Promise<void> {
  await db.query(
    'update credentials set archived_at = now(), updated_at = now() where id = $1 and archived_at is null',
    [id],
  );
}

export async function deleteCredential(db: Queryable, id: string): Promise<void> {
  await db.query('delete from credentials where id = $1', [id]);
}
