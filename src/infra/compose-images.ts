// The images docker-compose.local.yml runs, built on the local engine with no registry: PostgreSQL from Debian's
// packages (deploy/postgres.Dockerfile), the production Temporal server and its Web UI server, both built from
// the Go module proxy (deploy/temporal.Dockerfile, deploy/temporal-ui.Dockerfile), and the workers' image
// (deploy/worker.Dockerfile), each on the sandbox image (a
// debootstrap rootfs brought in with `docker import`). Each image carries a hash of what it was built from and is
// reused while that hash matches.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dockerEnv } from '../host/docker-host';
import { withLock } from '../host/lock';
import { defaultLog, mustRun, run, type Log } from '../host/run';
import { onPath } from '../host/which';
import { goInstall } from './go-install';
import { SESSION_SEARCH_ATTRIBUTES } from '../session/search-attributes';
import { findDebianMirror } from './debian-mirror';
import { ensureDockerEngine } from './dockerd';
import { ensureSandboxImage } from './sandbox-image';
import { ensureTool } from './system-tools';
import { ensureTemporalCli } from './temporal-cli';
import { ensureTemporalServer, TEMPORAL_SERVER_VERSION } from './temporal-server';
import { buildWorkerImage, WORKER_IMAGE_DEFAULT } from './worker-image';

const ROOT = path.resolve(__dirname, '..', '..');
const DEPLOY = path.join(ROOT, 'deploy');
/** The label holding the hash of an image's inputs. */
export const INPUTS_LABEL = 'managed-agents.inputs';

/** The tags docker-compose.local.yml names. */
/** The Web UI server's release, the one docker-compose.yml's `temporalio/ui` image tag names. */
export const TEMPORAL_UI_VERSION = 'v2.42.1';
const UI_MODULE = 'github.com/temporalio/ui-server/v2';

export const COMPOSE_IMAGES = {
  postgres: 'managed-agents/postgres:15',
  temporal: `managed-agents/temporal:${TEMPORAL_SERVER_VERSION.replace(/^v/, '')}`,
  'temporal-ui': `managed-agents/temporal-ui:${TEMPORAL_UI_VERSION.replace(/^v/, '')}`,
  worker: WORKER_IMAGE_DEFAULT,
} as const;
export type ComposeImage = keyof typeof COMPOSE_IMAGES;

export interface BuiltImage {
  image: string;
  action: 'reused' | 'built';
  seconds: number;
}

export interface ComposeImagesOptions {
  /** Tags other than {@link COMPOSE_IMAGES}. */
  images?: Partial<Record<ComposeImage, string>>;
  /** Build even where the image's inputs have not changed. */
  rebuild?: boolean;
  log?: Log;
}

function hashOf(parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(createHash('sha256').update(p).digest());
  return h.digest('hex').slice(0, 32);
}

/** Every file under `dir`, by path and content. */
function hashTree(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) h.update(path.relative(dir, p)).update('\0').update(fs.readFileSync(p)).update('\0');
    }
  };
  walk(dir);
  return h.digest('hex');
}

