// gVisor for sandboxes: a pinned runsc built with `go install` into a cache outside the repository, checked
// to boot here, and registered as Docker runtimes with the local dockerd (merged into the daemon.json it
// reads, then SIGHUP, which makes dockerd reload its runtimes without stopping a container).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { dockerEnv, PROJECT_DOCKER_HOST } from '../host/docker-host';
import { localDaemon, PROJECT_DAEMON_CONFIG } from './dockerd';
import { goInstall } from './go-install';
import { imageId } from './sandbox-image';
import type { Log } from '../host/run';
import { onPath } from '../host/which';

/** A build of gVisor's master branch that boots on these machines (kernel 6.x, systrap, cgroup v1 and v2). */
export const RUNSC_VERSION = 'v0.0.0-20260905035102-160fafc42237';
const GO_PACKAGE = `gvisor.dev/gvisor/runsc@${RUNSC_VERSION}`;

/**
 * The runtimes registered with dockerd. Sandboxes without a network use `runsc-nonet`, where gVisor runs
 * no network stack at all; the others use `runsc`, whose network stack is gVisor's own.
 */
export const RUNSC_RUNTIMES = { runsc: [] as string[], 'runsc-nonet': ['--network=none'] } as const;
export type RunscRuntime = keyof typeof RUNSC_RUNTIMES;

/**
 * gVisor's options measured against the default (systrap, directfs on, a root overlay backed by the container's own
 * file store), each under a runtime name of its own so that measuring never changes `runsc` or `runsc-nonet`:
 * `bench/runtime.ts` registers them with the local dockerd for its run and removes them after. The KVM platform is
 * not among them: on these machines (a Firecracker VM with /dev/kvm) its sandbox never booted, spinning a core.
 */
export const RUNSC_VARIANTS = {
  'runsc-bench-nodirectfs': ['--network=none', '--directfs=false'],
  'runsc-bench-overlay-none': ['--network=none', '--overlay2=none'],
  'runsc-bench-overlay-memory': ['--network=none', '--overlay2=root:memory'],
} as const;
export type RunscVariant = keyof typeof RUNSC_VARIANTS;

/**
 * Adds (`on`) or removes the RUNSC_VARIANTS runtimes in the local dockerd's configuration and reloads it with
 * SIGHUP; the runtimes setup registers are left as they are. Returns the variant names the engine then offers.
 */
export async function configureRuntimeVariants(
  dockerHost: string,
  runscPath: string,
  on: boolean,
  log: Log,
): Promise<string[]> {
  const daemon = localDaemon(dockerHost);
  if (!daemon || process.getuid?.() !== 0) return [];
  const content = readDaemonJson(daemon.configFile);
  const runtimes = { ...(content.runtimes ?? {}) };
  let changed = false;
  for (const [name, args] of Object.entries(RUNSC_VARIANTS)) {
    if (on && !runtimes[name]) {
      runtimes[name] = { path: runscPath, runtimeArgs: [...args] };
      changed = true;
    } else if (!on && runtimes[name]) {
      delete runtimes[name];
      changed = true;
    }
  }
  if (changed) {
    writeDaemonJson(daemon.configFile, { ...content, runtimes });
    log(`reloading dockerd (pid ${daemon.pid}) with SIGHUP to ${on ? 'add' : 'remove'} the gVisor variants`);
    process.kill(daemon.pid, 'SIGHUP');
  }
  const wanted = Object.keys(RUNSC_VARIANTS);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const names = await engineRuntimes(dockerHost);
    const present = wanted.filter((n) => names.includes(n));
    if (present.length === (on ? wanted.length : 0) || Date.now() > deadline) return present;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function runscCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', `runsc-${RUNSC_VERSION}`);
}

export interface ResolvedRunsc {
  path: string;
  source: 'RUNSC' | 'cache' | 'built';
}

/** `$RUNSC`, else the cached build. Debian's own runsc (2022) is never picked: it breaks statx, so `ls -l` fails. */
export function findRunsc(): ResolvedRunsc | undefined {
  const fromEnv = process.env.RUNSC;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) throw new Error(`RUNSC names ${fromEnv}, which does not exist`);
    return { path: fromEnv, source: 'RUNSC' };
  }
  const cached = path.join(runscCacheDir(), 'runsc');
  return fs.existsSync(cached) ? { path: cached, source: 'cache' } : undefined;
}

