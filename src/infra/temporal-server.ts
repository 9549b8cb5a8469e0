// The production Temporal server (`temporal-server`, its services run one per process) and its schema tool
// (`temporal-sql-tool`), built once from the Go module proxy into a cache outside the repository, with the
// PostgreSQL schema files of the same release next to them; and what a cluster on PostgreSQL needs from them: its
// databases set up by the schema tool, and its static configuration.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { goInstall } from './go-install';
import { withLock } from '../host/lock';
import { mustRun, run, type Log } from '../host/run';
import { onPath } from '../host/which';

/** v1.32.2 needs Go 1.26.10; v1.32.1 builds with the Go this project's setup installs (1.26.8). */
export const TEMPORAL_SERVER_VERSION = 'v1.32.1';
const MODULE = 'go.temporal.io/server';
/** Services a cluster runs, each its own process (`temporal-server start --service NAME`). */
export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type TemporalService = (typeof TEMPORAL_SERVICES)[number];

export function temporalServerCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

export interface TemporalServerBinaries {
  /** `temporal-server`: `--config-file FILE start --service NAME`. */
  server: string;
  /** `temporal-sql-tool`: create-database, setup-schema, update-schema. */
  sqlTool: string;
  /** The release's `schema/postgresql/v12` directory (`temporal/` and `visibility/`, each with `versioned/`). */
  schemaDir: string;
  source: 'cache' | 'built';
}

function cached(dir: string): Omit<TemporalServerBinaries, 'source'> {
  return {
    server: path.join(dir, 'temporal-server'),
    sqlTool: path.join(dir, 'temporal-sql-tool'),
    schemaDir: path.join(dir, 'schema', 'postgresql', 'v12'),
  };
}

/** The cached build, if complete. */
export function findTemporalServer(): TemporalServerBinaries | undefined {
  const found = cached(temporalServerCacheDir());
  const complete =
    fs.existsSync(found.server) &&
    fs.existsSync(found.sqlTool) &&
    fs.existsSync(path.join(found.schemaDir, 'temporal', 'versioned')) &&
    fs.existsSync(path.join(found.schemaDir, 'visibility', 'versioned'));
  return complete ? { ...found, source: 'cache' } : undefined;
}

/**
 * Finds the cached server, or builds it: `go install` of `cmd/server` and `cmd/tools/sql` at
 * {@link TEMPORAL_SERVER_VERSION} (with `-trimpath`, and `-ldflags=-s`, which leaves out the symbol table and
 * DWARF and so shortens the link), renamed `temporal-server` and `temporal-sql-tool`, and the schema files copied
 * from the module cache. One process builds at a time; the others wait and use its build.
 */
