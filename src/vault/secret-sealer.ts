// AES-256-GCM for the named-secret vault: a key derived per vault from VAULT_KEY, and the vault and secret name
// bound in as associated data, so an entry copied into another vault or renamed does not open. Both stores use it.
import crypto from 'node:crypto';
import { PlatformError } from '../session/platform-error';

export class VaultError extends PlatformError {}

/** One sealed secret as either store keeps it: base64 fields. */
export interface SealedEntry {
  iv: string;
  data: string;
  tag: string;
}

export class SecretSealer {
  private readonly master: Buffer;

  constructor(key: string) {
    this.master = Buffer.from(key, 'base64');
    if (this.master.length !== 32) throw new VaultError('VAULT_KEY must be base64 of 32 bytes');
  }

  private vaultKey(vault: string): Buffer {
    return Buffer.from(crypto.hkdfSync('sha256', this.master, Buffer.alloc(0), `managed-agents vault ${vault}`, 32));
  }

  seal(vault: string, name: string, value: string): SealedEntry {
    if (value.length === 0) throw new VaultError('a secret must not be empty');
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.vaultKey(vault), iv);
    cipher.setAAD(Buffer.from(`${vault}\0${name}`));
    const data = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return { iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
  }

  open(vault: string, name: string, entry: SealedEntry): string {
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.vaultKey(vault), Buffer.from(entry.iv, 'base64'));
      decipher.setAAD(Buffer.from(`${vault}\0${name}`));
      decipher.setAuthTag(Buffer.from(entry.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(entry.data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new VaultError(`secret ${name} in vault ${vault} does not open with this VAULT_KEY`);
    }
  }
}
