// The worker side of the API's credentials: finds the credential for an MCP server URL among a session's vaults
// (in its own workspace only), opens its sealed secrets with VAULT_KEY, and writes a refreshed token set back sealed
// to the public key in the same transaction that locked the row. Only tools and hands workers use this.
import type { Db, Queryable } from '../storage/db';
import {
  McpCredentialError,
  expiresAtMs,
  type ApiCredentialLookup,
  type ApiVaultBinding,
  type CredentialSource,
  type McpCredential,
} from './credentials';
import { openSecret, sealSecret, vaultPublicKey } from '../vault/sealed';
import { EgressRefusedError, type EgressGate } from '../egress';

const refuseAll = (url: string | URL | Request): Promise<Response> =>
  Promise.reject(
    new EgressRefusedError(
      `egress refused ${String(url instanceof Request ? url.url : url)}: this worker has no egress gate for a tenant's token endpoint`,
      'scheme',
    ),
  );

interface Row {
  id: string;
  vault_id: string;
  auth: {
    type: 'static_bearer' | 'mcp_oauth';
    mcp_server_url: string;
    expires_at?: string | null;
    refresh?: {
      client_id: string;
      token_endpoint: string;
      token_endpoint_auth: { type: 'none' | 'client_secret_basic' | 'client_secret_post' };
      scope?: string | null;
      resource?: string | null;
    } | null;
  };
  sealed: Record<string, string>;
}

const COLUMNS = 'c.id, c.vault_id, c.auth, c.sealed';

/** The first of `vaultIds` (in order) holding a live credential for `url`, in `workspaceId` only. */
async function findRow(
  db: Queryable,
  workspaceId: string,
  vaultIds: readonly string[],
  url: string,
): Promise<Row | undefined> {
  const rows = await db.query<Row>(
    `select ${COLUMNS}, array_position($3::text[], c.vault_id) as rank
       from credentials c join vaults v on v.id = c.vault_id
      where c.workspace_id = $1 and v.workspace_id = $1 and c.vault_id = any($3::text[]) and c.auth->>'mcp_server_url' = $2
        and c.archived_at is null and v.archived_at is null
      order by rank limit 1`,
    [workspaceId, url, vaultIds],
  );
  return rows[0];
}

/** The row again by id; `lock` takes its row lock until the transaction ends. */
async function rowById(db: Queryable, id: string, lock: boolean): Promise<Row> {
  const rows = await db.query<Row>(
    `select ${COLUMNS} from credentials c join vaults v on v.id = c.vault_id where c.id = $1 and c.archived_at is null and v.archived_at is null${lock ? ' for update of c' : ''}`,
    [id],
  );
  if (!rows[0])
    throw new McpCredentialError(`credential ${id} was archived or deleted while the session used it`, true);
  return rows[0];
}

/** The row's secrets opened into the shape the MCP client refreshes. */
async function openRow(vaultKey: string, row: Row): Promise<McpCredential> {
  const open = async (field: string) =>
    row.sealed[field]
      ? openSecret(vaultKey, { credentialId: row.id, vaultId: row.vault_id, field }, row.sealed[field])
      : undefined;
  if (row.auth.type === 'static_bearer') return { access_token: (await open('token'))! };
  const refreshToken = await open('refresh_token');
  const clientSecret = await open('client_secret');
  const r = row.auth.refresh;
  return {
    access_token: (await open('access_token'))!,
    ...(row.auth.expires_at ? { expires_at: row.auth.expires_at } : {}),
    ...(r && refreshToken
      ? {
          refresh_token: refreshToken,
          token_url: r.token_endpoint,
          client_id: r.client_id,
          token_endpoint_auth: r.token_endpoint_auth.type,
        }
      : {}),
    ...(r?.scope ? { scope: r.scope } : {}),
    ...(r?.resource ? { resource: r.resource } : {}),
    ...(clientSecret ? { client_secret: clientSecret } : {}),
  };
}

/**
 * The credential for `mcpServerUrl` in the first of `vaultIds` (in order) that holds one, opened into the shape the
 * MCP client already refreshes, or undefined. Vaults of another workspace, and archived ones, are never searched.
 */
export async function credentialForServer(
  db: Queryable,
  vaultKey: string,
  workspaceId: string,
  vaultIds: readonly string[],
  mcpServerUrl: string,
): Promise<McpCredential | undefined> {
  const row = await findRow(db, workspaceId, vaultIds, mcpServerUrl);
  return row && openRow(vaultKey, row);
}

/** Why a tools worker without a database cannot serve a session bound to API vaults: shown to the session's user. */
export const NO_DATABASE =
  "the session's credentials are in the API's vaults, and this tools worker has no database: set DATABASE_URL on the API and on every tools worker (the embedded database belongs to the `agents api` process; `agents dev` shares it with its own workers)";

/** Credentials of the API's vaults, for the tools worker's MCP clients. */
export class ApiCredentials implements ApiCredentialLookup {
  private publicKey?: Promise<string>;

  /**
   * `db` is asked on each lookup: the dev stack's embedded database opens after its workers start. Token endpoints
   * came from a tenant, so refreshes go through `egress` (the gate's fetch); without one, none is attempted.
   */
  constructor(
    private readonly db: () => Db | undefined,
    private readonly vaultKey: string,
    private readonly egress?: EgressGate,
  ) {}

  async sourceFor(binding: ApiVaultBinding, url: string): Promise<CredentialSource | undefined> {
    const db = this.db();
    if (!db) throw new McpCredentialError(NO_DATABASE, true);
    const found = await findRow(db, binding.workspaceId, binding.vaultIds, url);
    if (!found) return undefined;
    const id = found.id;
    const gate = this.egress;
    return {
      label: id,
      key: `api\0${id}`,
      fetch: gate ? (gate.fetch as typeof fetch) : refuseAll,
      load: async () => openRow(this.vaultKey, await rowById(db, id, false)),
      update: (fn) =>
        db.transaction(async (tx) => {
          const row = await rowById(tx, id, true);
          const cred = await openRow(this.vaultKey, row);
          const next = await fn(cred);
          if (!next) return cred;
          await this.store(tx, row, cred, next);
          return next;
        }),
    };
  }

  /** Seals the fields that changed to the vault public key and writes them, with the new expiry, in `tx`. */
  private async store(tx: Queryable, row: Row, before: McpCredential, after: McpCredential): Promise<void> {
    this.publicKey ??= vaultPublicKey(this.vaultKey);
    const publicKey = await this.publicKey;
    const sealed: Record<string, string> = {};
    for (const field of ['access_token', 'refresh_token'] as const) {
      const value = after[field];
      if (value && value !== before[field])
        sealed[field] = await sealSecret(publicKey, { credentialId: row.id, vaultId: row.vault_id, field }, value);
    }
    const ms = expiresAtMs(after);
    await tx.query(
      `update credentials set sealed = sealed || $2::jsonb, auth = jsonb_set(auth, '{expires_at}', $3::jsonb), updated_at = now() where id = $1`,
      [row.id, JSON.stringify(sealed), JSON.stringify(ms === undefined ? null : new Date(ms).toISOString())],
    );
  }
}
