// The local Docker engine and the sandbox image: finds or starts an engine, and builds the image offline when no registry answers.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { onPath } from './which';

export const SANDBOX_IMAGE_DEFAULT = 'managed-agents/sandbox:latest';
export const SYSTEM_DOCKER_HOST = 'unix:///var/run/docker.sock';
export const PROJECT_DOCKER_HOST = 'unix:///run/managed-agents/docker.sock';

const RUN_DIR = '/run/managed-agents';
const DATA_ROOT = '/var/lib/managed-agents-docker';
const EXEC_ROOT = path.join(RUN_DIR, 'docker-exec');
const PIDFILE = path.join(RUN_DIR, 'docker.pid');
/** The project daemon's own configuration (sandbox runtimes live here), so a system daemon's is never touched. */
export const PROJECT_DAEMON_CONFIG = '/etc/managed-agents/dockerd.json';
const SYSTEM_PIDFILE = '/var/run/docker.pid';
const SYSTEM_DAEMON_CONFIG = '/etc/docker/daemon.json';
const DAEMON_LOG = '/var/log/managed-agents-dockerd.log';
const START_TIMEOUT_MS = 60_000;
const REGISTRY_PROBE_URL = 'https://registry-1.docker.io/v2/';
const REGISTRY_PROBE_TIMEOUT_MS = 3_000;

const SUITE = 'bookworm';
const PACKAGES = ['git', 'python3', 'bash', 'ca-certificates', 'coreutils', 'procps'];
const AGENT = { name: 'agent', uid: 1000, gid: 1000, home: '/home/agent' };
const IMAGE_CHANGES = ['USER 1000', 'WORKDIR /workspace', `ENV HOME=${AGENT.home}`, 'CMD ["sleep","infinity"]'];
const IMAGE_LABELS = ['LABEL org.opencontainers.image.title=managed-agents-sandbox', 'LABEL managed-agents.build=debootstrap'];

export type Log = (msg: string) => void;
const defaultLog: Log = (m) => process.stderr.write(`${m}\n`);

interface RunResult {
  code: number | null;
  stdout: string;
  output: string;
}

const OUTPUT_KEEP = 64_000;

export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: NodeJS.ReadableStream; uid?: number; gid?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'], uid: opts.uid, gid: opts.gid });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout = (stdout + chunk.toString()).slice(-OUTPUT_KEEP);
      output = (output + chunk.toString()).slice(-OUTPUT_KEEP);
    });
    child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-OUTPUT_KEEP)));
    // The reader may exit early (a failed import); its exit code tells the story, not EPIPE.
    child.stdin.on('error', () => undefined);
    if (opts.stdin) opts.stdin.pipe(child.stdin);
    else child.stdin.end();
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, output }));
  });
}

export function logTail(log: Log, text: string, lines = 15): void {
  for (const line of text.trimEnd().split('\n').slice(-lines)) log(`  | ${line}`);
}

async function mustRun(what: string, cmd: string, args: string[], log: Log, env?: NodeJS.ProcessEnv): Promise<RunResult> {
  const result = await run(cmd, args, { env });
  if (result.code !== 0) {
    logTail(log, result.output);
    throw new Error(`${what} failed (exit ${result.code}); its output ends above`);
  }
  return result;
}


