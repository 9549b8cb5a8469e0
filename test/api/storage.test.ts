// The API's storage: migrations run at start-up once, on PostgreSQL (even with several processes starting at
// once) and on the embedded default, which one process holds at a time.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { openDb } from '../../src/storage/db';
import { MIGRATIONS } from '../../src/storage/migrations';
import { ensurePostgres, withDatabase } from '../../src/infra/postgres-server';
import { vaultPublicKey } from '../../src/vault/sealed';
import { freshPostgresDatabase, startTestApi } from '../helpers/api';
import { runAgents } from '../helpers/cli';

it('migrates a new PostgreSQL database once, however many processes open it at once', async () => {
  const pg = await freshPostgresDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-db-'));
  try {
    const dbs = await Promise.all([1, 2, 3].map(() => openDb({ databaseUrl: pg.url, dataDir })));
    try {
      const rows = await dbs[0].query<{ version: number }>('select version from schema_migrations order by version');
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      expect(
        (await dbs[1].query<{ n: number }>("select count(*)::int as n from workspaces where name = 'default'"))[0].n,
      ).toBe(1);
      expect(dbs.map((d) => d.kind)).toEqual(['postgres', 'postgres', 'postgres']);
    } finally {
      await Promise.all(dbs.map((d) => d.close()));
    }
  } finally {
    await pg.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

it('keeps the embedded database across restarts, under DATA_DIR, one process at a time', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-db-'));
  const vaultKey = randomBytes(32).toString('base64');
  const env = { DATA_DIR: dataDir, KEY_FILES: 'off', VAULT_PUBLIC_KEY: await vaultPublicKey(vaultKey) };
  const cli = (args: string[]) => runAgents('localhost:7233', args, env);
  try {
    const first = await cli(['api-keys', 'create', '--workspace', 'one', '--json']);
    const second = await cli(['api-keys', 'create', '--workspace', 'two', '--json']);
    expect([first.code, second.code]).toEqual([0, 0]);
    expect(fs.existsSync(path.join(dataDir, 'api-db'))).toBe(true);
    const listed = (await cli(['api-keys', 'list', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { workspace: string });
    expect(listed.map((k) => k.workspace)).toEqual(['one', 'two']);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

it('tells a second process that the embedded database is in use, rather than sharing it', async () => {
  const api = await startTestApi('embedded');
  try {
    const r = await runAgents('localhost:7233', ['api-keys', 'list'], { DATA_DIR: api.dataDir, KEY_FILES: 'off' });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/embedded database .* is open in process \d+.*DATABASE_URL/);
    expect((await (await api.client()).beta.agents.list()).data).toEqual([]);
  } finally {
    await api.stop();
  }
});

it('prints the vault public key the API seals to, derived from VAULT_KEY', async () => {
  const vaultKey = randomBytes(32).toString('base64');
  const r = await runAgents('localhost:7233', ['vault', 'public-key', '--json'], {
    VAULT_KEY: vaultKey,
    KEY_FILES: 'off',
  });
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ publicKey: await vaultPublicKey(vaultKey) });
  expect(r.stdout).not.toContain(vaultKey);
});

it('creates the database DATABASE_URL names when the server has none of that name', async () => {
  const server = await ensurePostgres(() => undefined);
  const name = `fresh_${randomBytes(6).toString('hex')}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-db-'));
  try {
    const db = await openDb({ databaseUrl: withDatabase(server.url, name), dataDir });
    try {
      expect((await db.query<{ d: string }>('select current_database() as d'))[0].d).toBe(name);
    } finally {
      await db.close();
    }
  } finally {
    const admin = new Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

it('creates it once when several processes start at once, as the services of a compose stack do', async () => {
  const server = await ensurePostgres(() => undefined);
  const name = `fresh_${randomBytes(6).toString('hex')}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-db-'));
  const opened: Awaited<ReturnType<typeof openDb>>[] = [];
  try {
    // Two creations that race fail with 23505 on pg_database's name index, not 42P04; each start must take either.
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => openDb({ databaseUrl: withDatabase(server.url, name), dataDir })),
    );
    for (const r of results) if (r.status === 'fulfilled') opened.push(r.value);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    for (const db of opened) expect((await db.query<{ d: string }>('select current_database() as d'))[0].d).toBe(name);
  } finally {
    for (const db of opened) await db.close();
    const admin = new Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
