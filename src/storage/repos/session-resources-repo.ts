// The session_resources table: a session's repositories, each token sealed to the vault public key. No read here
// returns the sealed token; only the hands host opens it.
import type { Queryable } from '../db';

export interface ResourceRow<Checkout = unknown> {
  id: string;
  url: string;
  mount_path: string;
  checkout: Checkout | null;
  created_at: Date;
  updated_at: Date;
}
const COLUMNS = 'id, url, mount_path, checkout, created_at, updated_at';

export interface NewResource {
  id: string;
  sessionId: string;
  workspaceId: string;
  url: string;
  mountPath: string;
  checkout: unknown;
  sealedToken: string | null;
}

/** A github_repository resource of a new session. */
export async function insertResource(db: Queryable, r: NewResource): Promise<void> {
  await db.query(
    `insert into session_resources (id, session_id, workspace_id, type, url, mount_path, checkout, sealed_token, created_at, updated_at)
       values ($1, $2, $3, 'github_repository', $4, $5, $6, $7, now(), now())`,
    [
      r.id,
      r.sessionId,
      r.workspaceId,
      r.url,
      r.mountPath,
      r.checkout ? JSON.stringify(r.checkout) : null,
      r.sealedToken,
    ],
  );
}

/** A session's resources, oldest first. */
export async function listResources<Checkout>(db: Queryable, sessionId: string): Promise<ResourceRow<Checkout>[]> {
  return db.query<ResourceRow<Checkout>>(
    `select ${COLUMNS} from session_resources where session_id = $1 order by pos`,
    [sessionId],
  );
}

export async function findResource<Checkout>(
  db: Queryable,
  sessionId: string,
  resourceId: string,
): Promise<ResourceRow<Checkout> | undefined> {
  const [row] = await db.query<ResourceRow<Checkout>>(
    `select ${COLUMNS} from session_resources where id = $1 and session_id = $2`,
    [resourceId, sessionId],
  );
  return row;
}

/** Replaces the resource's sealed token; the row as it is afterwards. */
export async function updateResourceToken<Checkout>(
  db: Queryable,
  id: string,
  sealedToken: string,
): Promise<ResourceRow<Checkout>> {
  const [updated] = await db.query<ResourceRow<Checkout>>(
    `update session_resources set sealed_token = $2, updated_at = now() where id = $1 returning ${COLUMNS}`,
    [id, sealedToken],
  );
  return updated;
}

export async function deleteResources(db: Queryable, sessionId: string): Promise<void> {
  await db.query('delete from session_resources where session_id = $1', [sessionId]);
}