// Non-login root shells (npm scripts, CI) often lack the sbin directories where dockerd and debootstrap live.
export const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export function systemPath(): string {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  return [...dirs, ...SYSTEM_DIRS.filter((d) => !dirs.includes(d))].join(path.delimiter);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A zombie still takes signal 0 until its parent reaps it, which can take a while when that parent is init.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** Serialises work across processes (setup and a test suite may both want the engine or the image). */
export async function withLock<T>(name: string, log: Log, fn: () => Promise<T>): Promise<T> {
  const lock = path.join(os.tmpdir(), `managed-agents-${name}.lock`);
  const mine = `${lock}.${process.pid}`;
  fs.writeFileSync(mine, String(process.pid));
  let announced = false;
  try {
    for (;;) {
      try {
        // link() is atomic and fails if the lock exists, and the lock already carries our pid when it appears.
        fs.linkSync(mine, lock);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let holder = 0;
      try {
        holder = Number(fs.readFileSync(lock, 'utf8').trim());
      } catch {
        continue; // released between our link() and this read
      }
      if (!holder || !isAlive(holder)) {
        fs.rmSync(lock, { force: true });
        continue;
      }
      if (!announced) log(`waiting for process ${holder}, which holds ${lock}`);
      announced = true;
      await sleep(500);
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** Environment for the docker CLI against `host`. */
export function dockerEnv(host: string): NodeJS.ProcessEnv {
  return { ...process.env, DOCKER_HOST: host, DOCKER_CLI_HINTS: 'false' };
}

function pingHttp(target: http.RequestOptions, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.request({ ...target, path: '/_ping', method: 'GET', agent: false, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'OK'));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Whether a Docker engine answers GET /_ping at `host` (a DOCKER_HOST value). */
export async function pingDocker(host: string, timeoutMs = 2_000): Promise<boolean> {
  if (host.startsWith('unix://')) return pingHttp({ socketPath: host.slice('unix://'.length) }, timeoutMs);
  if (host.startsWith('tcp://') && !process.env.DOCKER_TLS_VERIFY) {
    const url = new URL(host.replace(/^tcp:/, 'http:'));
    return pingHttp({ host: url.hostname, port: Number(url.port || 2375) }, timeoutMs);
  }
  // TLS, ssh:// and other transports: the CLI knows how to speak them.
  const result = await run('docker', ['version', '--format', '{{.Server.Version}}'], { env: dockerEnv(host) }).catch(() => undefined);
  return result?.code === 0;
}

/** The engine to use: `$DOCKER_HOST` if set, else the system socket, else the project's own, if one answers. */
export async function resolveDockerHost(): Promise<string | undefined> {
  if (process.env.DOCKER_HOST) return process.env.DOCKER_HOST;
  for (const host of [SYSTEM_DOCKER_HOST, PROJECT_DOCKER_HOST]) {
    if (await pingDocker(host)) return host;
  }
  return undefined;
}

/** Returns a DOCKER_HOST that answers, starting Debian's dockerd on the project's socket (installing it first) if none does. */
export async function ensureDockerEngine(log: Log = defaultLog): Promise<string> {
  const explicit = process.env.DOCKER_HOST;
  if (explicit) {
    if (await pingDocker(explicit, 5_000)) {
      log(`engine answers at ${explicit} (DOCKER_HOST)`);
      return explicit;
    }
    throw new Error(`DOCKER_HOST=${explicit} does not answer; start that engine, or unset DOCKER_HOST so setup can start its own at ${PROJECT_DOCKER_HOST}`);
  }
  const found = await resolveDockerHost();
  if (found) {
    log(`engine answers at ${found}`);
    return found;
  }
  if (!isRoot()) {
    throw new Error(`no Docker engine answers at ${SYSTEM_DOCKER_HOST} or ${PROJECT_DOCKER_HOST}, and starting one needs root; run setup as root, or start an engine and set DOCKER_HOST`);
  }
  return withLock('docker-engine', log, async () => {
    if (await pingDocker(PROJECT_DOCKER_HOST)) {
      log(`engine answers at ${PROJECT_DOCKER_HOST} (started by another process)`);
      return PROJECT_DOCKER_HOST;
    }
    await startProjectDaemon(log);
    return PROJECT_DOCKER_HOST;
  });
}

/**
 * Stops the project's own Docker engine (SIGTERM, as a host shutdown would) and starts it again. Its
 * containers stop with it; volumes and images stay. Used by the fault suite.
 */
export async function restartProjectDaemon(log: Log = defaultLog): Promise<string> {
  const pid = runningDaemonPid();
  if (pid === undefined) throw new Error(`no project dockerd is running (${PIDFILE})`);
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 60_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
  }
  return ensureDockerEngine(log);
}

export async function aptInstall(packages: string[], log: Log): Promise<void> {
  if (!onPath('apt-get', SYSTEM_DIRS)) throw new Error(`${packages.join(' ')} is not installed, and there is no apt-get to install it with`);
  if (!isRoot()) throw new Error(`${packages.join(' ')} is not installed, and installing it with apt-get needs root`);
  const env = { ...process.env, PATH: systemPath(), DEBIAN_FRONTEND: 'noninteractive' };
  const args = ['install', '-y', '--no-install-recommends', ...packages];
  log(`installing ${packages.join(' ')}: apt-get ${args.join(' ')}`);
  const first = await run('apt-get', args, { env });
  if (first.code === 0) return;
  // Package lists on a fresh machine are often missing or stale; refresh only when the install needs it.
  log('apt-get install failed; running apt-get update and trying again');
  await mustRun('apt-get update', 'apt-get', ['update'], log, env);
  await mustRun(`apt-get install ${packages.join(' ')}`, 'apt-get', args, log, env);
}

/** The path of `binary`, installing Debian's `pkg` with apt-get first when it is missing. */
export async function ensureTool(binary: string, pkg: string, log: Log): Promise<string> {
  const found = onPath(binary, SYSTEM_DIRS);
  if (found) return found;
  await aptInstall([pkg], log);
  const installed = onPath(binary, SYSTEM_DIRS);
  if (!installed) throw new Error(`installed ${pkg}, but ${binary} is still not on PATH`);
  return installed;
}

/** The pid of a dockerd that owns the project's pidfile, if one is still running. */
function runningDaemonPid(pidfile = PIDFILE): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidfile, 'utf8').trim());
  } catch {
    return undefined;
  }
  let comm = '';
  try {
    comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    // not running
  }
  if (pid > 0 && comm === 'dockerd' && isAlive(pid)) return pid;
  // dockerd refuses to start while its pidfile names a live process, even an unrelated one that reused the pid.
  if (pidfile === PIDFILE) fs.rmSync(PIDFILE, { force: true });
  return undefined;
}

export interface DaemonProcess {
  pid: number;
  /** The daemon.json it reads, and reads again on SIGHUP. */
  configFile: string;
}

/**
 * The local dockerd serving `dockerHost` (the project's or the system's socket), with the configuration file
 * it was started with, or undefined when it is remote or cannot be found.
 */
export function localDaemon(dockerHost: string): DaemonProcess | undefined {
  const pid = dockerHost === PROJECT_DOCKER_HOST ? runningDaemonPid() : dockerHost === SYSTEM_DOCKER_HOST ? runningDaemonPid(SYSTEM_PIDFILE) : undefined;
  if (pid === undefined) return undefined;
  let argv: string[] = [];
  try {
    argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
  let configFile = SYSTEM_DAEMON_CONFIG;
  argv.forEach((arg, i) => {
    if (arg === '--config-file') configFile = argv[i + 1] ?? configFile;
    else if (arg.startsWith('--config-file=')) configFile = arg.slice('--config-file='.length);
  });
  return { pid, configFile };
}

/** Whether an overlay mount works on the filesystem that holds the data root. */
async function overlayWorks(): Promise<{ ok: boolean; reason?: string }> {
  const probe = fs.mkdtempSync(path.join(path.dirname(DATA_ROOT), '.managed-agents-overlay-probe-'));
  const [lower, upper, work, merged] = ['lower', 'upper', 'work', 'merged'].map((d) => path.join(probe, d));
  let mounted = false;
  try {
    for (const d of [lower, upper, work, merged]) fs.mkdirSync(d);
    fs.writeFileSync(path.join(lower, 'probe'), 'x');
    const mount = await run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, merged], { env: { ...process.env, PATH: systemPath() } });
    if (mount.code !== 0) return { ok: false, reason: mount.output.trim().split('\n').pop() || `mount exited ${mount.code}` };
    mounted = true;
    fs.writeFileSync(path.join(merged, 'written'), 'y');
    const ok = fs.existsSync(path.join(merged, 'probe')) && fs.existsSync(path.join(upper, 'written'));
    return ok ? { ok } : { ok, reason: 'an overlay mount did not show its layers' };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  } finally {
    if (mounted) await run('umount', [merged], { env: { ...process.env, PATH: systemPath() } });
    if (!isMountPoint(merged)) fs.rmSync(probe, { recursive: true, force: true });
  }
}

