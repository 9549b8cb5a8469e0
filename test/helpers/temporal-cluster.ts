// A production Temporal cluster on this machine: the server built from the Go module proxy
// (src/infra/temporal-server.ts), fresh databases on the project's PostgreSQL set up by its own schema tool, the
// frontend, history, matching and internal worker services as four processes, the compose stack's dynamic config,
// and a namespace with the platform's search attributes registered by the Temporal CLI, as an operator does.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import YAML from 'yaml';
import { Client, Connection } from '@temporalio/client';
import { ensurePostgres } from '../../src/infra/postgres-server';
import { waitForPort } from '../../src/infra/temporal-cli';
import {
  TEMPORAL_SERVICES,
  ensureTemporalServer,
  setupTemporalSchema,
  temporalServerConfig,
  type ServicePorts,
  type TemporalDatabases,
  type TemporalService,
} from '../../src/infra/temporal-server';
import { clientInterceptors } from '../../src/log/query-retry';
import { SESSION_SEARCH_ATTRIBUTES } from '../../src/session/search-attributes';
import { grpcInterceptors } from '../../src/temporal-connection';
import { ROOT, temporalCliPath, testDataConverter } from './env';

export { TEMPORAL_SERVICES, type TemporalService };

/** Dynamic config entries by key, as in the server's YAML file: `[{ value, constraints }]`. */
export type DynamicConfig = Record<string, { value: unknown; constraints?: Record<string, unknown> }[]>;

export interface TemporalCluster {
  /** The frontend, HOST:PORT. */
  address: string;
  /** `default`, created with {@link DEFAULT_RETENTION} and the session search attributes. */
  namespace: string;
  /** A client of `default` as the test workers see it (the test codec, the platform's interceptors). */
  client: Client;
  /** SIGTERM to one service process, waiting for its exit (SIGKILL after 30 s). */
  stopService(service: TemporalService): Promise<void>;
  /** Starts a stopped service again and waits until it listens. */
  startService(service: TemporalService): Promise<void>;
  restartService(service: TemporalService): Promise<void>;
  /** `temporal ARGS --address <frontend>`; throws with its stderr when it fails. */
  temporal(args: string[]): string;
  /** Creates a namespace; with `searchAttributes`, registers the session ones on it. */
  createNamespace(name: string, retention: string, searchAttributes: boolean): Promise<void>;
  /** The end of each service's log, for a failure message. */
  logs(): string;
  /** The process ids of the running services. */
  pids(): number[];
  stop(): Promise<void>;
}

export const DEFAULT_RETENTION = '72h';

