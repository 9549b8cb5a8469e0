// Which worker holds which key: a brain worker runs without VAULT_KEY and never creates or reads one.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnWorker } from './helpers/child-worker';
import { startHarness, type Harness } from './helpers/env';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await h?.stop();
});

it('runs a brain worker with no vault key anywhere, and a hands worker with one', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-keys-'));
  try {
    const env = {
      TEMPORAL_ADDRESS: h.env.address,
      ANTHROPIC_BASE_URL: h.mock.url,
      ANTHROPIC_API_KEY: 'k',
      DATA_DIR: dataDir,
      VAULT_KEY: '',
    };
    const brain = await spawnWorker(env, 'brain');
    expect(fs.existsSync(path.join(dataDir, 'keys', 'vault.key'))).toBe(false);
    const environ = fs.readFileSync(`/proc/${brain.process.pid}/environ`, 'utf8');
    expect(environ).not.toMatch(/(^|\0)VAULT_KEY=[^\0]/);
    await brain.kill('SIGTERM');
    // A hands worker opens the vault, so for local development its key is generated once.
    const hands = await spawnWorker({ ...env, HANDS_HOST_ID: `keys-${process.pid}` }, 'hands');
    expect(fs.statSync(path.join(dataDir, 'keys', 'vault.key')).mode & 0o777).toBe(0o600);
    await hands.kill('SIGTERM');
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
