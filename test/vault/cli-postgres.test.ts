// `agents vault` with DATABASE_URL set: secrets go to PostgreSQL's vault_secrets, sealed under VAULT_KEY, so any
// host sharing the database reads them, and nothing is written under DATA_DIR.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb, type Db } from '../../src/storage/db';
import { PostgresVault } from '../../src/vault/pg-vault';
import { freshPostgresDatabase } from '../helpers/api';
import { ROOT } from '../helpers/env';

const SECRET = `ghp_${crypto.randomBytes(12).toString('hex')}`;
const vaultKey = crypto.randomBytes(32).toString('base64');
let pg: { url: string; drop(): Promise<void> };
let dataDir: string;
let db: Db | undefined;

beforeAll(async () => {
  pg = await freshPostgresDatabase();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-vault-cli-'));
});
afterAll(async () => {
  await db?.close();
  await pg?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

/** `agents vault ARGS` with `stdin` piped in and closed. */
function vault(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'vault', ...args], {
      env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: pg.url, VAULT_KEY: vaultKey, KEY_FILES: 'off' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** Every path under `dir`, relative to it. */
const tree = (dir: string): string[] => fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

it('stores, lists and removes a secret in PostgreSQL, and writes nothing under DATA_DIR', async () => {
  const put = await vault(['put', 'gh-token', '--vault', 'alice', '--json'], `${SECRET}\n`);
  expect(put).toMatchObject({ code: 0, stdout: `${JSON.stringify({ name: 'gh-token', vault: 'alice' })}\n` });
  expect(put.stderr).not.toContain(SECRET);
  expect(tree(dataDir)).toEqual([]);

  db = await openDb({ databaseUrl: pg.url, dataDir });
  const rows = await db.query('select * from vault_secrets');
  expect(rows).toHaveLength(1);
  expect(JSON.stringify(rows)).not.toContain(SECRET);
  // Another host with the same VAULT_KEY opens it; the sealing binds the vault and name in.
  expect(await new PostgresVault(db, vaultKey).resolve('alice', 'vault:gh-token')).toBe(SECRET);
  await expect(new PostgresVault(db, vaultKey).get('bob', 'gh-token')).rejects.toThrow(
    /no secret gh-token in vault bob/,
  );
  await expect(
    new PostgresVault(db, crypto.randomBytes(32).toString('base64')).get('alice', 'gh-token'),
  ).rejects.toThrow(/does not open with this VAULT_KEY/);

  const listed = await vault(['list', '--vault', 'alice', '--json']);
  expect(listed.code).toBe(0);
  expect(
    listed.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { name: string }).name),
  ).toEqual(['gh-token']);
  expect((await vault(['rm', 'gh-token', '--vault', 'alice'])).code).toBe(0);
  expect((await vault(['list', '--vault', 'alice'])).stdout).toBe('');
  const again = await vault(['rm', 'gh-token', '--vault', 'alice']);
  expect(again.code).not.toBe(0);
  expect(again.stderr).toMatch(/no secret gh-token in vault alice/);
  expect(tree(dataDir)).toEqual([]);
});