/** The pinned runsc, built into the cache (about 1.5 minutes on 2 cores) when it is not there yet. */
export async function ensureRunsc(log: Log): Promise<ResolvedRunsc> {
  const found = findRunsc();
  if (found) return found;
  if (!onPath('go'))
    throw new Error(
      `runsc is not in ${runscCacheDir()} and Go is not installed to build it; install Go, or set RUNSC to a runsc binary`,
    );
  log(`building gVisor: go install ${GO_PACKAGE}`);
  const built = await goInstall(GO_PACKAGE, runscCacheDir(), 'runsc', 'runsc', { CGO_ENABLED: '0' }, log);
  return { path: built, source: 'built' };
}

function exec(
  cmd: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
  timeoutMs = 60_000,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: timeoutMs, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === 'number'
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
  });
}

/** The runtimes dockerd at `dockerHost` offers, by name. */
export async function engineRuntimes(dockerHost: string): Promise<string[]> {
  const r = await exec('docker', ['info', '--format', '{{json .Runtimes}}'], dockerEnv(dockerHost), 15_000);
  if (r.code !== 0) return [];
  try {
    return Object.keys(z.record(z.string(), z.unknown()).parse(JSON.parse(r.output)));
  } catch {
    return [];
  }
}

const DaemonJsonSchema = z.looseObject({
  runtimes: z
    .record(z.string(), z.looseObject({ path: z.string(), runtimeArgs: z.array(z.string()).optional() }))
    .optional(),
});
type DaemonJson = z.infer<typeof DaemonJsonSchema>;

function readDaemonJson(file: string): DaemonJson {
  if (!fs.existsSync(file)) return {};
  const text = fs.readFileSync(file, 'utf8');
  if (!text.trim()) return {};
  return DaemonJsonSchema.parse(JSON.parse(text));
}