function mountsUnder(dir: string): string[] {
  const decode = (s: string) => s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
  return fs
    .readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => decode(line.split(' ')[1] ?? ''))
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}

function isMountPoint(dir: string): boolean {
  return mountsUnder(dir).includes(dir);
}

async function chooseStorageDriver(log: Log): Promise<'overlay2' | 'vfs'> {
  const used = (driver: string) => fs.existsSync(path.join(DATA_ROOT, 'image', driver));
  // Images live under the driver that stored them; switching drivers would hide them.
  if (used('vfs') && !used('overlay2')) {
    log(`storage driver vfs, which ${DATA_ROOT} already uses`);
    return 'vfs';
  }
  const probe = await overlayWorks();
  if (probe.ok) return 'overlay2';
  log(`overlay2 does not work here (${probe.reason}); falling back to vfs, which copies every layer and is slower`);
  return 'vfs';
}

class DaemonStartError extends Error {
  constructor(
    message: string,
    readonly logTail: string,
  ) {
    super(message);
  }
}

function readFrom(file: string, offset: number): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const start = Math.max(offset, size - OUTPUT_KEEP);
      const buf = Buffer.alloc(size - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

async function waitForEngine(host: string, timeoutMs: number, exited: () => string | undefined): Promise<'up' | 'timeout' | string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await pingDocker(host, 1_000)) return 'up';
    const exit = exited();
    if (exit) return exit;
    if (Date.now() > deadline) return 'timeout';
    await sleep(250);
  }
}

