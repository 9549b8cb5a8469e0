// The API's credentials on the embedded default (PGlite), where `agents dev` shares its API's database with its tools
// worker: ten refreshes at once of one expired single-use credential ask the token endpoint once, and the new token
// set is written back sealed.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../helpers/env';
import { startTrackerServer, type TrackerServer } from '../helpers/mcp-server';

let tracker: TrackerServer;
let dataDir: string;
beforeAll(async () => {
  tracker = await startTrackerServer();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-embedded-refresh-'));
});
afterAll(async () => {
  await tracker?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      path.join(ROOT, 'node_modules/.bin/tsx'),
      [path.join(ROOT, 'test/helpers/embedded-refresh.ts')],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

it('refreshes an expired API credential once for ten callers on the embedded database, and stores the new tokens', async () => {
  const erin = tracker.issue('erin');
  const r = await run({
    DATA_DIR: dataDir,
    VAULT_KEY: crypto.randomBytes(32).toString('base64'),
    MCP_URL: tracker.url,
    TOKEN_URL: tracker.tokenUrl,
    ACCESS: erin.accessToken,
    REFRESH: erin.refreshToken,
    CLIENT_ID: tracker.clientId,
    CLIENT_SECRET: tracker.clientSecret,
  });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  const out = JSON.parse(r.stdout) as {
    kind: string;
    tokens: string[];
    stored: { access: string; refresh: string };
    expiresAt: string;
  };
  expect(out.kind).toBe('embedded');
  expect(new Set(out.tokens)).toEqual(new Set([out.stored.access]));
  expect(tracker.accepts(out.stored.access)).toBe(true);
  expect(out.stored.refresh).not.toBe(erin.refreshToken);
  expect(Date.parse(out.expiresAt)).toBeGreaterThan(Date.now());
  expect(tracker.refreshes).toBe(1);
  expect(tracker.reuses).toBe(0);
  // The database's files hold only sealed boxes.
  const files = fs
    .readdirSync(path.join(dataDir, 'api-db'), { recursive: true, encoding: 'utf8' })
    .map((f) => path.join(dataDir, 'api-db', f));
  const bytes = Buffer.concat(files.filter((f) => fs.statSync(f).isFile()).map((f) => fs.readFileSync(f)));
  for (const secret of [out.stored.access, out.stored.refresh, erin.refreshToken, tracker.clientSecret])
    expect(bytes.includes(secret)).toBe(false);
});
