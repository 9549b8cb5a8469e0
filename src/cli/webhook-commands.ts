// The webhook commands of `agents`: register endpoints, list and remove them, rotate their signing secrets, turn them
// back on, and read their delivery attempts; on the API's database directly (like `agents api-keys`).
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { CliError, err, out } from './cli-common';
import { withApiDb } from './api-key-commands';

/** The vault public key the signing secrets are sealed to (VAULT_PUBLIC_KEY, else the local key file's). */
async function publicKey(): Promise<string> {
  const { loadVaultPublicKey } = await import('../key-files');
  try {
    return await loadVaultPublicKey(loadConfig());
  } catch (e) {
    throw new CliError((e as Error).message);
  }
}

/** `agents webhooks add`, `list`, `remove`, `rotate-secret`, `enable` and `deliveries`. */
export function webhookCommands(program: Command): void {
  const hooks = program
    .command('webhooks')
    .description("manage webhook endpoints: signed HTTP callbacks for a workspace's events (docs/guide/webhooks.md)");
  hooks
    .command('add')
    .description('register an endpoint and print its signing secret, shown only this once')
    .argument('<url>', 'https URL the events are POSTed to (http only for a loopback host)')
    .requiredOption('--workspace <name>', 'workspace name, e.g. default or team-a')
    .option('--events <types>', 'comma-separated event types, e.g. session.created,session.status_idled (default: all)')
    .option('--json', 'print {"id","secret"} on stdout')
    .action(async (url: string, opts: { workspace: string; events?: string; json?: boolean }) => {
      const { WorkspaceNameSchema } = await import('../api/workspace-keys');
      const { findWorkspaceId } = await import('../storage/repos/api-keys-repo');
      const { addWebhookEndpoint, WebhookInputError } = await import('../webhooks/endpoints');
      const name = WorkspaceNameSchema.safeParse(opts.workspace);
      if (!name.success) throw new CliError(`--workspace: ${name.error.issues[0].message}`);
      const key = await publicKey();
      const made = await withApiDb(async (db) => {
        const workspaceId = await findWorkspaceId(db, name.data);
        if (!workspaceId)
          throw new CliError(
            `--workspace: no workspace ${name.data} (\`agents api-keys create --workspace\` makes one)`,
          );
        return addWebhookEndpoint(db, key, { workspaceId, url, events: opts.events });
      }).catch((e: unknown) => {
        if (!(e instanceof WebhookInputError)) throw e;
        throw new CliError(e.message.startsWith('events:') ? `--${e.message}` : e.message);
      });
      out(opts.json ? JSON.stringify({ id: made.id, secret: made.secret }) : made.secret);
      err(`endpoint ${made.id} for workspace ${name.data}; store its signing secret now, it is not shown again`);
    });
  hooks
    .command('list')
    .description('list endpoints: URL, event types, and whether (and why) each is disabled; never the secrets')
    .option('--workspace <name>', 'only the endpoints of this workspace')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { workspace?: string; json?: boolean }) => {
      const { findWorkspaceId } = await import('../storage/repos/api-keys-repo');
      const { listEndpoints } = await import('../webhooks/endpoints');
      const endpoints = await withApiDb(async (db) => {
        if (opts.workspace === undefined) return listEndpoints(db, null);
        const id = await findWorkspaceId(db, opts.workspace);
        if (!id) throw new CliError(`--workspace: no workspace ${opts.workspace}`);
        return listEndpoints(db, id);
      });
      for (const e of endpoints)
        out(
          opts.json
            ? JSON.stringify(e)
            : `${e.id}\t${e.url}\t${e.event_types?.join(',') ?? 'all events'}\t${e.disabled ? `disabled: ${e.disabled_reason}` : 'enabled'}`,
        );
    });
  hooks
    .command('remove')
    .description('remove an endpoint and its delivery records; nothing more is sent to it')
    .argument('<id>', 'endpoint id, as webhooks list shows it')
    .option('--json', 'print {"id","removed"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { removeWebhookEndpoint } = await import('../webhooks/endpoints');
      if (!(await withApiDb((db) => removeWebhookEndpoint(db, id)))) throw new CliError(`no webhook endpoint ${id}`);
      if (opts.json) out(JSON.stringify({ id, removed: true }));
      err(`removed ${id}`);
    });
  hooks
    .command('rotate-secret')
    .description('give an endpoint a new signing secret and print it, shown only this once; the old one stops at once')
    .argument('<id>', 'endpoint id, as webhooks list shows it')
    .option('--json', 'print {"id","secret"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { rotateWebhookSecret } = await import('../webhooks/endpoints');
      const key = await publicKey();
      const made = await withApiDb((db) => rotateWebhookSecret(db, key, id));
      if (!made) throw new CliError(`no webhook endpoint ${id}`);
      out(opts.json ? JSON.stringify(made) : made.secret);
      err(`new signing secret for ${id}; store it now, it is not shown again`);
    });
  hooks
    .command('enable')
    .description('turn a disabled endpoint back on (its failure count cleared); events from now on are delivered')
    .argument('<id>', 'endpoint id, as webhooks list shows it')
    .option('--json', 'print {"id","enabled"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { setEndpointEnabled } = await import('../webhooks/endpoints');
      if (!(await withApiDb((db) => setEndpointEnabled(db, id, true)))) throw new CliError(`no webhook endpoint ${id}`);
      if (opts.json) out(JSON.stringify({ id, enabled: true }));
      err(`enabled ${id}`);
    });
  hooks
    .command('disable')
    .description('turn an endpoint off; nothing is sent to it until it is enabled again')
    .argument('<id>', 'endpoint id, as webhooks list shows it')
    .option('--reason <text>', 'why, shown by webhooks list', 'disabled by the operator')
    .option('--json', 'print {"id","enabled"} on stdout')
    .action(async (id: string, opts: { reason: string; json?: boolean }) => {
      const { setEndpointEnabled } = await import('../webhooks/endpoints');
      if (!(await withApiDb((db) => setEndpointEnabled(db, id, false, opts.reason.slice(0, 500)))))
        throw new CliError(`no webhook endpoint ${id}`);
      if (opts.json) out(JSON.stringify({ id, enabled: false }));
      err(`disabled ${id}`);
    });
  hooks
    .command('deliveries')
    .description("an endpoint's recent delivery attempts, newest first: event, attempt, HTTP status or why none")
    .argument('<id>', 'endpoint id, as webhooks list shows it')
    .option('--limit <n>', 'attempts to show (1-1000)', '50')
    .option('--json', 'one JSON object per line')
    .action(async (id: string, opts: { limit: string; json?: boolean }) => {
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw new CliError('--limit: must be a whole number from 1 to 1000');
      const { recentAttempts } = await import('../webhooks/endpoints');
      const { findWebhookEndpoint } = await import('../storage/repos/webhooks-repo');
      const attempts = await withApiDb(async (db) => {
        if (!(await findWebhookEndpoint(db, id))) throw new CliError(`no webhook endpoint ${id}`);
        return recentAttempts(db, id, limit);
      });
      for (const a of attempts)
        out(
          opts.json
            ? JSON.stringify(a)
            : `${a.at}\t${a.event_type}\t${a.event_id}\tattempt ${a.attempt}\t${a.outcome}${a.status_code !== null ? ` ${a.status_code}` : ''}${a.error && a.status_code === null ? `\t${a.error}` : ''}`,
        );
    });
}