async function launchDaemon(dockerd: string, driver: string, log: Log): Promise<void> {
  const args = [
    '--host', PROJECT_DOCKER_HOST,
    '--data-root', DATA_ROOT,
    '--exec-root', EXEC_ROOT,
    '--pidfile', PIDFILE,
    `--storage-driver=${driver}`,
    '--iptables=false',
    '--ip6tables=false',
    '--bridge=none',
    '--config-file', PROJECT_DAEMON_CONFIG,
  ];
  fs.mkdirSync(path.dirname(PROJECT_DAEMON_CONFIG), { recursive: true });
  if (!fs.existsSync(PROJECT_DAEMON_CONFIG)) fs.writeFileSync(PROJECT_DAEMON_CONFIG, '{}\n');
  fs.mkdirSync(path.dirname(DAEMON_LOG), { recursive: true });
  const out = fs.openSync(DAEMON_LOG, 'a');
  const offset = fs.fstatSync(out).size;
  fs.writeSync(out, `--- ${new Date().toISOString()} ${dockerd} ${args.join(' ')}\n`);
  log(`starting ${dockerd} on ${PROJECT_DOCKER_HOST} (storage driver ${driver}, data root ${DATA_ROOT}, log ${DAEMON_LOG})`);
  // Its own session and no pipes back to us, so the daemon outlives setup and the terminal it ran in.
  const child = spawn(dockerd, args, { detached: true, stdio: ['ignore', out, out], env: { ...process.env, PATH: systemPath() } });
  fs.closeSync(out);
  let exit: string | undefined;
  child.on('exit', (code, signal) => (exit = signal ? `signal ${signal}` : `exit code ${code}`));
  child.on('error', (err) => (exit = err.message));
  child.unref();
  const outcome = await waitForEngine(PROJECT_DOCKER_HOST, START_TIMEOUT_MS, () => exit);
  if (outcome === 'up') return;
  if (outcome === 'timeout' && child.pid) {
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  const tail = readFrom(DAEMON_LOG, offset);
  log(`dockerd log (${DAEMON_LOG}) ends:`);
  logTail(log, tail);
  const why = outcome === 'timeout' ? `did not answer within ${START_TIMEOUT_MS / 1000} s` : `stopped (${outcome}) before answering`;
  throw new DaemonStartError(`dockerd ${why} on ${PROJECT_DOCKER_HOST}; see ${DAEMON_LOG}`, tail);
}

// What dockerd says when it cannot use the storage driver it was given.
const OVERLAY_REFUSED = /error initializing graphdriver|driver not supported|overlay2?[^\n]*not supported|backing filesystem[^\n]*not supported/i;

/**
 * dockerd reuses the containerd named in its exec root's pidfile while that pid looks alive, and a killed
 * dockerd leaves its containerd as a zombie that looks alive, so the new daemon would wait on a dead socket.
 */
function clearStaleContainerdPid(): void {
  const pidfile = path.join(EXEC_ROOT, 'containerd', 'containerd.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidfile, 'utf8').trim());
  } catch {
    return;
  }
  if (!(pid > 0 && isAlive(pid))) fs.rmSync(pidfile, { force: true });
}

async function startProjectDaemon(log: Log): Promise<void> {
  const started = Date.now();
  const dockerd = await ensureTool('dockerd', 'docker.io', log);
  fs.mkdirSync(RUN_DIR, { recursive: true });
  fs.mkdirSync(DATA_ROOT, { recursive: true, mode: 0o710 });
  const running = runningDaemonPid();
  if (running) {
    log(`dockerd (pid ${running}) owns ${PIDFILE} but does not answer yet; waiting for it`);
    const outcome = await waitForEngine(PROJECT_DOCKER_HOST, START_TIMEOUT_MS, () => (isAlive(running) ? undefined : 'it exited'));
    if (outcome !== 'up') throw new Error(`dockerd (pid ${running}) did not answer on ${PROJECT_DOCKER_HOST} (${outcome}); see ${DAEMON_LOG}`);
    log(`engine answers at ${PROJECT_DOCKER_HOST}`);
    return;
  }
  clearStaleContainerdPid();
  let driver = await chooseStorageDriver(log);
  try {
    await launchDaemon(dockerd, driver, log);
  } catch (err) {
    if (!(err instanceof DaemonStartError) || driver !== 'overlay2' || !OVERLAY_REFUSED.test(err.logTail)) throw err;
    log('dockerd could not use overlay2; falling back to vfs, which copies every layer and is slower');
    driver = 'vfs';
    await launchDaemon(dockerd, driver, log);
  }
  const version = await run('docker', ['version', '--format', '{{.Server.Version}}'], { env: dockerEnv(PROJECT_DOCKER_HOST) });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  log(`engine answers at ${PROJECT_DOCKER_HOST} (dockerd ${version.stdout.trim() || '?'}, storage driver ${driver}, ready in ${seconds} s)`);
}

/** The sandbox image tag: `$SANDBOX_IMAGE`, or the default. */
export function sandboxImage(): string {
  return process.env.SANDBOX_IMAGE || SANDBOX_IMAGE_DEFAULT;
}

/** The image's id, or undefined when the engine does not have it. */
export async function imageId(dockerHost: string, image: string): Promise<string | undefined> {
  const result = await run('docker', ['image', 'inspect', '--format', '{{.Id}}', image], { env: dockerEnv(dockerHost) });
  return result.code === 0 ? result.stdout.trim() : undefined;
}

/** Whether Docker Hub answers at all; any HTTP status counts, since /v2/ wants a token. */
function registryAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(REGISTRY_PROBE_URL, { agent: false, signal: AbortSignal.timeout(REGISTRY_PROBE_TIMEOUT_MS) }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
  });
}