async function labelOf(dockerHost: string, image: string): Promise<string | undefined> {
  const r = await run('docker', ['image', 'inspect', '--format', `{{index .Config.Labels "${INPUTS_LABEL}"}}`, image], {
    env: dockerEnv(dockerHost),
  });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/** Reuses `image` when its inputs label is `inputs`, else builds it (one process at a time per image). */
async function buildOnce(
  dockerHost: string,
  image: string,
  inputs: string,
  opts: ComposeImagesOptions,
  build: () => Promise<void>,
): Promise<BuiltImage> {
  const log = opts.log ?? defaultLog;
  if (!opts.rebuild && (await labelOf(dockerHost, image)) === inputs) return { image, action: 'reused', seconds: 0 };
  return withLock(`compose-image-${image.replace(/[^\w.-]+/g, '_')}`, log, async () => {
    if (!opts.rebuild && (await labelOf(dockerHost, image)) === inputs) return { image, action: 'reused', seconds: 0 };
    const started = Date.now();
    await build();
    return { image, action: 'built', seconds: Math.round((Date.now() - started) / 1000) };
  });
}

/** `docker build` of a context directory with the legacy builder, which uses the engine's local base as it is. */
async function dockerBuild(
  dockerHost: string,
  context: string,
  image: string,
  args: { network: 'none' | 'host'; buildArgs: Record<string, string>; inputs: string },
  log: Log,
): Promise<void> {
  const buildArgs = Object.entries(args.buildArgs).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
  const cli = ['build', '--network', args.network, ...buildArgs, '--label', `${INPUTS_LABEL}=${args.inputs}`];
  log(`docker build --network ${args.network} -t ${image}`);
  await mustRun(`docker build of ${image}`, 'docker', [...cli, '-t', image, context], log, {
    ...dockerEnv(dockerHost),
    DOCKER_BUILDKIT: '0',
  });
}

function scratchContext(name: string): string {
  fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
  return fs.mkdtempSync(path.join(ROOT, '.data', `${name}-image-`));
}

/**
 * PostgreSQL 15 from Debian bookworm's packages, installed from the Debian mirror this machine's apt uses (the
 * build's only network access, on the host's network since the project's engine has no bridge).
 */
export async function buildPostgresImage(
  dockerHost: string,
  base: { image: string; id: string },
  opts: ComposeImagesOptions = {},
): Promise<BuiltImage> {
  const log = opts.log ?? defaultLog;
  const image = opts.images?.postgres ?? COMPOSE_IMAGES.postgres;
  const mirror = findDebianMirror();
  const files = ['postgres.Dockerfile', 'postgres-entrypoint.sh'].map((f) => path.join(DEPLOY, f));
  const inputs = hashOf([base.id, mirror, ...files.map((f) => fs.readFileSync(f))]);
  return buildOnce(dockerHost, image, inputs, opts, async () => {
    const context = scratchContext('postgres');
    try {
      fs.copyFileSync(files[0], path.join(context, 'Dockerfile'));
      fs.copyFileSync(files[1], path.join(context, 'postgres-entrypoint.sh'));
      fs.chmodSync(path.join(context, 'postgres-entrypoint.sh'), 0o755);
      await dockerBuild(
        dockerHost,
        context,
        image,
        { network: 'host', buildArgs: { BASE_IMAGE: base.image, DEBIAN_MIRROR: mirror }, inputs },
        log,
      );
    } finally {
      fs.rmSync(context, { recursive: true, force: true });
    }
  });
}

/**
 * The production Temporal server ({@link TEMPORAL_SERVER_VERSION}, from the Go module proxy, cached outside the
 * repository), its SQL tool, the release's PostgreSQL schema and the Temporal CLI (the pinned wheel's),
 * with an entrypoint that sets up the schema, runs the server and registers the session search attributes. The
 * build itself has no network.
 */
export async function buildTemporalImage(
  dockerHost: string,
  base: { image: string; id: string },
  opts: ComposeImagesOptions = {},
): Promise<BuiltImage> {
  const log = opts.log ?? defaultLog;
  const image = opts.images?.temporal ?? COMPOSE_IMAGES.temporal;
  const [server, cli] = await Promise.all([ensureTemporalServer(log), ensureTemporalCli(log)]);
  const searchAttributes = SESSION_SEARCH_ATTRIBUTES.map((k) => k.name).join(',');
  const files = ['temporal.Dockerfile', 'temporal-entrypoint.sh'].map((f) => path.join(DEPLOY, f));
  const inputs = hashOf([
    base.id,
    ...[server.server, server.sqlTool, cli.path].map((f) => fs.readFileSync(f)),
    hashTree(server.schemaDir),
    searchAttributes,
    ...files.map((f) => fs.readFileSync(f)),
  ]);
  return buildOnce(dockerHost, image, inputs, opts, async () => {
    const context = scratchContext('temporal');
    try {
      fs.copyFileSync(files[0], path.join(context, 'Dockerfile'));
      fs.copyFileSync(files[1], path.join(context, 'temporal-entrypoint.sh'));
      fs.chmodSync(path.join(context, 'temporal-entrypoint.sh'), 0o755);
      for (const [from, to] of [
        [server.server, 'temporal-server'],
        [server.sqlTool, 'temporal-sql-tool'],
        [cli.path, 'temporal'],
      ]) {
        fs.copyFileSync(from, path.join(context, to));
        fs.chmodSync(path.join(context, to), 0o755);
      }
      fs.cpSync(server.schemaDir, path.join(context, 'schema', 'postgresql', 'v12'), { recursive: true });
      await dockerBuild(
        dockerHost,
        context,
        image,
        { network: 'none', buildArgs: { BASE_IMAGE: base.image, SEARCH_ATTRIBUTES: searchAttributes }, inputs },
        log,
      );
    } finally {
      fs.rmSync(context, { recursive: true, force: true });
    }
  });
}

function uiServerCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', `temporal-ui-server-${TEMPORAL_UI_VERSION}`);
}

/**
 * The UI server (`ui-server`, its assets embedded) and its config/docker.yaml, built once with `go install` of
 * {@link UI_MODULE}/cmd/server at {@link TEMPORAL_UI_VERSION} into a cache outside the repository.
 */
