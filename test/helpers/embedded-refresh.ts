// Ten refreshes at once of one API credential on the embedded database (PGlite), through two credential layers
// sharing it as `agents dev` shares its API's database with its workers. Run under tsx in a child process by
// test/vault/embedded-refresh.test.ts (jest's module sandbox cannot load PGlite); prints what it saw as JSON.
import { z } from 'zod';
import { McpCredentials } from '../../src/mcp/credentials';
import type { McpServer } from '../../src/session/agent';
import { openDb } from '../../src/storage/db';
import { ApiCredentials, credentialForServer } from '../../src/mcp/api-credentials';
import { sealSecret, vaultPublicKey } from '../../src/vault/sealed';
import { EgressGate, makePolicy } from '../../src/egress';

const env = z
  .object({
    DATA_DIR: z.string(),
    VAULT_KEY: z.string(),
    MCP_URL: z.string(),
    TOKEN_URL: z.string(),
    ACCESS: z.string(),
    REFRESH: z.string(),
    CLIENT_ID: z.string(),
    CLIENT_SECRET: z.string(),
  })
  .parse(process.env);

async function main() {
  const db = await openDb({ dataDir: env.DATA_DIR });
  try {
    const publicKey = await vaultPublicKey(env.VAULT_KEY);
    const seal = (field: string, value: string) =>
      sealSecret(publicKey, { credentialId: 'vcrd_embedded', vaultId: 'vlt_embedded', field }, value);
    await db.query(
      `insert into vaults (id, workspace_id, display_name, metadata, created_at, updated_at) values ('vlt_embedded', 'wrkspc_default', 'embedded', '{}', now(), now())`,
    );
    const auth = {
      type: 'mcp_oauth',
      mcp_server_url: env.MCP_URL,
      expires_at: new Date(Date.now() - 60_000).toISOString(),
      refresh: {
        client_id: env.CLIENT_ID,
        token_endpoint: env.TOKEN_URL,
        token_endpoint_auth: { type: 'client_secret_post' },
        scope: null,
        resource: null,
      },
    };
    const sealed = {
      access_token: await seal('access_token', env.ACCESS),
      refresh_token: await seal('refresh_token', env.REFRESH),
      client_secret: await seal('client_secret', env.CLIENT_SECRET),
    };
    await db.query(
      `insert into credentials (id, workspace_id, vault_id, auth, sealed, metadata, created_at, updated_at) values ('vcrd_embedded', 'wrkspc_default', 'vlt_embedded', $1, $2, '{}', now(), now())`,
      [auth, sealed],
    );

    const server: McpServer = {
      transport: 'http',
      url: env.MCP_URL,
      headers: {},
      timeoutSeconds: 60,
      apiVaults: { workspaceId: 'wrkspc_default', vaultIds: ['vlt_embedded'] },
    };
    const layers = [0, 1].map(
      () =>
        new McpCredentials({
          api: new ApiCredentials(() => db, env.VAULT_KEY, new EgressGate(makePolicy(new URL(env.TOKEN_URL).host))),
        }),
    );
    const tokens = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const layer = layers[i % 2];
        const source = (await layer.source({ vault: 'default', server }))!;
        return (await layer.current(source)).access_token;
      }),
    );
    const stored = (await credentialForServer(db, env.VAULT_KEY, 'wrkspc_default', ['vlt_embedded'], env.MCP_URL))!;
    const [row] = await db.query<{ auth: { expires_at: string } }>(
      `select auth from credentials where id = 'vcrd_embedded'`,
    );
    process.stdout.write(
      JSON.stringify({
        kind: db.kind,
        tokens,
        stored: { access: stored.access_token, refresh: stored.refresh_token },
        expiresAt: row.auth.expires_at,
      }),
    );
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