export interface SandboxImage {
  image: string;
  id: string;
  action: 'reused' | 'built-dockerfile' | 'built-offline';
  seconds: number;
}

export interface SandboxImageOptions {
  image?: string;
  /** Build even if the image exists. */
  rebuild?: boolean;
  /** Skip the registry check and build with debootstrap. */
  offline?: boolean;
  /** The folder holding the Dockerfile; `sandbox/` at the repository root by default. */
  contextDir?: string;
}

/** Ensures the sandbox image exists on the engine at `dockerHost`: reuses it, or builds it from the Dockerfile or offline. */
export async function ensureSandboxImage(dockerHost: string, log: Log = defaultLog, opts: SandboxImageOptions = {}): Promise<SandboxImage> {
  const image = opts.image ?? sandboxImage();
  await ensureTool('docker', 'docker.io', log);
  const existing = opts.rebuild ? undefined : await imageId(dockerHost, image);
  if (existing) return { image, id: existing, action: 'reused', seconds: 0 };
  return withLock('sandbox-image', log, async () => {
    const meanwhile = opts.rebuild ? undefined : await imageId(dockerHost, image);
    if (meanwhile) return { image, id: meanwhile, action: 'reused', seconds: 0 };
    const started = Date.now();
    let action: SandboxImage['action'] = 'built-offline';
    if (!opts.offline && (await registryAnswers())) {
      try {
        await buildFromDockerfile(dockerHost, image, opts.contextDir ?? path.resolve(__dirname, '..', '..', 'sandbox'), log);
        action = 'built-dockerfile';
      } catch (err) {
        log(`the Dockerfile build failed (${(err as Error).message}); building offline instead`);
      }
    } else if (!opts.offline) {
      log(`no registry answered at ${REGISTRY_PROBE_URL} within ${REGISTRY_PROBE_TIMEOUT_MS / 1000} s; building offline`);
    }
    if (action === 'built-offline') await buildOffline(dockerHost, image, log);
    const id = await imageId(dockerHost, image);
    if (!id) throw new Error(`built ${image}, but the engine at ${dockerHost} does not list it`);
    return { image, id, action, seconds: Math.round((Date.now() - started) / 1000) };
  });
}

