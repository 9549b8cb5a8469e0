// The API's database: PostgreSQL through `pg` when DATABASE_URL is set, else PGlite (PostgreSQL compiled to WASM)
// under DATA_DIR. Both speak the same SQL, so one schema and one set of migrations serve them.
import fs from 'node:fs';
import path from 'node:path';
import { Client, Pool, types } from 'pg';
import { MIGRATIONS } from './migrations';
import { PlatformError } from '../session/platform-error';

// int8 (counts, identities) as numbers, as PGlite returns them; no value here nears 2^53.
types.setTypeParser(20, (v) => Number(v));

/** The minimal contract: parameterised SQL that returns rows. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /** Runs `fn` in one transaction: all of it commits, or none of it. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

class PostgresDb implements Db {
  readonly kind = 'postgres' as const;
  private readonly pool: Pool;

  constructor(url: string) {
    this.pool = new Pool({ connectionString: url, max: 10 });
    // An idle client that loses its server (a restart) is dropped from the pool, not thrown at the process.
    this.pool.on('error', () => undefined);
  }

  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const result = await fn({
        query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[],
      });
      await client.query('commit');
      return result;
    } catch (e) {
      await client.query('rollback').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

type PGliteType = import('@electric-sql/pglite').PGlite;

class EmbeddedDb implements Db {
  readonly kind = 'embedded' as const;
  constructor(
    private readonly pg: PGliteType,
    private readonly release: () => void,
  ) {}

  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pg.query<T>(sql, params)).rows;
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.pg.transaction((tx) =>
      fn({ query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows }),
    );
  }

  async close(): Promise<void> {
    try {
      await this.pg.close();
    } finally {
      this.release();
    }
  }
}

export class DbLockedError extends PlatformError {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The embedded database is one process's at a time (PGlite is a single-user server): a pid file, made with link()
 * so that two processes starting at once cannot both win, keeps a second process out with a clear message.
 */
function lockEmbedded(dir: string): () => void {
  const lock = path.join(dir, 'owner.pid');
  const mine = `${lock}.${process.pid}`;
  fs.writeFileSync(mine, String(process.pid));
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        fs.linkSync(mine, lock);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 3) throw e;
      }
      const holder = Number(fs.readFileSync(lock, 'utf8').trim());
      if (holder && holder !== process.pid && isAlive(holder)) {
        throw new DbLockedError(
          `the embedded database in ${dir} is open in process ${holder} (agents api?); stop it first, or set DATABASE_URL to share PostgreSQL between processes`,
        );
      }
      fs.rmSync(lock, { force: true });
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
  return () => fs.rmSync(lock, { force: true });
}

export interface OpenDbOptions {
  /** PostgreSQL; when absent, the embedded database under `dataDir`. */
  databaseUrl?: string;
  dataDir: string;
}

/** Opens the database and brings its schema up to date. */
export async function openDb(opts: OpenDbOptions): Promise<Db> {
  let db: Db;
  if (opts.databaseUrl) {
    await createDatabaseIfMissing(opts.databaseUrl);
    db = new PostgresDb(opts.databaseUrl);
  } else {
    const dir = path.join(opts.dataDir, 'api-db');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const release = lockEmbedded(dir);
    try {
      const { PGlite } = await import('@electric-sql/pglite');
      db = new EmbeddedDb(await PGlite.create(path.join(dir, 'pgdata')), release);
    } catch (e) {
      release();
      throw e;
    }
  }
  try {
    await migrate(db);
  } catch (e) {
    await db.close().catch(() => undefined);
    throw e;
  }
  return db;
}

/** Creates the database DATABASE_URL names when the server has none of that name (a fresh deployment). */
async function createDatabaseIfMissing(url: string): Promise<void> {
  const probe = new Client({ connectionString: url });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return;
  } catch (e) {
    if ((e as { code?: string }).code !== '3D000') throw e;
  } finally {
    await probe.end().catch(() => undefined);
  }
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const admin = new Client({ connectionString: maintenance.toString() });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
    await admin.query(`create database "${name.replace(/"/g, '""')}"`);
  } catch (e) {
    // Another process created it first: 42P04 once it exists, 23505 (pg_database's unique name index) when two
    // creations race, as every service of a compose stack does at its first start.
    const code = (e as { code?: string }).code;
    if (code !== '42P04' && code !== '23505') throw e;
  } finally {
    await admin.end().catch(() => undefined);
  }
}

// Any fixed number: every API process that starts at once takes the same lock, and one migrates.
const MIGRATION_LOCK = 0x6d616731;

/**
 * Applies the migrations not yet recorded in `schema_migrations`, in order, in one transaction under an advisory
 * lock: processes that start at once wait for the first, then find nothing left to do.
 */
export async function migrate(db: Db): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'create table if not exists schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())',
    );
    const done = new Set(
      (await tx.query<{ version: number }>('select version from schema_migrations')).map((r) => r.version),
    );
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      for (const statement of m.up) await tx.query(statement);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}
