// The deployment commands of `agents`: list, show, pause, unpause, run and runs, through the Managed Agents API
// (AGENTS_API_URL with AGENTS_API_KEY, a key of the deployments' workspace), so a pause or a run does on the
// deployment's Temporal Schedule exactly what the API does.
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { loadConfig } from '../config';
import { CliError, out } from './cli-common';

function deploymentId(raw: string): string {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(raw)) throw new InvalidArgumentError('deployment ids look like depl_01…');
  return raw;
}

async function api() {
  const config = loadConfig();
  if (!config.AGENTS_API_URL || !config.AGENTS_API_KEY)
    throw new CliError(
      'set AGENTS_API_URL and AGENTS_API_KEY (a key of the workspace, from `agents api-keys create`) to reach the API',
    );
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  return new Anthropic({ baseURL: config.AGENTS_API_URL, apiKey: config.AGENTS_API_KEY, maxRetries: 0 });
}

/** Runs `fn`, turning the API's refusals into a one-line error. */
async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const body = (e as { error?: { error?: { message?: string } }; status?: number }) ?? {};
    if (body.status) throw new CliError(`${body.status}: ${body.error?.error?.message ?? (e as Error).message}`);
    throw e;
  }
}

type Deployment = Awaited<ReturnType<Awaited<ReturnType<typeof api>>['beta']['deployments']['retrieve']>>;
type Run = Awaited<ReturnType<Awaited<ReturnType<typeof api>>['beta']['deploymentRuns']['retrieve']>>;

const line = (d: Deployment) =>
  [
    d.id,
    d.name,
    d.archived_at ? 'archived' : d.status,
    d.schedule ? `${d.schedule.expression} ${d.schedule.timezone}` : 'manual',
    d.schedule?.upcoming_runs_at?.[0] ? `next ${d.schedule.upcoming_runs_at[0]}` : '-',
  ].join('\t');

const runLine = (r: Run) =>
  [
    r.id,
    r.created_at,
    r.trigger_context.type === 'schedule' ? `schedule ${r.trigger_context.scheduled_at}` : 'manual',
    r.session_id ?? `failed ${r.error?.type}: ${r.error?.message}`,
  ].join('\t');

/** `agents deployments list|show|pause|unpause|run|runs`. */
export function deploymentCommands(program: Command): void {
  const deployments = program
    .command('deployments')
    .description(
      'agents that run on a schedule: list, show, pause, unpause, run now, and their runs (through the API)',
    );
  deployments
    .command('list')
    .description("list the workspace's deployments, with their schedules and next run")
    .option('--include-archived', 'archived ones too')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { includeArchived?: boolean; json?: boolean }) => {
      const client = await api();
      await call(async () => {
        for await (const d of client.beta.deployments.list({ include_archived: opts.includeArchived ?? false }))
          out(opts.json ? JSON.stringify(d) : line(d));
      });
    });
  deployments
    .command('show')
    .description('one deployment, with its upcoming run times')
    .argument('<id>', 'deployment id', deploymentId)
    .option('--json', 'print the deployment as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const client = await api();
      const d = await call(() => client.beta.deployments.retrieve(id));
      if (opts.json) {
        out(JSON.stringify(d));
        return;
      }
      out(line(d));
      for (const t of d.schedule?.upcoming_runs_at ?? []) out(`  upcoming ${t}`);
      if (d.paused_reason) out(`  paused: ${d.paused_reason.type === 'error' ? d.paused_reason.error.type : 'manual'}`);
    });
  for (const verb of ['pause', 'unpause'] as const)
    deployments
      .command(verb)
      .description(verb === 'pause' ? 'pause its schedule (manual runs still work)' : 'resume its schedule')
      .argument('<id>', 'deployment id', deploymentId)
      .option('--json', 'print the deployment as JSON')
      .action(async (id: string, opts: { json?: boolean }) => {
        const client = await api();
        const d = await call(() => client.beta.deployments[verb](id));
        out(opts.json ? JSON.stringify(d) : line(d));
      });
  deployments
    .command('run')
    .description('fire it now: creates a session and prints the run')
    .argument('<id>', 'deployment id', deploymentId)
    .option('--json', 'print the run as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const client = await api();
      const r = await call(() => client.beta.deployments.run(id));
      out(opts.json ? JSON.stringify(r) : runLine(r));
    });
  deployments
    .command('runs')
    .description('its runs, newest first: the session each created, or why it failed')
    .argument('<id>', 'deployment id', deploymentId)
    .option('--limit <n>', 'at most this many', (v) => {
      if (!/^\d{1,4}$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('a whole number from 1');
      return Number(v);
    })
    .option('--json', 'one JSON object per line')
    .action(async (id: string, opts: { limit?: number; json?: boolean }) => {
      const client = await api();
      let n = 0;
      await call(async () => {
        for await (const r of client.beta.deploymentRuns.list({ deployment_id: id })) {
          if (opts.limit !== undefined && n++ >= opts.limit) break;
          out(opts.json ? JSON.stringify(r) : runLine(r));
        }
      });
    });
}
