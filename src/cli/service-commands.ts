// The commands of `agents` that run a part of the platform until stopped (workers, the API, the dev stack, the
// model and codec servers), and doctor, which checks those parts.
import { InvalidArgumentError, type Command } from 'commander';
import path from 'node:path';
import { loadConfig } from '../config';
import { loadCodecKey } from '../key-files';
import { WORKER_ROLES, type WorkerRole } from '../session/queues';
import { CHECKS, formatDoctor, runDoctor, type CheckName } from '../doctor';
import { CliError, err, nonNegativeInt, out } from './cli-common';
import type { RunningWorker } from '../worker';
import { threadHeaps } from '../brain/thread-heaps';

function workerRole(v: string): WorkerRole {
  if (!(WORKER_ROLES as readonly string[]).includes(v))
    throw new InvalidArgumentError(`must be one of ${WORKER_ROLES.join(', ')}`);
  return v as WorkerRole;
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

/** `agents worker`: workers of one role, or all, until SIGINT or SIGTERM. */
export function workerCommand(program: Command): void {
  program
    .command('worker')
    .description(
      'run workers against TEMPORAL_ADDRESS: brain (workflows, model calls), hands (sandboxes), tools (MCP) or all',
    )
    .option('--role <role>', 'brain, hands, tools or all', workerRole, 'all')
    .option(
      '--task-queue <queue>',
      'the brain task queue to poll (default agents); sub-agents may run on their own',
      (v: string) => {
        if (!/^[A-Za-z0-9._-]{1,100}$/.test(v))
          throw new InvalidArgumentError('task queues are letters, digits, dot, dash or underscore');
        return v;
      },
    )
    .option('--json', 'print {"roles","hostId","streamUrl"} on stdout once polling')
    .action(async (opts: { role: WorkerRole; taskQueue?: string; json?: boolean }) => {
      const config = loadConfig(process.env, opts.role);
      // `kill -USR2 PID`: one JSON line on stderr with the worker's memory (its threads' heaps too) and cached sessions.
      const started: { worker?: RunningWorker } = {};
      const report = () =>
        void threadHeaps(1000)
          .catch(() => [])
          .then((threads) =>
            err(
              JSON.stringify({
                msg: 'worker status',
                ...(started.worker ? { ...started.worker.status(), threads } : { starting: true }),
              }),
            ),
          );
      process.on('SIGUSR2', report);
      const { startWorker } = await import('../worker');
      const worker = (started.worker = await startWorker({
        role: opts.role,
        taskQueue: opts.taskQueue,
        address: config.TEMPORAL_ADDRESS,
        namespace: config.TEMPORAL_NAMESPACE,
        apiKey: config.ANTHROPIC_API_KEY,
        baseURL: config.ANTHROPIC_BASE_URL,
        dockerHost: config.DOCKER_HOST,
      }));
      if (opts.json)
        out(
          JSON.stringify({ roles: worker.roles, hostId: worker.hostId ?? null, streamUrl: worker.streamUrl ?? null }),
        );
      const stop = () => void worker.shutdown();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await worker.done;
      process.removeListener('SIGUSR2', report);
    });
}

/** `agents doctor`: the checks, and a failing exit when one fails. */
export function doctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      'check Temporal, what the namespace offers (search attributes, retention, dynamic config), the pollers on each task queue, Docker, the sandbox image, keys and the model endpoint; says what to do about each failure',
    )
    .option(
      '--role <role>',
      "a worker checking itself: only its role's parts, and pollers from this host (the compose healthchecks)",
      workerRole,
    )
    .option('--check <names>', `only these checks, comma-separated (${CHECKS.join(', ')})`, (v) =>
      v.split(',').map((c) => {
        if (!(CHECKS as readonly string[]).includes(c.trim()))
          throw new InvalidArgumentError(`unknown check ${c}; one of ${CHECKS.join(', ')}`);
        return c.trim() as CheckName;
      }),
    )
    .option('--json', 'print {ok, checks: [{name, ok, detail, fix?}]}')
    .action(async (opts: { role?: WorkerRole; check?: CheckName[]; json?: boolean }) => {
      const report = await runDoctor({ role: opts.role, only: opts.check });
      out(opts.json ? JSON.stringify(report) : formatDoctor(report));
      if (!report.ok)
        throw new CliError(
          `doctor: ${report.checks
            .filter((c) => !c.ok)
            .map((c) => c.name)
            .join(', ')} failed`,
        );
    });
}

