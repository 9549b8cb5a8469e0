// Two hosts sharing only Temporal, DATABASE_URL and the keys: a secret put with `agents vault` on one (its own
// DATA_DIR) is used, and refreshed, by an `agents worker --role tools` on the other, and neither host writes any of
// the vault under its DATA_DIR.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb, type Db } from '../../src/storage/db';
import { PostgresVault } from '../../src/vault/pg-vault';
import { freshPostgresDatabase } from '../helpers/api';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker';
import { ROOT, startHarness, startSession, type Harness } from '../helpers/env';
import { callTool } from '../helpers/hands';
import { startTrackerServer, type TrackerServer } from '../helpers/mcp-server';

const vaultKey = crypto.randomBytes(32).toString('base64');
let h: Harness;
let pg: { url: string; drop(): Promise<void> };
let tracker: TrackerServer;
let worker: ChildWorker | undefined;
let db: Db | undefined;
const dirs: string[] = [];
const host = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-host-'));
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  tracker = await startTrackerServer();
  pg = await freshPostgresDatabase();
  h = await startHarness();
});
afterAll(async () => {
  await worker?.kill('SIGTERM');
  await db?.close();
  await h?.stop();
  await pg?.drop();
  await tracker?.stop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** `agents vault put NAME --vault VAULT` on a host whose DATA_DIR is `dataDir`, the value on stdin. */
function put(dataDir: string, vault: string, name: string, value: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'vault', 'put', name, '--vault', vault], {
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: pg.url, VAULT_KEY: vaultKey, KEY_FILES: 'off' },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.on('close', resolve);
    child.stdin!.end(value);
  });
}

it('uses and refreshes a secret put on another host, with nothing of the vault under either DATA_DIR', async () => {
  const cliHost = host();
  const toolsHost = host();
  const t = tracker.issue('hal');
  tracker.expire(t.accessToken);
  const credential = {
    access_token: t.accessToken,
    refresh_token: t.refreshToken,
    token_url: tracker.tokenUrl,
    client_id: tracker.clientId,
    client_secret: tracker.clientSecret,
  };
  expect(await put(cliHost, 'hal', 'tracker-oauth', JSON.stringify(credential))).toBe(0);
  worker = await spawnWorker(
    {
      TEMPORAL_ADDRESS: h.env.address,
      DATA_DIR: toolsHost,
      DATABASE_URL: pg.url,
      VAULT_KEY: vaultKey,
      KEY_FILES: 'off',
      MCP_STDIO_JAIL: 'off',
    },
    'tools',
  );

  const handle = await startSession(h, {
    agent: {
      vault: 'hal',
      tools: ['session_events'],
      sandboxes: {},
      mcpServers: { tracker: { transport: 'http', url: tracker.url, credential: 'vault:tracker-oauth' } },
    },
  });
  const result = await callTool(h, handle, 'mcp__tracker__create_issue', { title: 'from another host' });
  expect(result).toMatchObject({
    isError: false,
    output: expect.stringMatching(/^created issue #\d+: from another host$/),
  });
  expect(tracker.issues.at(-1)).toEqual({ title: 'from another host', user: 'hal' });
  expect(tracker.refreshes).toBe(1);
  expect(tracker.reuses).toBe(0);

  db = await openDb({ databaseUrl: pg.url, dataDir: cliHost });
  const stored = JSON.parse(await new PostgresVault(db, vaultKey).get('hal', 'tracker-oauth')) as {
    access_token: string;
  };
  expect(stored.access_token).not.toBe(t.accessToken);
  expect(tracker.accepts(stored.access_token)).toBe(true);
  for (const dir of [cliHost, toolsHost])
    expect(fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })).toEqual([]);
});
