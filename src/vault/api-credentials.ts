// The worker side of the API's credentials: finds the credential for an MCP server URL among a session's vaults
// (in its own workspace only) and opens its sealed secrets with VAULT_KEY. Only tools and hands workers call this.
import type { Queryable } from '../storage/db';
import type { McpCredential } from '../mcp/credentials';
import { openSecret } from './sealed';

interface Row {
  id: string;
  vault_id: string;
  auth: { type: 'static_bearer' | 'mcp_oauth'; mcp_server_url: string; expires_at?: string | null; refresh?: { client_id: string; token_endpoint: string; token_endpoint_auth: { type: string } } | null };
  sealed: Record<string, string>;
}

/**
 * The credential for `mcpServerUrl` in the first of `vaultIds` (in order) that holds one, opened into the shape the
 * MCP client already refreshes, or undefined. Vaults of another workspace, and archived ones, are never searched.
 */
export async function credentialForServer(db: Queryable, vaultKey: string, workspaceId: string, vaultIds: readonly string[], mcpServerUrl: string): Promise<McpCredential | undefined> {
  const rows = await db.query<Row & { rank: number }>(
    `select c.id, c.vault_id, c.auth, c.sealed, array_position($3::text[], c.vault_id) as rank
       from credentials c join vaults v on v.id = c.vault_id
      where c.workspace_id = $1 and v.workspace_id = $1 and c.vault_id = any($3::text[]) and c.auth->>'mcp_server_url' = $2
        and c.archived_at is null and v.archived_at is null
      order by rank limit 1`,
    [workspaceId, mcpServerUrl, vaultIds],
  );
  const row = rows[0];
  if (!row) return undefined;
  const open = async (field: string) => (row.sealed[field] ? openSecret(vaultKey, { credentialId: row.id, vaultId: row.vault_id, field }, row.sealed[field]) : undefined);
  if (row.auth.type === 'static_bearer') return { access_token: (await open('token'))! };
  const refreshToken = await open('refresh_token');
  const clientSecret = await open('client_secret');
  return {
    access_token: (await open('access_token'))!,
    ...(row.auth.expires_at ? { expires_at: row.auth.expires_at } : {}),
    ...(row.auth.refresh && refreshToken ? { refresh_token: refreshToken, token_url: row.auth.refresh.token_endpoint, client_id: row.auth.refresh.client_id } : {}),
    ...(clientSecret ? { client_secret: clientSecret } : {}),
  };
}