/** `agents api`: the Managed Agents API server. */
export function apiCommand(program: Command): void {
  program
    .command('api')
    .description(
      'serve the Managed Agents API on API_LISTEN (PostgreSQL at DATABASE_URL, else the embedded database under DATA_DIR) until Ctrl-C',
    )
    .option('--listen <host:port>', 'address to listen on (default API_LISTEN, 127.0.0.1:8480)')
    .option('--json', 'print {"url"} on stdout once listening')
    .action(async (opts: { listen?: string; json?: boolean }) => {
      const config = loadConfig(process.env, 'api');
      if (opts.listen !== undefined && !/^[^\s]+:\d{1,5}$/.test(opts.listen))
        throw new CliError('--listen must be HOST:PORT');
      const { startApiServer } = await import('../api/server');
      const api = await startApiServer(config, err, opts.listen);
      out(opts.json ? JSON.stringify({ url: api.url }) : api.url);
      err(
        `Managed Agents API at ${api.url}, console at ${api.url}/console (storage: ${api.db.kind === 'postgres' ? 'PostgreSQL' : `embedded, ${path.join(config.dataDir, 'api-db')}`}); Ctrl-C stops it`,
      );
      await untilStopped();
      await api.stop();
    });
}

/** `agents dev`: the Temporal dev server and every worker role. */
export function devCommand(program: Command): void {
  program
    .command('dev')
    .description(
      'start the Temporal dev server (SQLite under DATA_DIR), every worker role and the Managed Agents API; Ctrl-C stops all',
    )
    .option('--json', 'print {"address","uiUrl","codecUrl","modelUrl","apiUrl"} on stdout once everything is up')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const { startLocalStack } = await import('../dev/local-stack');
      const stack = await startLocalStack(config, err);
      if (opts.json)
        out(
          JSON.stringify({
            address: stack.address,
            uiUrl: stack.uiUrl ?? null,
            codecUrl: stack.codecUrl,
            modelUrl: stack.modelUrl ?? null,
            apiUrl: stack.apiUrl ?? null,
          }),
        );
      err(
        `Temporal at ${stack.address}${stack.uiUrl ? `, Web UI at ${stack.uiUrl}` : ''}${stack.apiUrl ? `, API at ${stack.apiUrl}, console at ${stack.apiUrl}/console` : ''}; Ctrl-C stops everything`,
      );
      await untilStopped();
      await stack.stop();
    });
}

/** `agents model-server`: the local Messages API server. */
export function modelServerCommand(program: Command): void {
  program
    .command('model-server')
    .description('run the local Messages API server (offline model) until Ctrl-C')
    .option('--port <n>', 'port', nonNegativeInt, 0)
    .option('--json', 'print {"url"} on stdout')
    .action(async (opts: { port: number; json?: boolean }) => {
      const { MockModelServer } = await import('../dev/model-server');
      const server = new MockModelServer();
      const url = await server.start(opts.port);
      out(opts.json ? JSON.stringify({ url }) : url);
      err(`Messages API server at ${url}; set ANTHROPIC_BASE_URL=${url}`);
      await untilStopped();
      await server.stop();
    });
}

/** `agents codec-server`: the codec endpoint for the Web UI. */
export function codecServerCommand(program: Command): void {
  program
    .command('codec-server')
    .description(
      'run the codec endpoint (POST /encode, /decode) that lets the Web UI show encrypted histories, until Ctrl-C',
    )
    .option('--port <n>', 'port', nonNegativeInt, 8234)
    .option('--host <addr>', "address to listen on; a container publishes it on the host's loopback", '127.0.0.1')
    .option(
      '--origin <url>',
      'a browser origin allowed to call it; repeatable (default http://localhost:8233)',
      (v: string, acc: string[] = []) => [...acc, v],
    )
    .option('--json', 'print {"url"} on stdout')
    .action(async (opts: { port: number; host: string; origin?: string[]; json?: boolean }) => {
      const config = loadConfig(process.env, 'codec-server');
      const { CodecServer, DEFAULT_UI_ORIGIN, parseOrigin } = await import('../codec/codec-server');
      const { EncryptionCodec, parseCodecKeys } = await import('../codec');
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
      err(
        `codec server at ${url} for ${origins.join(', ')}${config.CODEC_SERVER_TOKEN ? ' (bearer token required)' : ''}; start the dev server with --ui-codec-endpoint ${url}`,
      );
      await untilStopped();
      await server.stop();
    });
}
