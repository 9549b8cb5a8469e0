// Writes the secret files docker-compose.yml mounts, once: random CODEC_KEY, VAULT_KEY and database password,
// and the Anthropic key from the environment. Existing files are kept, so keys never change under a deployment.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
/** The uid the worker image runs as; compose bind-mounts file secrets with their host owner and mode. */
const WORKER_UID = 1000;

export function writeComposeSecrets(dir = path.join(ROOT, 'deploy', 'secrets'), env: NodeJS.ProcessEnv = process.env): { written: string[]; kept: string[] } {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const written: string[] = [];
  const kept: string[] = [];
  const write = (name: string, value: () => string | undefined, forWorkers: boolean) => {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) return kept.push(name);
    const v = value();
    if (v === undefined) return;
    fs.writeFileSync(file, v, { mode: 0o400, flag: 'wx' });
    if (forWorkers && process.getuid?.() === 0) fs.chownSync(file, WORKER_UID, WORKER_UID);
    written.push(name);
  };
  const key = () => `${randomBytes(32).toString('base64')}\n`;
  write('codec_key', key, true);
  write('vault_key', key, true);
  write('anthropic_api_key', () => (env.ANTHROPIC_API_KEY ? `${env.ANTHROPIC_API_KEY}\n` : undefined), true);
  // Read by compose itself (env_file), for postgres (POSTGRES_PASSWORD) and Temporal's auto-setup (POSTGRES_PWD).
  const pw = randomBytes(24).toString('hex');
  write('postgres.env', () => `POSTGRES_PASSWORD=${pw}\nPOSTGRES_PWD=${pw}\n`, false);
  return { written, kept };
}

if (require.main === module) {
  const dir = path.join(ROOT, 'deploy', 'secrets');
  const r = writeComposeSecrets(dir);
  process.stderr.write(`${dir}: wrote ${r.written.join(', ') || 'nothing'}${r.kept.length ? `; kept ${r.kept.join(', ')}` : ''}\n`);
  if (!fs.existsSync(path.join(dir, 'anthropic_api_key'))) {
    process.stderr.write(`no ANTHROPIC_API_KEY in the environment: write your key to ${path.join(dir, 'anthropic_api_key')} (mode 0400, owned by uid ${WORKER_UID})\n`);
  }
  if (process.getuid?.() !== 0 && process.getuid?.() !== WORKER_UID) {
    process.stderr.write(`the workers run as uid ${WORKER_UID}: run \`sudo chown ${WORKER_UID} ${dir}/codec_key ${dir}/vault_key ${dir}/anthropic_api_key\`\n`);
  }
}
