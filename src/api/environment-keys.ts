// Environment keys: the standing credential of a self-hosted environment's workers, minted and revoked by the
// operator (`agents environment-keys`). A key reaches only its environment's work queue (src/api/principals.ts). It
// is shown once, when it is made, and stored only as its SHA-256: keys are 32 random bytes, so a fast hash is enough.
// Making a key also queues a healthcheck item, so a new worker proves it can claim, ack, heartbeat and stop.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../storage/db';
import { PlatformError } from '../session/platform-error';
import {
  findLiveEnvironmentKey,
  insertEnvironmentKey,
  listEnvironmentKeyRows,
  revokeEnvironmentKeyRow,
} from '../storage/repos/environment-keys-repo';
import { findEnvironmentById } from '../storage/repos/environments-repo';
import { insertWork, liveHealthcheck } from '../storage/repos/work-repo';
import { recordAudit } from './audit';
import { iso, isoOrNull, newId } from './shared-fields';
import type { Queryable } from '../storage/db';

export const ENVIRONMENT_KEY_PREFIX = 'sk-ma-env-';

export const hashOfSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** Why a key cannot be made for an environment: none with that id, not self-hosted, or archived. */
export class EnvironmentKeyError extends PlatformError {}

export interface EnvironmentKeyInfo {
  id: string;
  environment: string;
  workspace_id: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** Makes a key for a self-hosted environment that is not archived, and queues a healthcheck. Returns the key, which is not kept. */
export async function createEnvironmentKey(
  db: Db,
  environmentId: string,
): Promise<{ key: string; id: string; environment: string }> {
  const env = await findEnvironmentById<{ type: string }>(db, environmentId);
  if (!env) throw new EnvironmentKeyError(`no environment ${environmentId}`);
  if (env.config.type !== 'self_hosted')
    throw new EnvironmentKeyError(
      `environment ${environmentId} is ${env.config.type}; keys are for self_hosted environments, whose workers poll for work`,
    );
  if (env.archived_at) throw new EnvironmentKeyError(`environment ${environmentId} is archived`);
  const key = `${ENVIRONMENT_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = newId('envkey');
  await db.transaction(async (tx) => {
    await insertEnvironmentKey(tx, {
      id,
      workspaceId: env.workspace_id,
      environmentId,
      hash: hashOfSecret(key),
      hint: key.slice(0, ENVIRONMENT_KEY_PREFIX.length + 4),
    });
    await recordAudit(tx, {
      workspaceId: env.workspace_id,
      apiKeyId: null,
      action: 'created',
      resourceType: 'environment_key',
      resourceId: id,
      parentId: environmentId,
    });
    await queueHealthcheck(tx, env.workspace_id, environmentId);
  });
  return { key, id, environment: environmentId };
}

/** Queues a healthcheck item unless the environment has a live one. */
async function queueHealthcheck(q: Queryable, workspaceId: string, environmentId: string): Promise<void> {
  if (await liveHealthcheck(q, environmentId)) return;
  await insertWork(q, {
    id: newId('work'),
    workspaceId,
    environmentId,
    dataType: 'healthcheck',
    dataId: newId('healthcheck'),
  });
}

/** Every key, live or revoked, of one environment or all, oldest first (never the keys). */
export async function listEnvironmentKeys(db: Db, environmentId?: string): Promise<EnvironmentKeyInfo[]> {
  const rows = await listEnvironmentKeyRows(db, environmentId ?? null);
  return rows.map((r) => ({
    id: r.id,
    environment: r.environment_id,
    workspace_id: r.workspace_id,
    hint: `${r.hint}…`,
    created_at: iso(r.created_at),
    revoked_at: isoOrNull(r.revoked_at),
  }));
}

/** Revokes a key by id; false if there is no such live key. Requests with it get 401 from then on. */
export async function revokeEnvironmentKey(db: Db, id: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const row = await revokeEnvironmentKeyRow(tx, id);
    if (!row) return false;
    await recordAudit(tx, {
      workspaceId: row.workspace_id,
      apiKeyId: null,
      action: 'revoked',
      resourceType: 'environment_key',
      resourceId: id,
      parentId: row.environment_id,
    });
    return true;
  });
}

/** The environment (and its workspace) of a live key, or undefined. */
export async function authenticateEnvironmentKey(
  db: Queryable,
  key: string,
): Promise<{ keyId: string; environmentId: string; workspaceId: string; workspace: string } | undefined> {
  if (!key.startsWith(ENVIRONMENT_KEY_PREFIX) || key.length > 200) return undefined;
  const row = await findLiveEnvironmentKey(db, hashOfSecret(key));
  return row
    ? { keyId: row.id, environmentId: row.environment_id, workspaceId: row.workspace_id, workspace: row.workspace }
    : undefined;
}
