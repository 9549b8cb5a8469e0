// Finds or builds the Temporal CLI (which carries the dev server and Web UI) and starts the dev server.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { goInstall } from './go-install';
import { onPath } from '../host/which';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

export function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', `temporal-${TEMPORAL_CLI_VERSION}`);
}

export interface ResolvedCli {
  path: string;
  source: 'TEMPORAL_CLI' | 'PATH' | 'cache' | 'built';
}

/** Resolves the CLI without building: `$TEMPORAL_CLI`, `temporal` on PATH, then the cache. */
export function findTemporalCli(): ResolvedCli | undefined {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) throw new Error(`TEMPORAL_CLI names ${fromEnv}, which does not exist`);
    return { path: fromEnv, source: 'TEMPORAL_CLI' };
  }
  const found = onPath('temporal');
  if (found) return { path: found, source: 'PATH' };
  const cached = path.join(cacheDir(), 'temporal');
  if (fs.existsSync(cached)) return { path: cached, source: 'cache' };
  return undefined;
}

/** Resolves the CLI, building it with `go install` into the cache when it is nowhere to be found. */
export async function ensureTemporalCli(
  log: (msg: string) => void = (m) => process.stderr.write(`${m}\n`),
): Promise<ResolvedCli> {
  const found = findTemporalCli();
  if (found) return found;
  if (!onPath('go')) {
    throw new Error(
      `the Temporal CLI was not found ($TEMPORAL_CLI, PATH, ${cacheDir()}) and Go is not installed to build it. ` +
        `Install Go, or set TEMPORAL_CLI to a temporal binary.`,
    );
  }
  log(`building the Temporal CLI: go install ${GO_PACKAGE} (takes a few minutes the first time)`);
  const built = await goInstall(GO_PACKAGE, cacheDir(), 'temporal', 'the Temporal CLI');
  return { path: built, source: 'built' };
}

export async function waitForPort(host: string, port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing answered on ${host}:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function portInUse(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** An open port is not a ready server: wait until the frontend answers a real call for the namespace. */
async function waitForNamespace(address: string, namespace: string, timeoutMs = 60_000): Promise<void> {
  const { Connection } = await import('@temporalio/client');
  const { grpcInterceptors } = await import('../temporal-connection');
  const deadline = Date.now() + timeoutMs;
  const connection = await Connection.connect({ address, connectTimeout: '5s', interceptors: grpcInterceptors() });
  try {
    for (;;) {
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(
            `the dev server at ${address} did not serve namespace ${namespace}: ${(err as Error).message}`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await connection.close();
  }
}

export interface DevServer {
  address: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Dynamic config every dev server of ours gets (the compose stack's server reads the same values from
 * deploy/temporal-dynamicconfig.yaml).
 * - Eager activity execution: a workflow task that schedules an activity on its own task queue (callModel, on the
 *   brain queue) hands it straight back to the worker that completed the task, skipping a dispatch through
 *   matching (the server default is off; Temporal Cloud has it on).
 * - The timer queue's time shift: the server fires no timer earlier than this after it is created, and that
 *   includes an activity's retry. At the default, 1 s, the retry of a call whose worker died, due at once, started
 *   0.5 to 1.1 s later, which was most of a crash recovery with a standby worker; workflow timers were late alike.
 */
export const DEV_SERVER_DYNAMIC_CONFIG = [
  '--dynamic-config-value',
  'system.enableActivityEagerExecution=true',
  '--dynamic-config-value',
  'history.timerProcessorMaxTimeShift="10ms"',
];

/** Starts `temporal server start-dev` with SQLite persistence; resolves once the frontend accepts connections. */
export async function startDevServer(opts: {
  cli: string;
  dbFile?: string;
  port?: number;
  uiPort?: number;
  headless?: boolean;
  ip?: string;
  logFile?: string;
  /** A codec server the Web UI calls to show encrypted payloads. */
  uiCodecEndpoint?: string;
}): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? 7233;
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--log-level',
    'warn',
    ...DEV_SERVER_DYNAMIC_CONFIG,
  ];
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    args.push('--db-filename', opts.dbFile);
  }
  if (opts.headless) args.push('--headless');
  else args.push('--ui-port', String(opts.uiPort ?? 8233));
  if (opts.uiCodecEndpoint && !opts.headless) args.push('--ui-codec-endpoint', opts.uiCodecEndpoint);
  const out = opts.logFile ? fs.openSync(opts.logFile, 'a') : 'ignore';
  const child = spawn(opts.cli, args, { stdio: ['ignore', out, out] });
  let exited = false;
  child.on('exit', () => (exited = true));
  try {
    const connectHost = ip === '0.0.0.0' ? '127.0.0.1' : ip;
    await Promise.race([
      waitForPort(connectHost, port).then(() => waitForNamespace(`${connectHost}:${port}`, 'default')),
      new Promise((_, reject) =>
        child.once('exit', (code) => reject(new Error(`temporal dev server exited with code ${code}`))),
      ),
    ]);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    address: `${ip}:${port}`,
    uiUrl: opts.headless ? undefined : `http://localhost:${opts.uiPort ?? 8233}`,
    process: child,
    async stop() {
      if (exited) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await done;
      clearTimeout(timer);
    },
  };
}
