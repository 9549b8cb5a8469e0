// The vault: named secrets encrypted at rest with AES-256-GCM, one store per user or tenant.
// Sessions bind to one vault and hold only `vault:<name>` references; only hands and tools workers open it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

import { SecretNameSchema, VaultRefSchema } from '../session/identifiers';

export { SecretNameSchema, VaultRefSchema };
export type VaultRef = z.infer<typeof VaultRefSchema>;

export function refName(ref: VaultRef): string {
  return VaultRefSchema.parse(ref).slice('vault:'.length);
}

const EntrySchema = z.object({ iv: z.string(), data: z.string(), tag: z.string(), updatedAt: z.string() });
const FileSchema = z.object({ version: z.literal(1), secrets: z.record(z.string(), EntrySchema) });

export class VaultError extends Error {}

/**
 * A file per vault under `dir`. Each secret is sealed with a key derived for its vault, and its vault and
 * name are bound in as associated data, so an entry copied into another vault or renamed does not open.
 */
export class FileVault {
  private readonly master: Buffer;

  constructor(private readonly dir: string, key: string) {
    this.master = Buffer.from(key, 'base64');
    if (this.master.length !== 32) throw new VaultError('VAULT_KEY must be base64 of 32 bytes');
  }

  private file(vault: string) {
    return path.join(this.dir, `${SecretNameSchema.parse(vault)}.json`);
  }

  private vaultKey(vault: string): Buffer {
    return Buffer.from(crypto.hkdfSync('sha256', this.master, Buffer.alloc(0), `managed-agents vault ${vault}`, 32));
  }

  private read(vault: string): z.infer<typeof FileSchema> {
    try {
      return FileSchema.parse(JSON.parse(fs.readFileSync(this.file(vault), 'utf8')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, secrets: {} };
      throw new VaultError(`vault ${vault} is unreadable: ${(err as Error).message}`);
    }
  }

  private write(vault: string, content: z.infer<typeof FileSchema>) {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(vault);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(content, null, 1), { mode: 0o600 });
    fs.renameSync(tmp, file);
  }

  put(vault: string, name: string, value: string): void {
    SecretNameSchema.parse(name);
    if (value.length === 0) throw new VaultError('a secret must not be empty');
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.vaultKey(vault), iv);
    cipher.setAAD(Buffer.from(`${vault}\0${name}`));
    const data = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    const content = this.read(vault);
    content.secrets[name] = { iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64'), updatedAt: new Date().toISOString() };
    this.write(vault, content);
  }

  get(vault: string, name: string): string {
    const entry = this.read(vault).secrets[SecretNameSchema.parse(name)];
    if (!entry) throw new VaultError(`no secret ${name} in vault ${vault}`);
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.vaultKey(vault), Buffer.from(entry.iv, 'base64'));
      decipher.setAAD(Buffer.from(`${vault}\0${name}`));
      decipher.setAuthTag(Buffer.from(entry.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(entry.data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new VaultError(`secret ${name} in vault ${vault} does not open with this VAULT_KEY`);
    }
  }

  /** Resolves a `vault:<name>` reference inside the session's own vault only. */
  resolve(vault: string, ref: string): string {
    return this.get(vault, refName(ref));
  }

  list(vault: string): { name: string; updatedAt: string }[] {
    return Object.entries(this.read(vault).secrets)
      .map(([name, e]) => ({ name, updatedAt: e.updatedAt }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  rm(vault: string, name: string): boolean {
    const content = this.read(vault);
    if (!(name in content.secrets)) return false;
    delete content.secrets[name];
    this.write(vault, content);
    return true;
  }
}

export { redact, REDACTED } from './redact';
