// The named-secret vault in PostgreSQL (table vault_secrets), for workers and hosts that share DATABASE_URL: sealed
// exactly as the file vault seals, and an update is one transaction holding the secret's row lock throughout.
import type { Db } from '../storage/db';
import { SecretNameSchema, refName, type SecretVault } from './index';
import { SecretSealer, VaultError, type SealedEntry } from './secret-sealer';

interface Row extends SealedEntry {
  name: string;
  updated_at: Date;
}

export class PostgresVault implements SecretVault {
  readonly kind = 'postgres' as const;
  private readonly sealer: SecretSealer;

  constructor(
    private readonly db: Db,
    key: string,
  ) {
    this.sealer = new SecretSealer(key);
  }

  async put(vault: string, name: string, value: string): Promise<void> {
    const e = this.sealer.seal(SecretNameSchema.parse(vault), SecretNameSchema.parse(name), value);
    await this.db.query(
      `insert into vault_secrets (vault, name, iv, data, tag, updated_at) values ($1, $2, $3, $4, $5, now())
       on conflict (vault, name) do update set iv = excluded.iv, data = excluded.data, tag = excluded.tag, updated_at = now()`,
      [vault, name, e.iv, e.data, e.tag],
    );
  }

  private opened(vault: string, name: string, row: Row | undefined): string {
    if (!row) throw new VaultError(`no secret ${name} in vault ${vault}`);
    return this.sealer.open(vault, name, row);
  }

  async get(vault: string, name: string): Promise<string> {
    const rows = await this.db.query<Row>(
      'select name, iv, data, tag, updated_at from vault_secrets where vault = $1 and name = $2',
      [SecretNameSchema.parse(vault), SecretNameSchema.parse(name)],
    );
    return this.opened(vault, name, rows[0]);
  }

  resolve(vault: string, ref: string): Promise<string> {
    return this.get(vault, refName(ref));
  }

  async list(vault: string): Promise<{ name: string; updatedAt: string }[]> {
    const rows = await this.db.query<Row>('select name, updated_at from vault_secrets where vault = $1 order by name', [
      SecretNameSchema.parse(vault),
    ]);
    return rows.map((r) => ({ name: r.name, updatedAt: new Date(r.updated_at).toISOString() }));
  }

  async rm(vault: string, name: string): Promise<boolean> {
    const rows = await this.db.query('delete from vault_secrets where vault = $1 and name = $2 returning name', [
      SecretNameSchema.parse(vault),
      SecretNameSchema.parse(name),
    ]);
    return rows.length > 0;
  }

  /**
   * `select … for update` takes the row lock for the whole of `fn`: a second updater (any worker, any host) waits,
   * then reads what the first stored. A worker that dies mid-way drops its connection, and the lock with it.
   */
  update(vault: string, name: string, fn: (current: string) => Promise<string | undefined>): Promise<string> {
    SecretNameSchema.parse(vault);
    SecretNameSchema.parse(name);
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<Row>(
        'select name, iv, data, tag, updated_at from vault_secrets where vault = $1 and name = $2 for update',
        [vault, name],
      );
      const current = this.opened(vault, name, row);
      const next = await fn(current);
      if (next === undefined) return current;
      const e = this.sealer.seal(vault, name, next);
      await tx.query(
        'update vault_secrets set iv = $3, data = $4, tag = $5, updated_at = now() where vault = $1 and name = $2',
        [vault, name, e.iv, e.data, e.tag],
      );
      return next;
    });
  }
}
