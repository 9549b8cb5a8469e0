// Keys for local development: VAULT_KEY and CODEC_KEY come from the environment, else from files under
// DATA_DIR/keys that are generated once. Each is loaded on its own, so a brain worker never holds VAULT_KEY.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { codecKeyProblem } from './codec/codec-keys';
import type { Config } from './config';
import { PlatformError } from './session/platform-error';

export class KeyFileError extends PlatformError {}

type KeyName = 'VAULT_KEY' | 'CODEC_KEY';

const FILES: Record<KeyName, string> = { VAULT_KEY: 'vault.key', CODEC_KEY: 'codec.key' };

const PROBLEMS: Record<KeyName, (v: string) => string | undefined> = {
  VAULT_KEY: (v) =>
    /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32
      ? undefined
      : 'must be base64 of 32 bytes',
  CODEC_KEY: codecKeyProblem,
};

/** The key's file, creating it (dir 0700, file 0600) with a fresh random key if it does not exist yet. */
function keyFromFile(dataDir: string, name: KeyName): string {
  const dir = path.join(dataDir, 'keys');
  const file = path.join(dir, FILES[name]);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!fs.existsSync(file)) {
    // Written aside and linked into place: link fails if the file exists, so two processes starting at once
    // agree on one key, and neither ever reads a half-written file.
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(tmp, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    try {
      fs.linkSync(tmp, file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      fs.unlinkSync(tmp);
    }
  }
  const value = fs.readFileSync(file, 'utf8').trim();
  const problem = PROBLEMS[name](value);
  if (problem) throw new KeyFileError(`${name} from ${file} ${problem}; fix or delete the file, or set ${name}`);
  return value;
}

function loadKey(name: KeyName, fromEnv: string | undefined, dataDir: string, keyFiles: 'on' | 'off' = 'on'): string {
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const problem = PROBLEMS[name](fromEnv.trim());
    if (problem) throw new KeyFileError(`${name} ${problem}`);
    return fromEnv.trim();
  }
  if (keyFiles === 'off')
    throw new KeyFileError(`${name} is not set, and KEY_FILES=off forbids a key file; set ${name} or ${name}_FILE`);
  return keyFromFile(dataDir, name);
}

type KeyConfig<K extends KeyName> = Pick<Config, K | 'dataDir'> & Partial<Pick<Config, 'KEY_FILES'>>;

/** CODEC_KEY as configured, else the local development key file. */
export function loadCodecKey(config: KeyConfig<'CODEC_KEY'>): string {
  return loadKey('CODEC_KEY', config.CODEC_KEY, config.dataDir, config.KEY_FILES);
}

/** VAULT_KEY as configured, else the local development key file. Only hands and tools workers call this. */
export function loadVaultKey(config: KeyConfig<'VAULT_KEY'>): string {
  return loadKey('VAULT_KEY', config.VAULT_KEY, config.dataDir, config.KEY_FILES);
}

/** Where a key would come from, without generating one: the environment, an existing key file, or nowhere. */
export function keySource(
  name: KeyName,
  config: Pick<Config, KeyName | 'dataDir' | 'KEY_FILES'>,
): { source: 'env' | 'file' | 'missing'; file: string; problem?: string } {
  const file = path.join(config.dataDir, 'keys', FILES[name]);
  const value = config[name]?.trim();
  if (value) return { source: 'env', file, problem: PROBLEMS[name](value) };
  if (config.KEY_FILES === 'off' || !fs.existsSync(file)) return { source: 'missing', file };
  try {
    return { source: 'file', file, problem: PROBLEMS[name](fs.readFileSync(file, 'utf8').trim()) };
  } catch (e) {
    return { source: 'file', file, problem: `cannot be read (${(e as NodeJS.ErrnoException).code})` };
  }
}

/** Both keys, for the local stack that runs every role in one process. */
export function ensureKeys(
  dataDir: string,
  env: NodeJS.ProcessEnv = process.env,
): { codecKey: string; vaultKey: string } {
  return {
    codecKey: loadKey('CODEC_KEY', env.CODEC_KEY, dataDir),
    vaultKey: loadKey('VAULT_KEY', env.VAULT_KEY, dataDir),
  };
}

/**
 * The vault public key the API seals credentials to: VAULT_PUBLIC_KEY, else (local development, KEY_FILES=on)
 * DATA_DIR/keys/vault.pub, derived once from the local vault key file and written beside it.
 */
export async function loadVaultPublicKey(
  config: Pick<Config, 'VAULT_PUBLIC_KEY' | 'VAULT_KEY' | 'dataDir' | 'KEY_FILES'>,
): Promise<string> {
  const { publicKeyProblem, vaultPublicKey } = await import('./vault/sealed');
  const fromEnv = config.VAULT_PUBLIC_KEY?.trim();
  if (fromEnv) {
    const problem = publicKeyProblem(fromEnv);
    if (problem) throw new KeyFileError(`VAULT_PUBLIC_KEY ${problem}`);
    return fromEnv;
  }
  if (config.KEY_FILES === 'off')
    throw new KeyFileError(
      'VAULT_PUBLIC_KEY is not set, and KEY_FILES=off forbids a key file; print it with `agents vault public-key` where VAULT_KEY is set',
    );
  const file = path.join(config.dataDir, 'keys', 'vault.pub');
  if (fs.existsSync(file)) {
    const value = fs.readFileSync(file, 'utf8').trim();
    const problem = publicKeyProblem(value);
    if (problem) throw new KeyFileError(`vault public key from ${file} ${problem}; delete the file to derive it again`);
    return value;
  }
  const value = await vaultPublicKey(loadVaultKey(config));
  fs.writeFileSync(file, `${value}\n`, { mode: 0o644 });
  return value;
}