function writeDaemonJson(file: string, content: DaemonJson): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(content, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

/** `content` with the runsc runtimes set (`runscPath`) or removed (undefined); whether anything changed. */
function withRuntimes(content: DaemonJson, runscPath: string | undefined): { next: DaemonJson; changed: boolean } {
  const runtimes = { ...(content.runtimes ?? {}) };
  let changed = false;
  for (const [name, runtimeArgs] of Object.entries(RUNSC_RUNTIMES)) {
    const want = runscPath ? { path: runscPath, runtimeArgs: [...runtimeArgs] } : undefined;
    if (JSON.stringify(runtimes[name]) === JSON.stringify(want)) continue;
    changed = true;
    if (want) runtimes[name] = want;
    else delete runtimes[name];
  }
  const next: DaemonJson = { ...content, runtimes };
  if (Object.keys(runtimes).length === 0) delete next.runtimes;
  return { next, changed };
}

async function waitForRuntimes(dockerHost: string, present: boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const names = await engineRuntimes(dockerHost);
    if (Object.keys(RUNSC_RUNTIMES).every((n) => names.includes(n) === present)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The daemon.json lines an operator adds by hand where setup may not write them. */
export function runtimeSnippet(runscPath: string): string {
  return JSON.stringify({
    runtimes: Object.fromEntries(
      Object.entries(RUNSC_RUNTIMES).map(([n, a]) => [n, { path: runscPath, runtimeArgs: a }]),
    ),
  });
}

/**
 * Sets (or, with `runscPath` undefined, removes) the runsc runtimes in the configuration of the local dockerd
 * behind `dockerHost`, and reloads it with SIGHUP. Running containers are not touched.
 */
export async function configureRuntimes(
  dockerHost: string,
  runscPath: string | undefined,
  log: Log,
): Promise<'registered' | 'unchanged' | 'removed' | 'not-local'> {
  const daemon = localDaemon(dockerHost);
  if (!daemon || process.getuid?.() !== 0) return 'not-local';
  const files = new Set([daemon.configFile]);
  // The project's daemon is started with its own file from now on; keep that one current too.
  if (dockerHost === PROJECT_DOCKER_HOST) files.add(PROJECT_DAEMON_CONFIG);
  let reload = false;
  for (const file of files) {
    const { next, changed } = withRuntimes(readDaemonJson(file), runscPath);
    if (!changed) continue;
    writeDaemonJson(file, next);
    if (file === daemon.configFile) reload = true;
  }
  const names = await engineRuntimes(dockerHost);
  const present = Object.keys(RUNSC_RUNTIMES).every((n) => names.includes(n));
  if (!reload && present === (runscPath !== undefined)) return 'unchanged';
  log(
    `reloading dockerd (pid ${daemon.pid}) with SIGHUP to ${runscPath ? 'add' : 'remove'} the runsc runtimes in ${daemon.configFile}`,
  );
  process.kill(daemon.pid, 'SIGHUP');
  if (!(await waitForRuntimes(dockerHost, runscPath !== undefined))) {
    throw new Error(
      `dockerd (pid ${daemon.pid}) did not ${runscPath ? 'list' : 'drop'} the runsc runtimes after SIGHUP; see its log`,
    );
  }
  return runscPath ? 'registered' : 'removed';
}

/** Starts the hardened recipe once under `runtime` and checks that the kernel inside is gVisor's. */
export async function probeRuntime(
  dockerHost: string,
  runtime: RunscRuntime,
  image: string,
): Promise<{ ok: boolean; detail: string }> {
  const args = [
    'run',
    '--rm',
    '--runtime',
    runtime,
    '--network',
    'none',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--read-only',
    '--user',
    '1000:1000',
    image,
    'sh',
    '-c',
    'dmesg | head -1; ls -la / > /dev/null && stat -c %U /etc/passwd',
  ];
  const r = await exec('docker', args, dockerEnv(dockerHost), 60_000);
  const ok = r.code === 0 && /gVisor/.test(r.output) && /\broot\b/.test(r.output);
  return { ok, detail: r.output.split('\n').slice(-5).join(' | ') || `exit ${r.code}` };
}

export interface SandboxRuntimeSetup {
  runtime: 'runsc' | 'runc';
  detail: string;
}

/**
 * Makes gVisor the sandboxes' runtime on the engine at `dockerHost` when it can: builds the pinned runsc,
 * registers it, and boots the sandbox image under it. Otherwise says why sandboxes will run under runc.
 */
export async function ensureSandboxRuntime(
  dockerHost: string,
  image: string,
  log: Log,
  /** The runsc build, when the caller started it earlier (setup builds it while the image is made). */
  runscBuild?: Promise<ResolvedRunsc>,
): Promise<SandboxRuntimeSetup> {
  const already = await engineRuntimes(dockerHost);
  let runsc: ResolvedRunsc;
  try {
    runsc = await (runscBuild ?? ensureRunsc(log));
  } catch (err) {
    return {
      runtime: 'runc',
      detail: `no runsc: ${(err as Error).message}; sandboxes run under runc, recorded in sandbox_provisioned.loosened`,
    };
  }
  const registration = await configureRuntimes(dockerHost, runsc.path, log);
  if (registration === 'not-local' && !Object.keys(RUNSC_RUNTIMES).every((n) => already.includes(n))) {
    return {
      runtime: 'runc',
      detail: `the engine at ${dockerHost} is not a local dockerd this process may reconfigure (it needs root); add ${runtimeSnippet(runsc.path)} to its daemon.json and send it SIGHUP (see docs/isolation.md)`,
    };
  }
  // A boot takes seconds under gVisor: one that succeeded for this engine, image and runsc binary is not repeated
  // while the registration stands unchanged.
  const st = fs.statSync(runsc.path);
  const key = `${dockerHost} ${await imageId(dockerHost, image)} ${runsc.path} ${st.size} ${st.mtimeMs}\n`;
  const stamp = path.join(runscCacheDir(), 'probed');
  if (registration === 'unchanged' && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === key)
    return {
      runtime: 'runsc',
      detail: `runsc ${RUNSC_VERSION} (${runsc.source}: ${runsc.path}) booted the sandbox image on an earlier run; unchanged`,
    };
  const probe = await probeRuntime(dockerHost, 'runsc-nonet', image);
  if (probe.ok) {
    try {
      fs.writeFileSync(stamp, key);
    } catch {
      // a cache that cannot be written only costs the next run a boot
    }
  }
  if (probe.ok)
    return {
      runtime: 'runsc',
      detail: `runsc ${RUNSC_VERSION} (${runsc.source}: ${runsc.path}) boots the sandbox image; ${registration}`,
    };
  // A runtime that does not boot would fail every sandbox: take it away again, so they run under runc.
  if (registration !== 'not-local') await configureRuntimes(dockerHost, undefined, log);
  return {
    runtime: 'runc',
    detail: `runsc did not boot the sandbox image here (${probe.detail}); sandboxes run under runc, recorded in sandbox_provisioned.loosened`,
  };
}
