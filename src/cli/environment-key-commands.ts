// The environment key commands of `agents`: create, list and revoke the standing credentials of self-hosted
// environments' workers, on the API's database directly (like `agents api-keys`).
import type { Command } from 'commander';
import { CliError, err, out } from './cli-common';
import { withApiDb } from './api-key-commands';

/** `agents environment-keys create`, `list` and `revoke`. */
export function environmentKeysCommands(program: Command): void {
  const keys = program
    .command('environment-keys')
    .description("manage environment keys: a self-hosted environment's workers poll its work queue with one");
  keys
    .command('create')
    .description(
      'make a key for a self_hosted environment and print it (shown only this once); queues a healthcheck item',
    )
    .requiredOption('--environment <id>', 'environment id (env_…), of a self_hosted environment')
    .option('--json', 'print {"key","id","environment"} on stdout')
    .action(async (opts: { environment: string; json?: boolean }) => {
      const { createEnvironmentKey, EnvironmentKeyError } = await import('../api/environment-keys');
      const made = await withApiDb((db) => createEnvironmentKey(db, opts.environment)).catch((e: unknown) => {
        throw e instanceof EnvironmentKeyError ? new CliError(`--environment: ${e.message}`) : e;
      });
      out(opts.json ? JSON.stringify({ key: made.key, id: made.id, environment: made.environment }) : made.key);
      err(`key ${made.id} for environment ${made.environment}; store it now, it is not shown again`);
    });
  keys
    .command('list')
    .description('list keys (their ids, environments and first characters; never the keys)')
    .option('--environment <id>', 'only the keys of this environment')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { environment?: string; json?: boolean }) => {
      const { listEnvironmentKeys } = await import('../api/environment-keys');
      for (const k of await withApiDb((db) => listEnvironmentKeys(db, opts.environment)))
        out(
          opts.json
            ? JSON.stringify(k)
            : `${k.id}\t${k.environment}\t${k.hint}\t${k.created_at}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ''}`,
        );
    });
  keys
    .command('revoke')
    .description("revoke a key by id; its workers' polls get 401 from then on")
    .argument('<id>', 'key id, as environment-keys list shows it')
    .option('--json', 'print {"id","revoked"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { revokeEnvironmentKey } = await import('../api/environment-keys');
      if (!(await withApiDb((db) => revokeEnvironmentKey(db, id)))) throw new CliError(`no live environment key ${id}`);
      if (opts.json) out(JSON.stringify({ id, revoked: true }));
      err(`revoked ${id}`);
    });
}
