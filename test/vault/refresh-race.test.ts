// One OAuth credential whose refresh tokens are single-use, used by ten callers at once through the tools activities
// of two tools workers (each its own client pool and database connections): every call succeeds, the token endpoint
// is asked once, and no spent refresh token is ever sent again. For the API's credentials, the named-secret vault in
// PostgreSQL, and the file vault of the embedded default.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import type Anthropic from '@anthropic-ai/sdk';
import { McpClientPool } from '../../src/mcp/pool';
import { McpCredentials, type ApiCredentialLookup } from '../../src/mcp/credentials';
import {
  createToolsActivities,
  type CallMcpToolInput,
  type CallMcpToolOutput,
  type ListMcpToolsOutput,
} from '../../src/mcp/mcp-activities';
import type { McpServer } from '../../src/session/agent';
import { openDb, type Db } from '../../src/storage/db';
import { FileVault, type SecretVault } from '../../src/vault';
import { ApiCredentials, NO_DATABASE, credentialForServer } from '../../src/mcp/api-credentials';
import { PostgresVault } from '../../src/vault/pg-vault';
import { startTestApi, type TestApi } from '../helpers/api';
import { startTrackerServer, type TrackerServer } from '../helpers/mcp-server';
import { EgressGate, makePolicy } from '../../src/egress';

let api: TestApi;
let client: Anthropic;
let tracker: TrackerServer;
let dataDir: string;
/** A second connection pool to the same database: the other tools worker's. */
let otherDb: Db;
const pools: McpClientPool[] = [];

beforeAll(async () => {
  tracker = await startTrackerServer();
  // The tracker's token endpoint is the one loopback server the API lets tenants name.
  process.env.EGRESS_ALLOW = new URL(tracker.tokenUrl).host;
  api = await startTestApi('postgres');
  client = await api.client();
  otherDb = await openDb({ databaseUrl: api.databaseUrl, dataDir: os.tmpdir() });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-vault-race-'));
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.closeAll()));
  await otherDb?.close();
  await api?.stop();
  await tracker?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The API's token endpoints are a tenant's: the gate opens exactly the tracker's (EGRESS_ALLOW host:port). */
const tokenGate = () => new EgressGate(makePolicy(new URL(tracker.tokenUrl).host));

/** A tools worker's activities over its own stores and its own pool. */
function toolsWorker(stores: { vault?: SecretVault; api?: ApiCredentialLookup }) {
  const pool = new McpClientPool(new McpCredentials(stores));
  pools.push(pool);
  return createToolsActivities({ ...stores, pool });
}

/** Ten create_issue calls at once, one per session, alternating between the two workers. */
async function tenCallsAtOnce(workers: ReturnType<typeof toolsWorker>[], server: McpServer, vault = 'default') {
  const run = Date.now();
  return Promise.all(
    Array.from({ length: 10 }, (_, i) => {
      const input: CallMcpToolInput = {
        sessionId: `race-${run}-${i}`,
        vault,
        serverName: 'tracker',
        server,
        tool: 'create_issue',
        input: { title: `issue ${i}` },
        toolUseId: `toolu_${i}`,
      };
      return new MockActivityEnvironment().run(workers[i % 2].callMcpTool, input) as Promise<CallMcpToolOutput>;
    }),
  );
}

const http = (extra: Partial<Extract<McpServer, { transport: 'http' }>>): McpServer => ({
  transport: 'http',
  url: tracker.url,
  headers: {},
  timeoutSeconds: 60,
  ...extra,
});

