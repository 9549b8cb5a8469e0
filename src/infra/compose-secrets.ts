// Writes the secret files docker-compose.yml mounts, once: random CODEC_KEY, VAULT_KEY and database password,
// and the Anthropic key from the environment. Existing files are kept, so keys never change under a deployment.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
/** The uid the worker image runs as; compose bind-mounts file secrets with their host owner and mode. */
const WORKER_UID = 1000;

export function writeComposeSecrets(
  dir = path.join(ROOT, 'deploy', 'secrets'),
  env: NodeJS.ProcessEnv = process.env,
): { written: string[]; kept: string[] } {
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

/**
 * The api service's files: its DATABASE_URL (a database of its own on the compose PostgreSQL, created at its first
 * start) and the vault public key it seals credentials to, derived from vault_key. Existing files are kept.
 */
export async function writeApiSecrets(dir = path.join(ROOT, 'deploy', 'secrets')): Promise<string[]> {
  const written: string[] = [];
  const urlFile = path.join(dir, 'database_url');
  if (!fs.existsSync(urlFile)) {
    const pw = /^POSTGRES_PASSWORD=(\w+)$/m.exec(fs.readFileSync(path.join(dir, 'postgres.env'), 'utf8'))?.[1];
    if (!pw) throw new Error(`${dir}/postgres.env has no POSTGRES_PASSWORD`);
    fs.writeFileSync(urlFile, `postgres://temporal:${pw}@postgres:5432/agents_api\n`, { mode: 0o400, flag: 'wx' });
    written.push('database_url');
  }
  const pubFile = path.join(dir, 'vault_public_key');
  if (!fs.existsSync(pubFile)) {
    const { vaultPublicKey } = await import('../vault/sealed');
    fs.writeFileSync(
      pubFile,
      `${await vaultPublicKey(fs.readFileSync(path.join(dir, 'vault_key'), 'utf8').trim())}\n`,
      { mode: 0o444, flag: 'wx' },
    );
    written.push('vault_public_key');
  }
  if (process.getuid?.() === 0) for (const f of written) fs.chownSync(path.join(dir, f), WORKER_UID, WORKER_UID);
  return written;
}

if (require.main === module) {
  const dir = path.join(ROOT, 'deploy', 'secrets');
  const r = writeComposeSecrets(dir);
  process.stderr.write(
    `${dir}: wrote ${r.written.join(', ') || 'nothing'}${r.kept.length ? `; kept ${r.kept.join(', ')}` : ''}\n`,
  );
  writeApiSecrets(dir).then(
    (w) => w.length > 0 && process.stderr.write(`${dir}: wrote ${w.join(', ')} for the api service\n`),
    (e: unknown) => {
      process.stderr.write(`api secrets: ${(e as Error).message}\n`);
      process.exitCode = 1;
    },
  );
  if (!fs.existsSync(path.join(dir, 'anthropic_api_key'))) {
    process.stderr.write(
      `no ANTHROPIC_API_KEY in the environment: write your key to ${path.join(dir, 'anthropic_api_key')} (mode 0400, owned by uid ${WORKER_UID})\n`,
    );
  }
  if (process.getuid?.() !== 0 && process.getuid?.() !== WORKER_UID) {
    process.stderr.write(
      `the workers run as uid ${WORKER_UID}: run \`sudo chown ${WORKER_UID} ${dir}/codec_key ${dir}/vault_key ${dir}/anthropic_api_key\`\n`,
    );
  }
}