const live = new Set<ChildProcess>();
process.on('exit', () => live.forEach((c) => c.kill('SIGKILL')));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pgQuery(url: string, sql: string): Promise<void> {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** The compose stack's dynamic config (deploy/temporal-dynamicconfig.yaml), with `extra` keys replacing its own. */
function dynamicConfig(extra: DynamicConfig): string {
  const base = YAML.parse(
    fs.readFileSync(path.join(ROOT, 'deploy/temporal-dynamicconfig.yaml'), 'utf8'),
  ) as DynamicConfig;
  return YAML.stringify({ ...base, ...extra });
}

/**
 * A free loopback port under 32768: the SQL stores keep a member's gRPC port in a smallint column, so a port from
 * the kernel's ephemeral range (32768 and up) fails the service's start.
 */
async function lowFreePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export async function startTemporalCluster(
  opts: { dynamicConfig?: DynamicConfig; log?: (m: string) => void } = {},
): Promise<TemporalCluster> {
  const log = opts.log ?? (() => undefined);
  const bins = await ensureTemporalServer(log);
  const cli = temporalCliPath();
  const pg = await ensurePostgres(() => undefined);
  const pgUrl = new URL(pg.url);
  const suffix = randomBytes(5).toString('hex');
  const db: TemporalDatabases = {
    host: pgUrl.hostname,
    port: Number(pgUrl.port),
    user: decodeURIComponent(pgUrl.username),
    password: decodeURIComponent(pgUrl.password),
    database: `temporal_${suffix}`,
    visibilityDatabase: `temporal_vis_${suffix}`,
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cluster-'));
  const procs = new Map<TemporalService, ChildProcess>();
  let connection: Connection | undefined;

  const stopService = async (service: TemporalService) => {
    const child = procs.get(service);
    if (!child) return;
    procs.delete(service);
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    live.delete(child);
  };
  const cleanup = async () => {
    await connection?.close().catch(() => undefined);
    // The frontend last: the others report to it on the way down.
    for (const s of ['worker', 'matching', 'history', 'frontend'] as const) await stopService(s);
    for (const name of [db.database, db.visibilityDatabase])
      await pgQuery(pg.url, `drop database if exists ${name} with (force)`).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  const logTail = (s: TemporalService) => {
    try {
      return fs
        .readFileSync(path.join(dir, `${s}.log`), 'utf8')
        .trim()
        .split('\n')
        .slice(-6)
        .map((l) => l.slice(0, 400))
        .join('\n');
    } catch {
      return '';
    }
  };
  const logs = () => TEMPORAL_SERVICES.map((s) => `--- ${s}\n${logTail(s)}`).join('\n');

  try {
    await setupTemporalSchema(bins, db, log);
    const ports = {} as Record<TemporalService, ServicePorts>;
    for (const s of TEMPORAL_SERVICES)
      ports[s] = {
        grpc: await lowFreePort(),
        membership: await lowFreePort(),
        ...(s === 'frontend' ? { http: await lowFreePort() } : {}),
      };
    const dynamicConfigFile = path.join(dir, 'dynamicconfig.yaml');
    fs.writeFileSync(dynamicConfigFile, dynamicConfig(opts.dynamicConfig ?? {}));
    const configFile = path.join(dir, 'config.yaml');
    fs.writeFileSync(configFile, temporalServerConfig({ db, ports, dynamicConfigFile }), { mode: 0o600 });
    const address = `127.0.0.1:${ports.frontend.grpc}`;

    const startService = async (service: TemporalService) => {
      if (procs.has(service)) throw new Error(`${service} is running`);
      const out = fs.openSync(path.join(dir, `${service}.log`), 'a');
      const child = spawn(
        bins.server,
        ['--config-file', configFile, '--allow-no-auth', 'start', '--service', service],
        {
          stdio: ['ignore', out, out],
        },
      );
      fs.closeSync(out);
      live.add(child);
      procs.set(service, child);
      const died = new Promise<never>((_, reject) =>
        child.once('exit', (code) => reject(new Error(`${service} exited (${code}):\n${logTail(service)}`))),
      );
      died.catch(() => undefined);
      await Promise.race([waitForPort('127.0.0.1', ports[service].grpc, 60_000), died]);
    };

    // The first process to start writes the cluster's metadata; two at once would both try. Then the rest.
    await startService('history');
    log('history started');
    await Promise.all((['matching', 'frontend', 'worker'] as const).map((s) => startService(s)));

    const temporal = (args: string[]) => {
      const r = spawnSync(cli, [...args, '--address', address], { encoding: 'utf8', timeout: 30_000 });
      if (r.status !== 0)
        throw new Error(`temporal ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr.trim()}`);
      return r.stdout;
    };
    connection = await Connection.connect({ address, interceptors: grpcInterceptors() });
    const conn = connection;

    const createNamespace = async (name: string, retention: string, searchAttributes: boolean) => {
      // The cluster accepts namespaces once its internal worker has set up the system namespace.
      for (const deadline = Date.now() + 90_000; ; await sleep(500)) {
        try {
          temporal(['operator', 'namespace', 'create', '--namespace', name, '--retention', retention]);
          break;
        } catch (e) {
          if (/already (exists|registered)/i.test((e as Error).message)) break;
          log((e as Error).message.split('\n')[0]);
          if (Date.now() > deadline) throw e;
        }
      }
      if (searchAttributes) {
        // One at a time: given several names and one type, the CLI registers the first name only.
        for (const k of SESSION_SEARCH_ATTRIBUTES)
          temporal([
            'operator',
            'search-attribute',
            'create',
            '--namespace',
            name,
            '--name',
            k.name,
            '--type',
            'Keyword',
          ]);
      }
      // Ready when every service's namespace registry has it: a workflow starts, and its listing works.
      for (const deadline = Date.now() + 90_000; ; await sleep(500)) {
        const workflowId = `cluster-ready-${randomBytes(4).toString('hex')}`;
        try {
          await conn.withDeadline(Date.now() + 10_000, () =>
            conn.workflowService.startWorkflowExecution({
              namespace: name,
              workflowId,
              workflowType: { name: 'cluster-ready' },
              taskQueue: { name: 'cluster-ready' },
              requestId: workflowId,
            }),
          );
          await conn.withDeadline(Date.now() + 10_000, () =>
            conn.workflowService.terminateWorkflowExecution({
              namespace: name,
              workflowExecution: { workflowId },
              reason: 'readiness probe',
            }),
          );
          const listed = await conn.withDeadline(Date.now() + 10_000, () =>
            conn.operatorService.listSearchAttributes({ namespace: name }),
          );
          const registered = SESSION_SEARCH_ATTRIBUTES.every((k) => k.name in (listed.customAttributes ?? {}));
          if (!searchAttributes || registered) return;
          log(
            `namespace ${name}: search attributes not listed yet (${Object.keys(listed.customAttributes ?? {}).join(', ')})`,
          );
        } catch (e) {
          log(`namespace ${name} not ready yet: ${(e as Error).message.split('\n')[0]}`);
          if (Date.now() > deadline) throw new Error(`namespace ${name} not ready: ${(e as Error).message}`);
        }
      }
    };

    log('services started');
    await createNamespace('default', DEFAULT_RETENTION, true);
    log('namespace default ready');
    const client = new Client({
      connection,
      namespace: 'default',
      dataConverter: testDataConverter(),
      interceptors: clientInterceptors,
    });
    return {
      address,
      namespace: 'default',
      client,
      stopService,
      startService,
      async restartService(service) {
        await stopService(service);
        await startService(service);
      },
      temporal,
      createNamespace,
      logs,
      pids: () => [...procs.values()].flatMap((c) => (c.pid === undefined ? [] : [c.pid])),
      stop: cleanup,
    };
  } catch (e) {
    const tails = logs();
    await cleanup();
    throw new Error(`${(e as Error).message}\n${tails}`);
  }
}
