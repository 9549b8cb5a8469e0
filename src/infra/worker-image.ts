// Builds the worker image offline on the local engine: the context gets this host's Node binary, dist/ and
// the production dependencies, and deploy/worker.Dockerfile builds on an image the engine already has.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { dockerEnv, sandboxImage } from '../host/docker-host';
import { ensureDockerEngine } from './dockerd';
import type { Log } from '../host/run';
import { ensureSandboxImage } from './sandbox-image';

export const WORKER_IMAGE_DEFAULT = 'managed-agents/worker:latest';
const ROOT = path.resolve(__dirname, '..', '..');

export interface WorkerImageOptions {
  image?: string;
  /** The image to build on; the sandbox image by default (built offline if missing). */
  base?: string;
  log?: Log;
  /** Labels set on the image (`docker build --label`). */
  labels?: Record<string, string>;
}

/** Top-level packages `npm ls --omit=dev` lists, i.e. what the app needs at run time. */
function productionPackages(): string[] {
  const r = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!r.stdout) throw new Error(`npm ls failed: ${r.stderr.trim().split('\n')[0]}`);
  const nm = `${path.join(ROOT, 'node_modules')}${path.sep}`;
  const tops = new Set<string>();
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith(nm)) continue;
    const parts = line.slice(nm.length).split(path.sep);
    tops.add(parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]);
  }
  return [...tops].sort();
}

function copy(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  // Hard links where the filesystem allows: node_modules is large and the context is thrown away.
  const r = spawnSync('cp', ['-al', from, to]);
  if (r.status !== 0) fs.cpSync(from, to, { recursive: true, dereference: false });
}

/** Writes the build context into `dir`: Dockerfile, node, app/{package.json, dist, node_modules}. */
export function writeWorkerContext(dir: string): void {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'client.js')))
    throw new Error('dist/ is not built; run `npm run build` first');
  fs.copyFileSync(path.join(ROOT, 'deploy', 'worker.Dockerfile'), path.join(dir, 'Dockerfile'));
  fs.copyFileSync(fs.realpathSync(process.execPath), path.join(dir, 'node'));
  fs.chmodSync(path.join(dir, 'node'), 0o755);
  const app = path.join(dir, 'app');
  fs.mkdirSync(app);
  for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(ROOT, f), path.join(app, f));
  copy(path.join(ROOT, 'dist'), path.join(app, 'dist'));
  for (const pkg of productionPackages())
    copy(path.join(ROOT, 'node_modules', pkg), path.join(app, 'node_modules', pkg));
  // The Temporal core bridge ships prebuilt binaries for five platforms and its Rust sources; keep only this one.
  const bridge = path.join(app, 'node_modules', '@temporalio', 'core-bridge');
  fs.rmSync(path.join(bridge, 'sdk-core'), { recursive: true, force: true });
  const releases = path.join(bridge, 'releases');
  const platform = `${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-unknown-linux-gnu`;
  if (fs.existsSync(releases))
    for (const r of fs.readdirSync(releases))
      if (r !== platform) fs.rmSync(path.join(releases, r), { recursive: true, force: true });
  fs.writeFileSync(path.join(dir, '.dockerignore'), '');
}

/** Builds the worker image on the engine at `dockerHost`, with no network access during the build. */
export async function buildWorkerImage(
  dockerHost: string,
  opts: WorkerImageOptions = {},
): Promise<{ image: string; seconds: number }> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const image = opts.image ?? WORKER_IMAGE_DEFAULT;
  const base = opts.base ?? (await ensureSandboxImage(dockerHost, log)).image;
  const started = Date.now();
  const context = fs.mkdtempSync(path.join(ROOT, '.data', 'worker-image-'));
  try {
    log(`assembling the build context in ${context}`);
    writeWorkerContext(context);
    log(`docker build --network none -t ${image} (base ${base})`);
    // The legacy builder uses the engine's local images as they are; it never pulls a base that exists.
    const labels = Object.entries(opts.labels ?? {}).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    const args = ['build', '--network', 'none', '--build-arg', `BASE_IMAGE=${base}`, ...labels, '-t', image, context];
    await new Promise<void>((resolve, reject) => {
      const child = spawn('docker', args, {
        env: { ...dockerEnv(dockerHost), DOCKER_BUILDKIT: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const keep = (d: Buffer) => (output = (output + d.toString()).slice(-8000));
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? resolve()
          : reject(new Error(`docker build failed (exit ${code}): ${output.trim().split('\n').slice(-5).join(' | ')}`)),
      );
    });
  } finally {
    fs.rmSync(context, { recursive: true, force: true });
  }
  return { image, seconds: Math.round((Date.now() - started) / 1000) };
}

if (require.main === module) {
  (async () => {
    const host = await ensureDockerEngine();
    const r = await buildWorkerImage(host, {
      image: process.env.WORKER_IMAGE || undefined,
      base: process.env.BASE_IMAGE || undefined,
    });
    process.stderr.write(`built ${r.image} in ${r.seconds} s (base ${process.env.BASE_IMAGE || sandboxImage()})\n`);
  })().catch((e: Error) => {
    process.stderr.write(`error: ${e.message}\n`);
    process.exit(1);
  });
}
