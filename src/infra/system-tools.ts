// System tools for setup: the sbin directories a non-login shell misses, root, and installing Debian packages with apt-get.
import path from 'node:path';
import { mustRun, run, type Log } from '../host/run';
import { onPath } from '../host/which';

// Non-login root shells (npm scripts, CI) often lack the sbin directories where dockerd and mmdebstrap live.
export const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export function systemPath(): string {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  return [...dirs, ...SYSTEM_DIRS.filter((d) => !dirs.includes(d))].join(path.delimiter);
}

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

// One apt-get at a time in this process (steps run side by side); other processes are waited for on dpkg's lock.
let aptQueue: Promise<unknown> = Promise.resolve();

export function aptInstall(packages: string[], log: Log): Promise<void> {
  const next = aptQueue.then(() => aptInstallNow(packages, log));
  aptQueue = next.catch(() => undefined);
  return next;
}

/** The packages among `packages` whose binaries are missing: `[binary, package]` pairs in, package names out. */
export function missingPackages(wanted: [binary: string, pkg: string][]): string[] {
  return [...new Set(wanted.filter(([binary]) => !onPath(binary, SYSTEM_DIRS)).map(([, pkg]) => pkg))];
}

async function aptInstallNow(packages: string[], log: Log): Promise<void> {
  if (!onPath('apt-get', SYSTEM_DIRS))
    throw new Error(`${packages.join(' ')} is not installed, and there is no apt-get to install it with`);
  if (!isRoot()) throw new Error(`${packages.join(' ')} is not installed, and installing it with apt-get needs root`);
  const env = { ...process.env, PATH: systemPath(), DEBIAN_FRONTEND: 'noninteractive' };
  const args = ['install', '-y', '--no-install-recommends', ...packages];
  log(`installing ${packages.join(' ')}: apt-get ${args.join(' ')}`);
  // Another process's apt-get (a test installing Chromium, say) holds dpkg's lock: wait for it rather than fail.
  const wait = ['-o', 'DPkg::Lock::Timeout=600'];
  const first = await run('apt-get', [...wait, ...args], { env });
  if (first.code === 0) return;
  // Package lists on a fresh machine are often missing or stale; refresh only when the install needs it.
  log('apt-get install failed; running apt-get update and trying again');
  await mustRun('apt-get update', 'apt-get', [...wait, 'update'], log, env);
  await mustRun(`apt-get install ${packages.join(' ')}`, 'apt-get', [...wait, ...args], log, env);
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
