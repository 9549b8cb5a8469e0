// Which named-secret vault a process uses: PostgreSQL when DATABASE_URL is set, so every host shares it and nothing
// is written under DATA_DIR; else one file per vault under DATA_DIR/vaults (the embedded default, one host).
import path from 'node:path';
import type { Db } from '../storage/db';
import { FileVault, type SecretVault } from './index';
import { PostgresVault } from './pg-vault';

/** `db` is the open database when DATABASE_URL is set; without it, the file vault. */
export function secretVault(dataDir: string, vaultKey: string, db?: Db): SecretVault {
  return db?.kind === 'postgres'
    ? new PostgresVault(db, vaultKey)
    : new FileVault(path.join(dataDir, 'vaults'), vaultKey);
}
