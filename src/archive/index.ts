// The session archive: sealed segments of a session's log that outlive the workflow runs they came from. On
// PostgreSQL when DATABASE_URL is set (every host shares it), on local disk under DATA_DIR/archive otherwise.
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import type { Config } from '../config';
import type { Db } from '../storage/db';
import { FileSessionArchive } from './file';
import { PostgresSessionArchive } from './postgres-archive';
import type { SessionArchive } from './segment';

export { FileSessionArchive } from './file';
export { PostgresSessionArchive } from './postgres-archive';
export type { Segment, SessionArchive } from './segment';

/**
 * The session archive for `config`, its segments encoded by the history's payload codec: PostgreSQL at
 * DATABASE_URL (through `db` when the process has it open already, else a pool opened on first use and released
 * by close()), or DATA_DIR/archive for the embedded default.
 */
export function sessionArchive(
  config: Pick<Config, 'dataDir' | 'DATABASE_URL'>,
  dataConverter: DataConverter,
  db?: Db,
): SessionArchive {
  const url = config.DATABASE_URL;
  if (!url) return new FileSessionArchive(path.join(config.dataDir, 'archive'), dataConverter);
  if (db?.kind === 'postgres') return new PostgresSessionArchive(db, dataConverter);
  return new PostgresSessionArchive(
    async () => (await import('../storage/db')).openDb({ databaseUrl: url, dataDir: config.dataDir }),
    dataConverter,
  );
}
