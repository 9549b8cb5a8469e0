// The sandbox image on a Docker engine: reused when present, else built from sandbox/Dockerfile where a registry
// answers, or offline from an mmdebstrap rootfs imported with `docker import`.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { findDebianMirror, SUITE } from './debian-mirror';
import { dockerEnv, sandboxImage } from '../host/docker-host';
import { withLock } from '../host/lock';
import { mountsUnder } from './mounts';
import { defaultLog, logTail, mustRun, OUTPUT_KEEP, run, type Log, type RunResult } from '../host/run';
import { ensureTool, isRoot, systemPath } from './system-tools';

const REGISTRY_PROBE_URL = 'https://registry-1.docker.io/v2/';
const REGISTRY_PROBE_TIMEOUT_MS = 3_000;

const PACKAGES = ['git', 'python3', 'bash', 'ca-certificates', 'coreutils', 'procps'];
const AGENT = { name: 'agent', uid: 1000, gid: 1000, home: '/home/agent' };
const IMAGE_CHANGES = ['USER 1000', 'WORKDIR /workspace', `ENV HOME=${AGENT.home}`, 'CMD ["sleep","infinity"]'];
const IMAGE_LABELS = [
  'LABEL org.opencontainers.image.title=managed-agents-sandbox',
  'LABEL managed-agents.build=mmdebstrap',
];

/** The image's id, or undefined when the engine does not have it. */
export async function imageId(dockerHost: string, image: string): Promise<string | undefined> {
  const result = await run('docker', ['image', 'inspect', '--format', '{{.Id}}', image], {
    env: dockerEnv(dockerHost),
  });
  return result.code === 0 ? result.stdout.trim() : undefined;
}

/** Whether Docker Hub answers at all; any HTTP status counts, since /v2/ wants a token. */
function registryAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      REGISTRY_PROBE_URL,
      { agent: false, signal: AbortSignal.timeout(REGISTRY_PROBE_TIMEOUT_MS) },
      (res) => {
        res.resume();
        resolve(true);
      },
    );
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
  /** Skip the registry check and build with mmdebstrap. */
  offline?: boolean;
  /** The folder holding the Dockerfile; `sandbox/` at the repository root by default. */
  contextDir?: string;
}

/** Ensures the sandbox image exists on the engine at `dockerHost`: reuses it, or builds it from the Dockerfile or offline. */
export async function ensureSandboxImage(
  dockerHost: string,
  log: Log = defaultLog,
  opts: SandboxImageOptions = {},
): Promise<SandboxImage> {
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
        await buildFromDockerfile(
          dockerHost,
          image,
          opts.contextDir ?? path.resolve(__dirname, '..', '..', 'sandbox'),
          log,
        );
        action = 'built-dockerfile';
      } catch (err) {
        log(`the Dockerfile build failed (${(err as Error).message}); building offline instead`);
      }
    } else if (!opts.offline) {
      log(
        `no registry answered at ${REGISTRY_PROBE_URL} within ${REGISTRY_PROBE_TIMEOUT_MS / 1000} s; building offline`,
      );
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
  await mustRun(
    'docker build',
    'docker',
    ['build', '--network', 'host', '-t', image, contextDir],
    log,
    dockerEnv(dockerHost),
  );
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
  const taken = (file: string, id: number) =>
    fs
      .readFileSync(path.join(etc, file), 'utf8')
      .split('\n')
      .some((l) => l.split(':')[2] === String(id) && !l.startsWith(`${AGENT.name}:`));
  if (taken('passwd', AGENT.uid) || taken('group', AGENT.gid))
    throw new Error(`uid ${AGENT.uid} or gid ${AGENT.gid} is already taken in the bootstrapped rootfs`);
  appendLine(
    path.join(etc, 'passwd'),
    `${AGENT.name}:x:${AGENT.uid}:${AGENT.gid}:sandbox agent:${AGENT.home}:/bin/bash`,
  );
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
    for (const name of fs.readdirSync(full))
      if (!keep(name)) fs.rmSync(path.join(full, name), { recursive: true, force: true });
  };
  clear('var/cache/apt', (n) => n === 'archives');
  clear('var/cache/apt/archives', (n) => n === 'partial' || n === 'lock');
  clear('var/lib/apt/lists', (n) => n === 'partial' || n === 'lock');
}

/** Removes a build directory, unmounting first whatever a failed bootstrap left mounted inside it. */
async function removeBuildDir(dir: string, log: Log): Promise<void> {
  const mounts = mountsUnder(dir).sort((a, b) => b.length - a.length);
  for (const m of mounts) await run('umount', ['-l', m], { env: { ...process.env, PATH: systemPath() } });
  if (mountsUnder(dir).length > 0) {
    log(`left ${dir} in place: something is still mounted inside it`);
    return;
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

async function importRootfs(
  dockerHost: string,
  rootfs: string,
  image: string,
  changes: string[],
): Promise<RunResult & { tar: RunResult }> {
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

/**
 * mmdebstrap rather than debootstrap: it resolves and downloads with apt and unpacks in one pass, 25 s against
 * debootstrap's 43 s for this package set on an idle machine here (docs/operating.md). The merged-/usr hook lays
 * out /usr as bookworm does without installing the `usrmerge` package and its perl dependencies.
 */
const MMDEBSTRAP_HOOKS = '/usr/share/mmdebstrap/hooks/merged-usr';

async function buildOffline(dockerHost: string, image: string, log: Log): Promise<void> {
  if (!isRoot()) throw new Error('building the sandbox image offline runs mmdebstrap, which needs root');
  const mmdebstrap = await ensureTool('mmdebstrap', 'mmdebstrap', log);
  const mirror = findDebianMirror();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'managed-agents-sandbox-'));
  const rootfs = path.join(work, 'rootfs');
  try {
    const args = [
      '--mode=root',
      '--variant=minbase',
      `--include=${PACKAGES.join(',')}`,
      ...(fs.existsSync(MMDEBSTRAP_HOOKS) ? [`--hook-dir=${MMDEBSTRAP_HOOKS}`] : []),
      SUITE,
      rootfs,
      mirror,
    ];
    log(`mmdebstrap ${args.join(' ')}`);
    await mustRun('mmdebstrap', mmdebstrap, args, log, { ...process.env, PATH: systemPath() });
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
      throw new Error(
        `${failed === result ? 'docker import' : 'tar'} failed (exit ${failed.code}); its output ends above`,
      );
    }
  } finally {
    await removeBuildDir(work, log);
  }
}