function expectOneRefreshAndNoReuse(
  results: { output: string; isError: boolean }[],
  before: { refreshes: number; reuses: number; issues: number },
) {
  for (const r of results)
    expect(r).toMatchObject({ isError: false, output: expect.stringMatching(/^created issue #\d+: issue \d$/) });
  expect(tracker.issues.length - before.issues).toBe(10);
  expect(tracker.refreshes - before.refreshes).toBe(1);
  expect(tracker.reuses).toBe(0);
}

const counts = () => ({ refreshes: tracker.refreshes, reuses: tracker.reuses, issues: tracker.issues.length });

it('refreshes an API credential once for ten calls on two tools workers, and writes the new tokens back sealed', async () => {
  const alice = tracker.issue('alice');
  const vault = await client.beta.vaults.create({ display_name: 'race' });
  const cred = await client.beta.vaults.credentials.create(vault.id, {
    auth: {
      type: 'mcp_oauth',
      mcp_server_url: tracker.url,
      access_token: alice.accessToken,
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      refresh: {
        client_id: tracker.clientId,
        refresh_token: alice.refreshToken,
        token_endpoint: tracker.tokenUrl,
        token_endpoint_auth: { type: 'client_secret_basic', client_secret: tracker.clientSecret },
      },
    },
  });
  // The server has let the access token lapse: every first request is refused with 401.
  tracker.expire(alice.accessToken);
  const [{ workspace_id: workspaceId }] = await api.db!.query<{ workspace_id: string }>(
    'select workspace_id from credentials where id = $1',
    [cred.id],
  );
  const before = counts();
  const workers = [
    toolsWorker({ api: new ApiCredentials(() => api.db, api.vaultKey, tokenGate()) }),
    toolsWorker({ api: new ApiCredentials(() => otherDb, api.vaultKey, tokenGate()) }),
  ];

  expectOneRefreshAndNoReuse(
    await tenCallsAtOnce(workers, http({ apiVaults: { workspaceId, vaultIds: [vault.id] } })),
    before,
  );

  const stored = await credentialForServer(otherDb, api.vaultKey, workspaceId, [vault.id], tracker.url);
  expect(stored!.access_token).not.toBe(alice.accessToken);
  expect(tracker.accepts(stored!.access_token)).toBe(true);
  expect(stored!.refresh_token).not.toBe(alice.refreshToken);
  const row = JSON.stringify(await api.db!.query('select * from credentials where id = $1', [cred.id]));
  for (const secret of [stored!.access_token, stored!.refresh_token!, tracker.clientSecret])
    expect(row).not.toContain(secret);
  // The new expiry is what the API shows; the secrets it never shows.
  const shown = await client.beta.vaults.credentials.retrieve(cred.id, { vault_id: vault.id });
  expect(Date.parse((shown.auth as { expires_at: string }).expires_at)).toBeGreaterThan(Date.now() + 3000_000);
  expect(JSON.stringify(shown)).not.toContain(stored!.access_token);
});

it('refreshes a proactively expired API credential once, before any request is refused', async () => {
  const bob = tracker.issue('bob');
  const vault = await client.beta.vaults.create({ display_name: 'expiring' });
  const cred = await client.beta.vaults.credentials.create(vault.id, {
    auth: {
      type: 'mcp_oauth',
      mcp_server_url: tracker.url,
      access_token: bob.accessToken,
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      refresh: {
        client_id: tracker.clientId,
        refresh_token: bob.refreshToken,
        token_endpoint: tracker.tokenUrl,
        token_endpoint_auth: { type: 'client_secret_post', client_secret: tracker.clientSecret },
      },
    },
  });
  // Past its expiry by the clock; the server would still take it, so a request with it would mean no refresh ran.
  await api.db!.query(
    `update credentials set auth = jsonb_set(auth, '{expires_at}', to_jsonb($2::text)) where id = $1`,
    [cred.id, new Date(Date.now() - 60_000).toISOString()],
  );
  const [{ workspace_id: workspaceId }] = await api.db!.query<{ workspace_id: string }>(
    'select workspace_id from credentials where id = $1',
    [cred.id],
  );
  const before = counts();
  const sent = tracker.requests.length;
  const workers = [
    toolsWorker({ api: new ApiCredentials(() => api.db, api.vaultKey, tokenGate()) }),
    toolsWorker({ api: new ApiCredentials(() => otherDb, api.vaultKey, tokenGate()) }),
  ];
  expectOneRefreshAndNoReuse(
    await tenCallsAtOnce(workers, http({ apiVaults: { workspaceId, vaultIds: [vault.id] } })),
    before,
  );
  expect(tracker.requests.slice(sent).filter((r) => r.auth !== 'ok')).toEqual([]);
});

describe.each([
  ['PostgreSQL', () => [new PostgresVault(api.db!, api.vaultKey), new PostgresVault(otherDb, api.vaultKey)]],
  [
    'file',
    () => [
      new FileVault(path.join(dataDir, 'vaults'), api.vaultKey),
      new FileVault(path.join(dataDir, 'vaults'), api.vaultKey),
    ],
  ],
] as const)('the named-secret vault on %s', (_kind, vaults) => {
  it('refreshes a named OAuth secret once for ten calls on two tools workers', async () => {
    const [a, b] = vaults();
    const user = `carol-${_kind}`;
    const t = tracker.issue(user);
    tracker.expire(t.accessToken);
    await a.put(
      user,
      'tracker-oauth',
      JSON.stringify({
        access_token: t.accessToken,
        refresh_token: t.refreshToken,
        token_url: tracker.tokenUrl,
        client_id: tracker.clientId,
        client_secret: tracker.clientSecret,
      }),
    );
    const before = counts();
    expectOneRefreshAndNoReuse(
      await tenCallsAtOnce(
        [toolsWorker({ vault: a }), toolsWorker({ vault: b })],
        http({ credential: 'vault:tracker-oauth' }),
        user,
      ),
      before,
    );
    const stored = JSON.parse(await b.get(user, 'tracker-oauth')) as { access_token: string };
    expect(tracker.accepts(stored.access_token)).toBe(true);
  });

  it('loses no update when twenty writers rewrite one secret at once', async () => {
    const [a, b] = vaults();
    await a.put('counter', 'n', '0');
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).update('counter', 'n', async (v) => String(Number(v) + 1))),
    );
    expect(await a.get('counter', 'n')).toBe('20');
  });
});

it('tells the session why, when a tools worker without a database serves a session bound to API vaults', async () => {
  const worker = toolsWorker({ api: new ApiCredentials(() => undefined, api.vaultKey, tokenGate()) });
  const listed: ListMcpToolsOutput = await new MockActivityEnvironment().run(worker.listMcpTools, {
    sessionId: `nodb-${crypto.randomUUID()}`,
    vault: 'default',
    servers: { tracker: http({ apiVaults: { workspaceId: 'wrkspc_default', vaultIds: ['vlt_x'] } }) },
  });
  expect(listed.tools).toEqual([]);
  expect(listed.failed).toEqual([{ server: 'tracker', message: `MCP server tracker: ${NO_DATABASE}` }]);
});
