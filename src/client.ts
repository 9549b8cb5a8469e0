#!/usr/bin/env node
// The `agents` command line: start and drive sessions, read and follow their logs, run workers and the dev stack.
import { Command, InvalidArgumentError } from 'commander';
import fs from 'node:fs';
import path from 'node:path';

import { loadConfig } from './config';
import { colorEnabled, styles } from './infra/term';
import { loadCodecKey } from './infra/keys';
import { WORKER_ROLES, type WorkerRole } from './session/queues';
import { MAX_FILE_BYTES } from './session/paths';
import { getFileUpdate, handoffSandboxUpdate, putFileUpdate } from './workflows/messages';
import { CHECKS, formatDoctor, runDoctor, type CheckName } from './doctor';
import { addExamples, PROGRAM_HELP } from './cli/help';
import { CliError, connect, err, nonNegativeInt, out, secretName, sessionId, update, withSession } from './cli/common';
import { approvalCommands, submitCommand } from './cli/approvals';
import { eventsCommand, forkCommand, listCommand, loadAgent, sendCommand, signalCommands, startCommand, statusCommand, wakeCommand, watchCommand } from './cli/sessions';

export { CliError, loadAgent };

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('agents')
    .description('Run long-lived AI agent sessions durably on Temporal')
    // A parse error is one line, like every other refusal: commander puts its suggestion on a line of its own.
    .configureOutput({ writeErr: (s) => process.stderr.write(s), outputError: (s, write) => write(`${s.trimEnd().replace(/\s*\n\s*/g, ' ')}\n`) });

  startCommand(program);
  sendCommand(program);
  eventsCommand(program);
  watchCommand(program);
  statusCommand(program);
  approvalCommands(program);
  submitCommand(program);
  listCommand(program);
  wakeCommand(program);
  forkCommand(program);
  signalCommands(program);

  program
    .command('worker')
    .description('run workers against TEMPORAL_ADDRESS: brain (workflows, model calls), hands (sandboxes), tools (MCP) or all')
    .option('--role <role>', 'brain, hands, tools or all', (v) => {
      if (!(WORKER_ROLES as readonly string[]).includes(v)) throw new InvalidArgumentError(`must be one of ${WORKER_ROLES.join(', ')}`);
      return v;
    }, 'all')
    .option('--task-queue <queue>', 'the brain task queue to poll (default agents); sub-agents may run on their own', (v: string) => {
      if (!/^[A-Za-z0-9._-]{1,100}$/.test(v)) throw new InvalidArgumentError('task queues are letters, digits, dot, dash or underscore');
      return v;
    })
    .option('--json', 'print {"roles","hostId","streamUrl"} on stdout once polling')
    .action(async (opts: { role: WorkerRole; taskQueue?: string; json?: boolean }) => {
      const config = loadConfig(process.env, opts.role);
      const { startWorker } = await import('./worker');
      const worker = await startWorker({ role: opts.role, taskQueue: opts.taskQueue, address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE, apiKey: config.ANTHROPIC_API_KEY, baseURL: config.ANTHROPIC_BASE_URL, dockerHost: config.DOCKER_HOST });
      if (opts.json) out(JSON.stringify({ roles: worker.roles, hostId: worker.hostId ?? null, streamUrl: worker.streamUrl ?? null }));
      const stop = () => void worker.shutdown();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await worker.done;
    });

  program
    .command('doctor')
    .description('check Temporal, the pollers on each task queue, Docker, the sandbox image, keys and the model endpoint; says what to do about each failure')
    .option('--role <role>', "a worker checking itself: only its role's parts, and pollers from this host (the compose healthchecks)", (v) => {
      if (!(WORKER_ROLES as readonly string[]).includes(v)) throw new InvalidArgumentError(`must be one of ${WORKER_ROLES.join(', ')}`);
      return v;
    })
    .option('--check <names>', 'only these checks, comma-separated (config, temporal, pollers, docker, sandbox-image, keys, model)', (v) =>
      v.split(',').map((c) => {
        if (!(CHECKS as readonly string[]).includes(c.trim())) throw new InvalidArgumentError(`unknown check ${c}; one of ${CHECKS.join(', ')}`);
        return c.trim() as CheckName;
      }),
    )
    .option('--json', 'print {ok, checks: [{name, ok, detail, fix?}]}')
    .action(async (opts: { role?: WorkerRole; check?: CheckName[]; json?: boolean }) => {
      const report = await runDoctor({ role: opts.role, only: opts.check });
      out(opts.json ? JSON.stringify(report) : formatDoctor(report));
      if (!report.ok) throw new CliError(`doctor: ${report.checks.filter((c) => !c.ok).map((c) => c.name).join(', ')} failed`);
    });

  const files = program.command('files').description("copy files into and out of a session's sandbox (provisions it if needed)");
  files
    .command('put')
    .description('copy LOCAL into the sandbox at PATH (relative to the workspace, or absolute inside it)')
    .argument('<id>', 'session id', sessionId)
    .argument('<local>', 'local file')
    .argument('<path>', 'path in the sandbox')
    .option('--sandbox <name>', 'sandbox name', 'main')
    .option('--json', 'print {"path","bytes"} on stdout')
    .action(async (id: string, local: string, target: string, opts: { sandbox: string; json?: boolean }) => {
      let content: Buffer;
      try {
        const stat = fs.statSync(local);
        if (!stat.isFile()) throw new CliError(`${local} is not a regular file`);
        if (stat.size > MAX_FILE_BYTES) throw new CliError(`${local} is ${stat.size} bytes; the limit is ${MAX_FILE_BYTES}`);
        content = fs.readFileSync(local);
      } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(`cannot read ${local}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
      const client = await connect(loadConfig());
      const r = await withSession(id, () => update(client, id, putFileUpdate, { sandbox: opts.sandbox, path: target, contentBase64: content.toString('base64') }));
      if (opts.json) out(JSON.stringify({ path: r.path, bytes: r.bytes }));
      err(`wrote ${r.bytes} bytes to ${r.path}`);
    });
  files
    .command('get')
    .description('copy PATH out of the sandbox to LOCAL')
    .argument('<id>', 'session id', sessionId)
    .argument('<path>', 'path in the sandbox')
    .argument('<local>', 'local file')
    .option('--sandbox <name>', 'sandbox name', 'main')
    .option('--json', 'print {"path","bytes"} on stdout')
    .action(async (id: string, source: string, local: string, opts: { sandbox: string; json?: boolean }) => {
      const client = await connect(loadConfig());
      const r = await withSession(id, () => update(client, id, getFileUpdate, { sandbox: opts.sandbox, path: source }));
      fs.writeFileSync(local, Buffer.from(r.contentBase64, 'base64'));
      if (opts.json) out(JSON.stringify({ path: r.path, bytes: r.bytes }));
      err(`read ${r.bytes} bytes from ${r.path}`);
    });

  program
    .command('handoff')
    .description("pass one of session FROM's sandboxes to session TO: the container stays on its host, its owner changes, and FROM's later calls to it are denied")
    .argument('<from>', 'the session that holds the sandbox', sessionId)
    .argument('<sandbox>', 'the sandbox name, e.g. main', (v: string) => {
      if (!/^[a-z][a-z0-9-]{0,30}$/.test(v)) throw new InvalidArgumentError('sandbox names are lowercase letters, digits and -');
      return v;
    })
    .argument('<to>', 'the session that receives it', sessionId)
    .option('--json', 'print {"sandboxId"} on stdout')
    .action(async (from: string, sandbox: string, to: string, opts: { json?: boolean }) => {
      if (from === to) throw new CliError('a session cannot hand a sandbox to itself');
      const client = await connect(loadConfig());
      const desc = await withSession(to, () => client.workflow.getHandle(to).describe());
      if (desc.status.name !== 'RUNNING') throw new CliError(`session ${to} is not running (${desc.status.name.toLowerCase()})`);
      const r = await withSession(from, () => update(client, from, handoffSandboxUpdate, { sandbox, to }));
      if (opts.json) out(JSON.stringify(r));
      err(`sandbox ${sandbox} (${r.sandboxId.slice(0, 12)}) of ${from} now belongs to ${to}`);
    });

  const vault = program.command('vault').description('manage secrets in a vault; sessions refer to them as vault:<name>');
  const openVault = async () => {
    const config = loadConfig();
    const { FileVault } = await import('./vault');
    const { loadVaultKey } = await import('./infra/keys');
    return new FileVault(path.join(config.dataDir, 'vaults'), loadVaultKey(config));
  };
  vault
    .command('put')
    .description('store a secret read from stdin (never from the command line); the value is never printed')
    .argument('<name>', 'secret name', secretName)
    .option('--vault <vault>', 'vault (one per user or tenant)', secretName, 'default')
    .option('--json', 'print {"name","vault"} on stdout (never the value)')
    .action(async (name: string, opts: { vault: string; json?: boolean }) => {
      if (process.stdin.isTTY) err('reading the secret from stdin; end with Ctrl-D');
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const value = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
      if (value.length === 0) throw new CliError('no secret on stdin');
      (await openVault()).put(opts.vault, name, value);
      if (opts.json) out(JSON.stringify({ name, vault: opts.vault }));
      err(`stored ${name} in vault ${opts.vault}; refer to it as vault:${name}`);
    });
  vault
    .command('list')
    .description('list secret names (never values)')
    .option('--vault <vault>', 'vault', secretName, 'default')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { vault: string; json?: boolean }) => {
      for (const e of (await openVault()).list(opts.vault)) out(opts.json ? JSON.stringify(e) : `${e.name}\t${e.updatedAt}`);
    });
  vault
    .command('rm')
    .description('remove a secret')
    .argument('<name>', 'secret name', secretName)
    .option('--vault <vault>', 'vault', secretName, 'default')
    .option('--json', 'print {"name","vault"} on stdout')
    .action(async (name: string, opts: { vault: string; json?: boolean }) => {
      if (!(await openVault()).rm(opts.vault, name)) throw new CliError(`no secret ${name} in vault ${opts.vault}`);
      if (opts.json) out(JSON.stringify({ name, vault: opts.vault }));
      err(`removed ${name} from vault ${opts.vault}`);
    });

  vault
    .command('public-key')
    .description("print the public half of VAULT_KEY, which the API seals credentials to (set it as the API's VAULT_PUBLIC_KEY)")
    .option('--json', 'print {"publicKey"} on stdout')
    .action(async (opts: { json?: boolean }) => {
      const { loadVaultKey } = await import('./infra/keys');
      const { vaultPublicKey } = await import('./vault/sealed');
      const key = await vaultPublicKey(loadVaultKey(loadConfig()));
      out(opts.json ? JSON.stringify({ publicKey: key }) : key);
    });

  program
    .command('api')
    .description('serve the Managed Agents API on API_LISTEN (PostgreSQL at DATABASE_URL, else the embedded database under DATA_DIR) until Ctrl-C')
    .option('--listen <host:port>', 'address to listen on (default API_LISTEN, 127.0.0.1:8480)')
    .option('--json', 'print {"url"} on stdout once listening')
    .action(async (opts: { listen?: string; json?: boolean }) => {
      const config = loadConfig(process.env, 'api');
      if (opts.listen !== undefined && !/^[^\s]+:\d{1,5}$/.test(opts.listen)) throw new CliError('--listen must be HOST:PORT');
      const { startApiServer } = await import('./api/server');
      const api = await startApiServer(config, err, opts.listen);
      out(opts.json ? JSON.stringify({ url: api.url }) : api.url);
      err(`Managed Agents API at ${api.url} (storage: ${api.db.kind === 'postgres' ? 'PostgreSQL' : `embedded, ${path.join(config.dataDir, 'api-db')}`}); Ctrl-C stops it`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await api.stop();
    });

  const apiKeys = program.command('api-keys').description('manage API keys; each belongs to one workspace, and sees only its resources');
  const withApiDb = async <T>(fn: (db: import('./storage/db').Db) => Promise<T>): Promise<T> => {
    const config = loadConfig();
    const { openDb } = await import('./storage/db');
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
  };
  apiKeys
    .command('create')
    .description('make a key in a workspace (created on first use) and print it; it is shown only this once')
    .requiredOption('--workspace <name>', 'workspace name, e.g. default or team-a')
    .option('--json', 'print {"key","workspace"} on stdout')
    .action(async (opts: { workspace: string; json?: boolean }) => {
      const { createApiKey, WorkspaceNameSchema } = await import('./api/keys');
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
      const { listApiKeys } = await import('./api/keys');
      for (const k of await withApiDb(listApiKeys)) out(opts.json ? JSON.stringify(k) : `${k.id}\t${k.workspace}\t${k.hint}\t${k.created_at}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ''}`);
    });
  apiKeys
    .command('revoke')
    .description('revoke a key by id; requests with it get 401 from then on')
    .argument('<id>', 'key id, as api-keys list shows it')
    .option('--json', 'print {"id","revoked"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { revokeApiKey } = await import('./api/keys');
      if (!(await withApiDb((db) => revokeApiKey(db, id)))) throw new CliError(`no live key ${id}`);
      if (opts.json) out(JSON.stringify({ id, revoked: true }));
      err(`revoked ${id}`);
    });

  program
    .command('dev')
    .description('start the Temporal dev server (SQLite under DATA_DIR) and every worker role; Ctrl-C stops all')
    .option('--json', 'print {"address","uiUrl","codecUrl","modelUrl"} on stdout once everything is up')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const { startLocalStack } = await import('./infra/local-stack');
      const stack = await startLocalStack(config, err);
      if (opts.json) out(JSON.stringify({ address: stack.address, uiUrl: stack.uiUrl ?? null, codecUrl: stack.codecUrl, modelUrl: stack.modelUrl ?? null }));
      err(`Temporal at ${stack.address}${stack.uiUrl ? `, Web UI at ${stack.uiUrl}` : ''}; Ctrl-C stops everything`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await stack.stop();
    });

  program
    .command('model-server')
    .description('run the local Messages API server (offline model) until Ctrl-C')
    .option('--port <n>', 'port', nonNegativeInt, 0)
    .option('--json', 'print {"url"} on stdout')
    .action(async (opts: { port: number; json?: boolean }) => {
      const { MockModelServer } = await import('./model/mock-server');
      const server = new MockModelServer();
      const url = await server.start(opts.port);
      out(opts.json ? JSON.stringify({ url }) : url);
      err(`Messages API server at ${url}; set ANTHROPIC_BASE_URL=${url}`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.stop();
    });

  program
    .command('codec-server')
    .description('run the codec endpoint (POST /encode, /decode) that lets the Web UI show encrypted histories, until Ctrl-C')
    .option('--port <n>', 'port', nonNegativeInt, 8234)
    .option('--host <addr>', 'address to listen on; a container publishes it on the host\'s loopback', '127.0.0.1')
    .option('--origin <url>', 'a browser origin allowed to call it; repeatable (default http://localhost:8233)', (v: string, acc: string[] = []) => [...acc, v])
    .option('--json', 'print {"url"} on stdout')
    .action(async (opts: { port: number; host: string; origin?: string[]; json?: boolean }) => {
      const config = loadConfig(process.env, 'codec-server');
      const { CodecServer, DEFAULT_UI_ORIGIN, parseOrigin } = await import('./codec/server');
      const { EncryptionCodec, parseCodecKeys } = await import('./codec');
      let origins: string[];
      try {
        origins = (opts.origin ?? [DEFAULT_UI_ORIGIN]).map(parseOrigin);
      } catch (e) {
        throw new CliError((e as Error).message);
      }
      const server = new CodecServer({
        codec: new EncryptionCodec(parseCodecKeys(loadCodecKey(config))),
        origins,
        token: config.CODEC_SERVER_TOKEN,
        namespaces: [config.TEMPORAL_NAMESPACE],
        log: err,
      });
      const url = await server.start(opts.port, opts.host);
      out(opts.json ? JSON.stringify({ url }) : url);
      err(`codec server at ${url} for ${origins.join(', ')}${config.CODEC_SERVER_TOKEN ? ' (bearer token required)' : ''}; start the dev server with --ui-codec-endpoint ${url}`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.stop();
    });

  addExamples(program);
  program.addHelpText('after', PROGRAM_HELP);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    const error = e as Error & { code?: string; exitCode?: number };
    if (error.code?.startsWith('commander.')) return error.exitCode ?? 1;
    err(`${styles(colorEnabled(process.stderr)).red('error:')} ${error.message.split('\n')[0]}`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv).then(
    (code) => process.exit(code),
    (e) => {
      err(`error: ${(e as Error).message}`);
      process.exit(1);
    },
  );
}