export async function ensureTemporalServer(
  log: Log = (m) => process.stderr.write(`${m}\n`),
): Promise<TemporalServerBinaries> {
  const found = findTemporalServer();
  if (found) return found;
  if (!onPath('go'))
    throw new Error(
      `the Temporal server is not in ${temporalServerCacheDir()} and Go is not installed to build it (${MODULE}@${TEMPORAL_SERVER_VERSION})`,
    );
  return withLock(`temporal-server-${TEMPORAL_SERVER_VERSION}`, log, async () => {
    const again = findTemporalServer();
    if (again) return again;
    const dir = temporalServerCacheDir();
    // Built into a scratch directory and moved in whole, so a cut-short build never looks complete.
    const scratch = `${dir}.building-${process.pid}`;
    fs.rmSync(scratch, { recursive: true, force: true });
    const env = { GOFLAGS: '-trimpath -ldflags=-s', GOTOOLCHAIN: 'local' };
    log(
      `building the Temporal server ${TEMPORAL_SERVER_VERSION}: go install ${MODULE}/cmd/server and cmd/tools/sql (several minutes the first time)`,
    );
    const started = Date.now();
    const server = await goInstall(
      `${MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`,
      scratch,
      'server',
      'the Temporal server',
      env,
    );
    const sql = await goInstall(
      `${MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
      scratch,
      'sql',
      'temporal-sql-tool',
      env,
    );
    fs.renameSync(server, path.join(scratch, 'temporal-server'));
    fs.renameSync(sql, path.join(scratch, 'temporal-sql-tool'));
    const modCache = (await mustRun('go env GOMODCACHE', 'go', ['env', 'GOMODCACHE'], log)).stdout.trim();
    const schema = path.join(modCache, `${MODULE}@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
    if (!fs.existsSync(schema)) throw new Error(`the module cache has no schema files at ${schema}`);
    fs.cpSync(schema, path.join(scratch, 'schema', 'postgresql', 'v12'), { recursive: true });
    // The module cache's files are read-only; the copies may be removed with the cache.
    for (const f of fs.readdirSync(path.join(scratch, 'schema'), { recursive: true, withFileTypes: true }))
      fs.chmodSync(path.join(f.parentPath, f.name), f.isDirectory() ? 0o755 : 0o644);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(scratch, dir);
    log(`built the Temporal server in ${((Date.now() - started) / 1000).toFixed(0)} s into ${dir}`);
    return { ...cached(dir), source: 'built' };
  });
}

/** Where a cluster's databases live: a PostgreSQL server, a user allowed to create databases, and their names. */
export interface TemporalDatabases {
  host: string;
  port: number;
  user: string;
  password: string;
  /** The default store (executions, shards, namespaces, task queues, cluster membership). */
  database: string;
  /** The visibility store (what list filters and search attributes query). */
  visibilityDatabase: string;
}

/**
 * Creates both databases and brings their schemas to the release's newest version with the server's own tool, as
 * an operator does: `create-database`, `setup-schema -v 0.0`, then `update-schema -d <versioned dir>`.
 */
export async function setupTemporalSchema(
  bins: Pick<TemporalServerBinaries, 'sqlTool' | 'schemaDir'>,
  db: TemporalDatabases,
  log: Log = () => undefined,
): Promise<void> {
  const stores: [string, string][] = [
    [db.database, 'temporal'],
    [db.visibilityDatabase, 'visibility'],
  ];
  for (const [database, schema] of stores) {
    const base = [
      '--plugin',
      'postgres12',
      '--ep',
      db.host,
      '--port',
      String(db.port),
      '--user',
      db.user,
      '--db',
      database,
    ];
    // The password goes by environment (SQL_PASSWORD), never on a command line others can read.
    const env = { ...process.env, SQL_PASSWORD: db.password };
    for (const args of [
      ['create-database'],
      ['setup-schema', '-v', '0.0'],
      ['update-schema', '-d', path.join(bins.schemaDir, schema, 'versioned')],
    ]) {
      const r = await run(bins.sqlTool, [...base, ...args], { env });
      if (r.code !== 0)
        throw new Error(
          `temporal-sql-tool ${args[0]} on ${database} failed (exit ${r.code}): ${r.output.trim().split('\n').slice(-3).join(' | ')}`,
        );
    }
    log(`schema of ${database} (${schema}) set up`);
  }
}

export interface ServicePorts {
  grpc: number;
  membership: number;
  /** The frontend's HTTP API; other services have none. */
  http?: number;
}

/**
 * The static configuration of a cluster whose four services run as separate processes on this host, on
 * PostgreSQL: JSON, which the server reads as the YAML it is. Membership goes through the database's
 * cluster_membership table, so the services find each other without seeds.
 */
export function temporalServerConfig(opts: {
  db: TemporalDatabases;
  ports: Record<TemporalService, ServicePorts>;
  dynamicConfigFile: string;
  /** Fixed for the life of the cluster. */
  historyShards?: number;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
}): string {
  const store = (database: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName: database,
      connectAddr: `${opts.db.host}:${opts.db.port}`,
      connectProtocol: 'tcp',
      user: opts.db.user,
      password: opts.db.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const services = Object.fromEntries(
    TEMPORAL_SERVICES.map((s) => {
      const p = opts.ports[s];
      return [
        s,
        {
          rpc: {
            grpcPort: p.grpc,
            membershipPort: p.membership,
            bindOnLocalHost: true,
            ...(p.http ? { httpPort: p.http } : {}),
          },
        },
      ];
    }),
  );
  const frontend = `127.0.0.1:${opts.ports.frontend.grpc}`;
  const config = {
    log: { stdout: true, level: opts.logLevel ?? 'warn' },
    persistence: {
      defaultStore: 'default',
      visibilityStore: 'visibility',
      numHistoryShards: opts.historyShards ?? 4,
      datastores: { default: store(opts.db.database, 20), visibility: store(opts.db.visibilityDatabase, 10) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services,
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: frontend },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    // The internal worker service (system workflows: namespace deletion, batch operations, scanners) calls it.
    publicClient: { hostPort: frontend },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    dynamicConfigClient: { filepath: opts.dynamicConfigFile, pollInterval: '10s' },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}