async function buildFromDockerfile(dockerHost: string, image: string, contextDir: string, log: Log): Promise<void> {
  log(`docker build -t ${image} ${contextDir}`);
  // The project's engine runs with --bridge=none, so build steps use the host's network.
  await mustRun('docker build', 'docker', ['build', '--network', 'host', '-t', image, contextDir], log, dockerEnv(dockerHost));
}

interface AptSource {
  uri: string;
  suites: string[];
  components: string[];
}

function parseDeb822(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last: string | undefined;
    for (const line of stanza.split('\n')) {
      if (line.startsWith('#') || !line.trim()) continue;
      if (/^\s/.test(line) && last) {
        fields.set(last, `${fields.get(last)} ${line.trim()}`);
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
      if (!m) continue;
      last = m[1].toLowerCase();
      fields.set(last, m[2].trim());
    }
    const list = (key: string) => (fields.get(key) ?? '').split(/\s+/).filter(Boolean);
    if (!list('types').includes('deb') || (fields.get('enabled') ?? 'yes').toLowerCase() === 'no') continue;
    for (const uri of list('uris')) sources.push({ uri, suites: list('suites'), components: list('components') });
  }
  return sources;
}

function parseSourcesList(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (m) sources.push({ uri: m[1], suites: [m[2]], components: m[3].split(/\s+/).filter(Boolean) });
  }
  return sources;
}