export async function ensureTemporalUiServer(log: Log = defaultLog): Promise<{ server: string; configDir: string }> {
  const dir = uiServerCacheDir();
  const found = { server: path.join(dir, 'ui-server'), configDir: path.join(dir, 'config') };
  const complete = () => fs.existsSync(found.server) && fs.existsSync(path.join(found.configDir, 'docker.yaml'));
  if (complete()) return found;
  if (!onPath('go')) throw new Error(`the UI server is not in ${dir} and Go is not installed to build it`);
  return withLock(`temporal-ui-server-${TEMPORAL_UI_VERSION}`, log, async () => {
    if (complete()) return found;
    const scratch = `${dir}.building-${process.pid}`;
    fs.rmSync(scratch, { recursive: true, force: true });
    log(`building the Temporal UI server ${TEMPORAL_UI_VERSION}: go install ${UI_MODULE}/cmd/server`);
    const env = { GOFLAGS: '-trimpath -ldflags=-s', GOTOOLCHAIN: 'local' };
    const built = await goInstall(
      `${UI_MODULE}/cmd/server@${TEMPORAL_UI_VERSION}`,
      scratch,
      'server',
      'the UI server',
      env,
      log,
    );
    fs.renameSync(built, path.join(scratch, 'ui-server'));
    const modCache = (await mustRun('go env GOMODCACHE', 'go', ['env', 'GOMODCACHE'], log)).stdout.trim();
    const config = path.join(modCache, `${UI_MODULE}@${TEMPORAL_UI_VERSION}`, 'config', 'docker.yaml');
    fs.mkdirSync(path.join(scratch, 'config'));
    fs.copyFileSync(config, path.join(scratch, 'config', 'docker.yaml'));
    fs.chmodSync(path.join(scratch, 'config', 'docker.yaml'), 0o644);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(scratch, dir);
    return found;
  });
}

/** Temporal's Web UI server {@link TEMPORAL_UI_VERSION}; the build itself has no network. */
export async function buildTemporalUiImage(
  dockerHost: string,
  base: { image: string; id: string },
  opts: ComposeImagesOptions = {},
): Promise<BuiltImage> {
  const log = opts.log ?? defaultLog;
  const image = opts.images?.['temporal-ui'] ?? COMPOSE_IMAGES['temporal-ui'];
  const ui = await ensureTemporalUiServer(log);
  const dockerfile = path.join(DEPLOY, 'temporal-ui.Dockerfile');
  const inputs = hashOf([
    base.id,
    fs.readFileSync(ui.server),
    fs.readFileSync(path.join(ui.configDir, 'docker.yaml')),
    fs.readFileSync(dockerfile),
  ]);
  return buildOnce(dockerHost, image, inputs, opts, async () => {
    const context = scratchContext('temporal-ui');
    try {
      fs.copyFileSync(dockerfile, path.join(context, 'Dockerfile'));
      fs.copyFileSync(ui.server, path.join(context, 'ui-server'));
      fs.chmodSync(path.join(context, 'ui-server'), 0o755);
      fs.cpSync(ui.configDir, path.join(context, 'config'), { recursive: true });
      await dockerBuild(
        dockerHost,
        context,
        image,
        { network: 'none', buildArgs: { BASE_IMAGE: base.image }, inputs },
        log,
      );
    } finally {
      fs.rmSync(context, { recursive: true, force: true });
    }
  });
}

/** The workers' image (src/infra/worker-image.ts), rebuilt when dist/, the lockfile, Node or its Dockerfile change. */
export async function buildComposeWorkerImage(
  dockerHost: string,
  base: { image: string; id: string },
  opts: ComposeImagesOptions = {},
): Promise<BuiltImage> {
  const log = opts.log ?? defaultLog;
  const image = opts.images?.worker ?? COMPOSE_IMAGES.worker;
  if (!fs.existsSync(path.join(ROOT, 'dist', 'client.js'))) throw new Error('dist/ is not built; run `npm run build`');
  const inputs = hashOf([
    base.id,
    process.version,
    hashTree(path.join(ROOT, 'dist')),
    fs.readFileSync(path.join(ROOT, 'package-lock.json')),
    fs.readFileSync(path.join(DEPLOY, 'worker.Dockerfile')),
  ]);
  return buildOnce(dockerHost, image, inputs, opts, async () => {
    fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
    await buildWorkerImage(dockerHost, { image, base: base.image, log, labels: { [INPUTS_LABEL]: inputs } });
  });
}

/** Builds (or reuses) every image docker-compose.local.yml runs, side by side on one sandbox base. */
export async function buildComposeImages(
  dockerHost: string,
  opts: ComposeImagesOptions = {},
): Promise<Record<ComposeImage, BuiltImage>> {
  const log = opts.log ?? defaultLog;
  const sandbox = await ensureSandboxImage(dockerHost, log);
  const base = { image: sandbox.image, id: sandbox.id };
  const [postgres, temporal, ui, worker] = await Promise.all([
    buildPostgresImage(dockerHost, base, opts),
    buildTemporalImage(dockerHost, base, opts),
    buildTemporalUiImage(dockerHost, base, opts),
    buildComposeWorkerImage(dockerHost, base, opts),
  ]);
  return { postgres, temporal, 'temporal-ui': ui, worker };
}

if (require.main === module) {
  (async () => {
    const rebuild = process.argv.includes('--rebuild');
    const host = await ensureDockerEngine();
    await ensureTool('docker-compose', 'docker-compose', defaultLog);
    const built = await buildComposeImages(host, { rebuild });
    for (const b of Object.values(built))
      process.stderr.write(`${b.image}: ${b.action === 'reused' ? 'reused' : `built in ${b.seconds} s`}\n`);
    process.stderr.write(
      `DOCKER_HOST=${host} docker-compose -p managed-agents -f docker-compose.yml -f docker-compose.local.yml up -d\n`,
    );
  })().catch((e: Error) => {
    process.stderr.write(`error: ${e.message}\n`);
    process.exit(1);
  });
}
