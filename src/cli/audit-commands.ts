// `agents audit`: the operator's view of the audit trail (which key changed what, and when) in the API's database.
import type { Command } from 'commander';
import { CliError, out, positiveInt } from './cli-common';
import { withApiDb } from './api-key-commands';

export function auditCommand(program: Command): void {
  program
    .command('audit')
    .description(
      'show the audit trail: which API key (or the operator) created, updated, archived or deleted what, and when',
    )
    .option('--workspace <name>', 'only this workspace')
    .option('--limit <n>', 'the newest N records (default 100)', positiveInt)
    .option('--json', 'one JSON object per line')
    .action(async (opts: { workspace?: string; limit?: number; json?: boolean }) => {
      const { WorkspaceNameSchema } = await import('../api/workspace-keys');
      const { listAudit } = await import('../api/audit');
      const name = opts.workspace === undefined ? undefined : WorkspaceNameSchema.safeParse(opts.workspace);
      if (name && !name.success) throw new CliError(`--workspace: ${name.error.issues[0].message}`);
      const records = await withApiDb((db) => listAudit(db, { workspace: opts.workspace, limit: opts.limit ?? 100 }));
      for (const r of records) {
        if (opts.json) out(JSON.stringify(r));
        else
          out(
            [
              r.at,
              r.workspace,
              r.api_key_id ?? 'operator',
              r.action,
              r.resource_type,
              r.resource_id,
              r.parent_id ? `in ${r.parent_id}` : '',
            ]
              .join('\t')
              .trimEnd(),
          );
      }
    });
}
