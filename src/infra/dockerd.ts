// The project's own Docker engine for development and setup: finds an engine that answers, or starts Debian's
// dockerd on the project's socket (installing it first), and locates a local daemon and the config it reads.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dockerEnv, pingDocker, PROJECT_DOCKER_HOST, resolveDockerHost, SYSTEM_DOCKER_HOST } from '../host/docker-host';
import { isAlive, withLock } from '../host/lock';
import { isMountPoint } from './mounts';
import { defaultLog, logTail, readFrom, run, type Log } from '../host/run';
import { ensureTool, isRoot, systemPath } from './system-tools';
import { PlatformError } from '../session/platform-error';

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Returns a DOCKER_HOST that answers, starting Debian's dockerd on the project's socket (installing it first) if none does. */
export async function ensureDockerEngine(log: Log = defaultLog): Promise<string> {
  const explicit = process.env.DOCKER_HOST;
  if (explicit) {
    if (await pingDocker(explicit, 5_000)) {
      log(`engine answers at ${explicit} (DOCKER_HOST)`);
      return explicit;
    }
    throw new Error(
      `DOCKER_HOST=${explicit} does not answer; start that engine, or unset DOCKER_HOST so setup can start its own at ${PROJECT_DOCKER_HOST}`,
    );
  }
  const found = await resolveDockerHost();
  if (found) {
    log(`engine answers at ${found}`);
    return found;
  }
  if (!isRoot()) {
    throw new Error(
      `no Docker engine answers at ${SYSTEM_DOCKER_HOST} or ${PROJECT_DOCKER_HOST}, and starting one needs root; run setup as root, or start an engine and set DOCKER_HOST`,
    );
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
  const pid =
    dockerHost === PROJECT_DOCKER_HOST
      ? runningDaemonPid()
      : dockerHost === SYSTEM_DOCKER_HOST
        ? runningDaemonPid(SYSTEM_PIDFILE)
        : undefined;
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
    const mount = await run(
      'mount',
      ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, merged],
      { env: { ...process.env, PATH: systemPath() } },
    );
    if (mount.code !== 0)
      return { ok: false, reason: mount.output.trim().split('\n').pop() || `mount exited ${mount.code}` };
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

class DaemonStartError extends PlatformError {
  constructor(
    message: string,
    readonly logTail: string,
  ) {
    super(message);
  }
}

async function waitForEngine(
  host: string,
  timeoutMs: number,
  exited: () => string | undefined,
): Promise<'up' | 'timeout' | string> {
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
    '--host',
    PROJECT_DOCKER_HOST,
    '--data-root',
    DATA_ROOT,
    '--exec-root',
    EXEC_ROOT,
    '--pidfile',
    PIDFILE,
    `--storage-driver=${driver}`,
    '--iptables=false',
    '--ip6tables=false',
    '--bridge=none',
    '--config-file',
    PROJECT_DAEMON_CONFIG,
  ];
  fs.mkdirSync(path.dirname(PROJECT_DAEMON_CONFIG), { recursive: true });
  if (!fs.existsSync(PROJECT_DAEMON_CONFIG)) fs.writeFileSync(PROJECT_DAEMON_CONFIG, '{}\n');
  fs.mkdirSync(path.dirname(DAEMON_LOG), { recursive: true });
  const out = fs.openSync(DAEMON_LOG, 'a');
  const offset = fs.fstatSync(out).size;
  fs.writeSync(out, `--- ${new Date().toISOString()} ${dockerd} ${args.join(' ')}\n`);
  log(
    `starting ${dockerd} on ${PROJECT_DOCKER_HOST} (storage driver ${driver}, data root ${DATA_ROOT}, log ${DAEMON_LOG})`,
  );
  // Its own session and no pipes back to us, so the daemon outlives setup and the terminal it ran in.
  const child = spawn(dockerd, args, {
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, PATH: systemPath() },
  });
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
  const why =
    outcome === 'timeout'
      ? `did not answer within ${START_TIMEOUT_MS / 1000} s`
      : `stopped (${outcome}) before answering`;
  throw new DaemonStartError(`dockerd ${why} on ${PROJECT_DOCKER_HOST}; see ${DAEMON_LOG}`, tail);
}

// What dockerd says when it cannot use the storage driver it was given.
const OVERLAY_REFUSED =
  /error initializing graphdriver|driver not supported|overlay2?[^\n]*not supported|backing filesystem[^\n]*not supported/i;

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
    const outcome = await waitForEngine(PROJECT_DOCKER_HOST, START_TIMEOUT_MS, () =>
      isAlive(running) ? undefined : 'it exited',
    );
    if (outcome !== 'up')
      throw new Error(
        `dockerd (pid ${running}) did not answer on ${PROJECT_DOCKER_HOST} (${outcome}); see ${DAEMON_LOG}`,
      );
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
  const version = await run('docker', ['version', '--format', '{{.Server.Version}}'], {
    env: dockerEnv(PROJECT_DOCKER_HOST),
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  log(
    `engine answers at ${PROJECT_DOCKER_HOST} (dockerd ${version.stdout.trim() || '?'}, storage driver ${driver}, ready in ${seconds} s)`,
  );
}