function hostCodename(): string | undefined {
  try {
    const osRelease = fs.readFileSync('/etc/os-release', 'utf8');
    if (!/^ID=debian$/m.test(osRelease)) return undefined;
    return /^VERSION_CODENAME=(\S+)$/m.exec(osRelease)?.[1];
  } catch {
    return undefined;
  }
}

/** The Debian mirror this machine's apt uses for `suite`, read from its sources (never written down here). */
export function findDebianMirror(aptDir = '/etc/apt', suite = SUITE, codename = hostCodename()): string {
  const sources: AptSource[] = [];
  const main = path.join(aptDir, 'sources.list');
  if (fs.existsSync(main)) sources.push(...parseSourcesList(fs.readFileSync(main, 'utf8')));
  const dropIns = path.join(aptDir, 'sources.list.d');
  const names = fs.existsSync(dropIns) ? fs.readdirSync(dropIns).sort() : [];
  for (const name of names) {
    const file = path.join(dropIns, name);
    if (name.endsWith('.sources')) sources.push(...parseDeb822(fs.readFileSync(file, 'utf8')));
    else if (name.endsWith('.list')) sources.push(...parseSourcesList(fs.readFileSync(file, 'utf8')));
  }
  const usable = sources.filter((s) => /^(https?|ftp|file):/.test(s.uri) && s.components.includes('main'));
  // Failing an exact match, the mirror behind this Debian host's own release carries the other releases too.
  const match = usable.find((s) => s.suites.includes(suite)) ?? (codename ? usable.find((s) => s.suites.includes(codename)) : undefined);
  if (!match) throw new Error(`no apt source for Debian ${suite} (main) in ${main} or ${dropIns}; add one, e.g. a "deb MIRROR ${suite} main" line`);
  return match.uri.replace(/\/+$/, '');
}

