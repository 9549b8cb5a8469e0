// The vault: named secrets encrypted at rest with AES-256-GCM, one store per user or tenant.
// Sessions bind to one vault and hold only `vault:<name>` references; only hands and tools workers open it.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

import { withLockFile } from '../host/lock';
import { SecretNameSchema, VaultRefSchema } from '../session/identifiers';
import { SecretSealer, VaultError, type SealedEntry } from './secret-sealer';

export { SecretNameSchema, VaultRefSchema, VaultError };
export type VaultRef = z.infer<typeof VaultRefSchema>;

export function refName(ref: VaultRef): string {
  return VaultRefSchema.parse(ref).slice('vault:'.length);
}

/**
 * The minimal contract of a named-secret vault. `update` is how a secret that rotates (an OAuth token set) is
 * rewritten: no other write to that secret lands between its read and its write, on any process that shares the store.
 */
export interface SecretVault {
  readonly kind: 'file' | 'postgres';
  put(vault: string, name: string, value: string): Promise<void>;
  get(vault: string, name: string): Promise<string>;
  /** Resolves a `vault:<name>` reference inside the session's own vault only. */
  resolve(vault: string, ref: string): Promise<string>;
  list(vault: string): Promise<{ name: string; updatedAt: string }[]>;
  rm(vault: string, name: string): Promise<boolean>;
  /**
   * Reads secret `name` and stores what `fn` returns in its place (nothing, when it returns undefined), holding off
   * every other update of it meanwhile. Resolves to the value stored afterwards.
   */
  update(vault: string, name: string, fn: (current: string) => Promise<string | undefined>): Promise<string>;
}

const EntrySchema = z.object({ iv: z.string(), data: z.string(), tag: z.string(), updatedAt: z.string() });
const FileSchema = z.object({ version: z.literal(1), secrets: z.record(z.string(), EntrySchema) });

/**
 * A file per vault under `dir`, for the embedded default (one host). Each secret is sealed with a key derived for its
 * vault, and its vault and name are bound in as associated data, so an entry copied into another vault or renamed
 * does not open. Every write of a vault's file happens under a lock file beside it, so two processes on this host
 * never lose each other's writes.
 */
export class FileVault implements SecretVault {
  readonly kind = 'file' as const;
  private readonly sealer: SecretSealer;

  constructor(
    private readonly dir: string,
    key: string,
  ) {
    this.sealer = new SecretSealer(key);
  }

  private file(vault: string) {
    return path.join(this.dir, `${SecretNameSchema.parse(vault)}.json`);
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
    const file = this.file(vault);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(content, null, 1), { mode: 0o600 });
    fs.renameSync(tmp, file);
  }

  /** Runs `fn` holding the vault's lock file, one process at a time. */
  private locked<T>(vault: string, fn: () => Promise<T>): Promise<T> {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    return withLockFile(`${this.file(vault)}.lock`, fn);
  }

  private open(vault: string, name: string, entry: SealedEntry | undefined): string {
    if (!entry) throw new VaultError(`no secret ${name} in vault ${vault}`);
    return this.sealer.open(vault, name, entry);
  }

  async put(vault: string, name: string, value: string): Promise<void> {
    const entry = this.sealer.seal(vault, SecretNameSchema.parse(name), value);
    await this.locked(vault, async () => {
      const content = this.read(vault);
      content.secrets[name] = { ...entry, updatedAt: new Date().toISOString() };
      this.write(vault, content);
    });
  }

  async get(vault: string, name: string): Promise<string> {
    return this.open(vault, name, this.read(vault).secrets[SecretNameSchema.parse(name)]);
  }

  resolve(vault: string, ref: string): Promise<string> {
    return this.get(vault, refName(ref));
  }

  async list(vault: string): Promise<{ name: string; updatedAt: string }[]> {
    return Object.entries(this.read(vault).secrets)
      .map(([name, e]) => ({ name, updatedAt: e.updatedAt }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async rm(vault: string, name: string): Promise<boolean> {
    return this.locked(vault, async () => {
      const content = this.read(vault);
      if (!(name in content.secrets)) return false;
      delete content.secrets[name];
      this.write(vault, content);
      return true;
    });
  }

  update(vault: string, name: string, fn: (current: string) => Promise<string | undefined>): Promise<string> {
    SecretNameSchema.parse(name);
    return this.locked(vault, async () => {
      const current = this.open(vault, name, this.read(vault).secrets[name]);
      const next = await fn(current);
      if (next === undefined) return current;
      const content = this.read(vault);
      content.secrets[name] = { ...this.sealer.seal(vault, name, next), updatedAt: new Date().toISOString() };
      this.write(vault, content);
      return next;
    });
  }
}

export { redact, REDACTED } from './redact';
