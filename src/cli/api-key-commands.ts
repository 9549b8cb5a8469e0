// The API key commands of `agents`: create, list and revoke the keys of the Managed Agents API.
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { CliError, err, out } from './cli-common';

/** Runs `fn` on the API's database (DATABASE_URL, else the embedded one under DATA_DIR), closed after. */
export async function withApiDb<T>(fn: (db: import('../storage/db').Db) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { openDb } = await import('../storage/db');
  let db;
  try {
    db = await openDb({ databaseUrl: config.DATABASE_URL, dataDir: config.dataDir });
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** `agents api-keys create`, `list` and `revoke`. */
export function apiKeysCommands(program: Command): void {
  const apiKeys = program
    .command('api-keys')
    .description('manage API keys; each belongs to one workspace, and sees only its resources');
  apiKeys
    .command('create')
    .description('make a key in a workspace (created on first use) and print it; it is shown only this once')
    .requiredOption('--workspace <name>', 'workspace name, e.g. default or team-a')
    .option('--json', 'print {"key","workspace"} on stdout')
    .action(async (opts: { workspace: string; json?: boolean }) => {
      const { createApiKey, WorkspaceNameSchema } = await import('../api/workspace-keys');
      const name = WorkspaceNameSchema.safeParse(opts.workspace);
      if (!name.success) throw new CliError(`--workspace: ${name.error.issues[0].message}`);
      const made = await withApiDb((db) => createApiKey(db, name.data));
      out(opts.json ? JSON.stringify({ key: made.key, workspace: made.workspace, id: made.id }) : made.key);
      err(`key ${made.id} for workspace ${made.workspace}; store it now, it is not shown again`);
    });
  apiKeys
    .command('list')
    .description('list keys (their ids, workspaces and first characters; never the keys)')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { json?: boolean }) => {
      const { listApiKeys } = await import('../api/workspace-keys');
      for (const k of await withApiDb(listApiKeys))
        out(
          opts.json
            ? JSON.stringify(k)
            : `${k.id}\t${k.workspace}\t${k.hint}\t${k.created_at}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ''}`,
        );
    });
  apiKeys
    .command('revoke')
    .description('revoke a key by id; requests with it get 401 from then on')
    .argument('<id>', 'key id, as api-keys list shows it')
    .option('--json', 'print {"id","revoked"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { revokeApiKey } = await import('../api/workspace-keys');
      if (!(await withApiDb((db) => revokeApiKey(db, id)))) throw new CliError(`no live key ${id}`);
      if (opts.json) out(JSON.stringify({ id, revoked: true }));
      err(`revoked ${id}`);
    });
}