function appendLine(file: string, line: string): void {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  if (text.split('\n').some((l) => l.startsWith(`${line.split(':')[0]}:`))) return;
  fs.writeFileSync(file, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${line}\n`);
}

function chownTree(dir: string, uid: number, gid: number): void {
  fs.lchownSync(dir, uid, gid);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(p, uid, gid);
    else fs.lchownSync(p, uid, gid);
  }
}

/** Adds the non-root user and the workspace, and drops what apt left behind. */
function prepareRootfs(rootfs: string): void {
  const etc = path.join(rootfs, 'etc');
  const taken = (file: string, id: number) => fs.readFileSync(path.join(etc, file), 'utf8').split('\n').some((l) => l.split(':')[2] === String(id) && !l.startsWith(`${AGENT.name}:`));
  if (taken('passwd', AGENT.uid) || taken('group', AGENT.gid)) throw new Error(`uid ${AGENT.uid} or gid ${AGENT.gid} is already taken in the debootstrapped rootfs`);
  appendLine(path.join(etc, 'passwd'), `${AGENT.name}:x:${AGENT.uid}:${AGENT.gid}:sandbox agent:${AGENT.home}:/bin/bash`);
  appendLine(path.join(etc, 'group'), `${AGENT.name}:x:${AGENT.gid}:`);
  if (fs.existsSync(path.join(etc, 'shadow'))) appendLine(path.join(etc, 'shadow'), `${AGENT.name}:*:::::::`);
  if (fs.existsSync(path.join(etc, 'gshadow'))) appendLine(path.join(etc, 'gshadow'), `${AGENT.name}:!::`);

  const home = path.join(rootfs, AGENT.home);
  fs.mkdirSync(home, { recursive: true, mode: 0o755 });
  const skel = path.join(etc, 'skel');
  if (fs.existsSync(skel)) fs.cpSync(skel, home, { recursive: true });
  chownTree(home, AGENT.uid, AGENT.gid);
  const workspace = path.join(rootfs, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  fs.chmodSync(workspace, 0o755);
  fs.chownSync(workspace, AGENT.uid, AGENT.gid);

  const clear = (dir: string, keep: (name: string) => boolean = () => false) => {
    const full = path.join(rootfs, dir);
    if (!fs.existsSync(full)) return;
    for (const name of fs.readdirSync(full)) if (!keep(name)) fs.rmSync(path.join(full, name), { recursive: true, force: true });
  };
  clear('var/cache/apt', (n) => n === 'archives');
  clear('var/cache/apt/archives', (n) => n === 'partial' || n === 'lock');
  clear('var/lib/apt/lists', (n) => n === 'partial' || n === 'lock');
}

/** Removes a build directory, unmounting first whatever a failed debootstrap left mounted inside it. */
async function removeBuildDir(dir: string, log: Log): Promise<void> {
  const mounts = mountsUnder(dir).sort((a, b) => b.length - a.length);
  for (const m of mounts) await run('umount', ['-l', m], { env: { ...process.env, PATH: systemPath() } });
  if (mountsUnder(dir).length > 0) {
    log(`left ${dir} in place: something is still mounted inside it`);
    return;
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

async function importRootfs(dockerHost: string, rootfs: string, image: string, changes: string[]): Promise<RunResult & { tar: RunResult }> {
  const tar = spawn('tar', ['--numeric-owner', '-C', rootfs, '-c', '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let tarErr = '';
  tar.stderr.on('data', (chunk: Buffer) => (tarErr = (tarErr + chunk.toString()).slice(-OUTPUT_KEEP)));
  const tarDone = new Promise<RunResult>((resolve) => {
    tar.on('error', (err) => resolve({ code: -1, stdout: '', output: err.message }));
    tar.on('close', (code) => resolve({ code, stdout: '', output: tarErr }));
  });
  const args = ['import', ...changes.flatMap((c) => ['-c', c]), '-', image];
  const imported = await run('docker', args, { env: dockerEnv(dockerHost), stdin: tar.stdout });
  // If the import stopped reading, tar would otherwise block on a full pipe.
  if (imported.code !== 0) tar.kill();
  return { ...imported, tar: await tarDone };
}

async function buildOffline(dockerHost: string, image: string, log: Log): Promise<void> {
  if (!isRoot()) throw new Error('building the sandbox image offline runs debootstrap, which needs root');
  const debootstrap = await ensureTool('debootstrap', 'debootstrap', log);
  const mirror = findDebianMirror();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'managed-agents-sandbox-'));
  const rootfs = path.join(work, 'rootfs');
  try {
    const args = ['--variant=minbase', `--include=${PACKAGES.join(',')}`, SUITE, rootfs, mirror];
    log(`debootstrap ${args.join(' ')}`);
    try {
      await mustRun('debootstrap', debootstrap, args, log, { ...process.env, PATH: systemPath() });
    } catch (err) {
      // The details are in debootstrap's own log, which goes away with the build directory.
      const own = readFrom(path.join(rootfs, 'debootstrap', 'debootstrap.log'), 0);
      if (own) {
        log('debootstrap.log ends:');
        logTail(log, own);
      }
      throw err;
    }
    prepareRootfs(rootfs);
    log(`docker import into ${image}`);
    let result = await importRootfs(dockerHost, rootfs, image, [...IMAGE_CHANGES, ...IMAGE_LABELS]);
    if (result.code !== 0 && /label/i.test(result.output)) {
      log('this engine does not take LABEL on import; importing without labels');
      result = await importRootfs(dockerHost, rootfs, image, IMAGE_CHANGES);
    }
    const failed = result.code !== 0 ? result : result.tar.code !== 0 ? result.tar : undefined;
    if (failed) {
      logTail(log, failed.output);
      throw new Error(`${failed === result ? 'docker import' : 'tar'} failed (exit ${failed.code}); its output ends above`);
    }
  } finally {
    await removeBuildDir(work, log);
  }
}
