// API keys and workspaces. A key belongs to one workspace and is stored only as its SHA-256: the key itself is
// shown once, when it is made. Keys are 32 random bytes, so a fast hash is enough (there is nothing to guess).
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../storage/db';
import {
  ensureWorkspace,
  findLiveKey,
  insertApiKey,
  listApiKeyRows,
  revokeApiKeyRow,
} from '../storage/repos/api-keys-repo';
import { recordAudit } from './audit';
import { iso, isoOrNull, newId } from './shared-fields';

export const WorkspaceNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'workspace names are 1-63 lowercase letters, digits, dot, dash or underscore');

const KEY_PREFIX = 'sk-ma-';

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');

export interface ApiKeyInfo {
  id: string;
  workspace: string;
  hint: string;
  created_at: string;
  revoked_at: string | null;
}

/** Makes a key for `workspace`, creating the workspace on first use. Returns the key, which is not kept. */
export async function createApiKey(
  db: Db,
  workspace: string,
): Promise<{ key: string; id: string; workspace: string; workspace_id: string }> {
  const name = WorkspaceNameSchema.parse(workspace);
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = newId('apikey');
  const workspaceId = await db.transaction(async (tx) => {
    const wsId = await ensureWorkspace(tx, newId('wrkspc'), name);
    await insertApiKey(tx, id, wsId, hashOf(key), key.slice(0, KEY_PREFIX.length + 4));
    await recordAudit(tx, {
      workspaceId: wsId,
      apiKeyId: null,
      action: 'created',
      resourceType: 'api_key',
      resourceId: id,
    });
    return wsId;
  });
  return { key, id, workspace: name, workspace_id: workspaceId };
}

export async function listApiKeys(db: Db): Promise<ApiKeyInfo[]> {
  const rows = await listApiKeyRows(db);
  return rows.map((r) => ({
    id: r.id,
    workspace: r.name,
    hint: `${r.hint}…`,
    created_at: iso(r.created_at),
    revoked_at: isoOrNull(r.revoked_at),
  }));
}

/** Revokes a key by id; false if there is no such live key. */
export async function revokeApiKey(db: Db, id: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const workspaceId = await revokeApiKeyRow(tx, id);
    if (workspaceId === undefined) return false;
    await recordAudit(tx, { workspaceId, apiKeyId: null, action: 'revoked', resourceType: 'api_key', resourceId: id });
    return true;
  });
}

/** The workspace a live key belongs to, or undefined. */
export async function authenticate(
  db: Db,
  key: string,
): Promise<{ workspaceId: string; workspace: string; keyId: string } | undefined> {
  if (!key.startsWith(KEY_PREFIX) || key.length > 200) return undefined;
  const row = await findLiveKey(db, hashOf(key));
  return row ? { workspaceId: row.id, workspace: row.name, keyId: row.key_id } : undefined;
}
