// `npm run setup`: idempotently ensures what the platform needs on this machine, and says what it did.
import { ensureDockerEngine } from './infra/dockerd';
import { ensureSandboxImage } from './infra/sandbox-image';
import { ensureTool } from './infra/system-tools';
import { ensureSandboxRuntime } from './infra/gvisor';
import { ensureTemporalCli } from './infra/temporal-cli';
import { progress } from './host/term';
import { ensureChromium } from './infra/chromium';
import { ensureWorkerNode } from './infra/sdk-worker-node';
import { ensurePostgres } from './infra/postgres-server';

const USAGE = 'usage: setup [--temporal-only]';

async function main(argv: string[]): Promise<number> {
  const log = (m: string) => process.stderr.write(`setup: ${m}\n`);
  const unknown = argv.filter((a) => a !== '--temporal-only');
  if (unknown.length > 0) {
    log(`unknown option ${unknown[0]}; ${USAGE}`);
    return 2;
  }
  try {
    const cli = await ensureTemporalCli(log);
    log(
      cli.source === 'built'
        ? `built the Temporal CLI at ${cli.path}`
        : `Temporal CLI found (${cli.source}): ${cli.path}`,
    );
    if (argv.includes('--temporal-only')) return 0;

    // The API's storage is tested against a real server: the project's own cluster, never the system one.
    const pg = await ensurePostgres((m) => log(`postgres: ${m}`));
    log(
      `postgres: ${{ running: 'answers', started: 'started', initialised: 'initialised and started' }[pg.action]} on ${new URL(pg.url).host} (data ${pg.dataDir})`,
    );

    const dockerHost = await ensureDockerEngine((m) => log(`docker: ${m}`));
    // A build takes a minute or more: a progress line (on a terminal) shows it is alive.
    const p = progress('sandbox image');
    let image;
    try {
      image = await ensureSandboxImage(dockerHost, (m) => p.log(`setup: sandbox image: ${m}`));
    } catch (err) {
      p.fail();
      throw err;
    }
    const id = image.id.replace(/^sha256:/, '').slice(0, 12);
    const how = {
      reused: 'reused',
      'built-dockerfile': `built from sandbox/Dockerfile in ${image.seconds} s:`,
      'built-offline': `built offline with debootstrap in ${image.seconds} s:`,
    }[image.action];
    p.done(`setup: sandbox image: ${how} ${image.image} (${id}) on ${dockerHost}`);
    const runtime = await ensureSandboxRuntime(dockerHost, image.image, (m) => log(`gvisor: ${m}`));
    log(`sandbox runtime: ${runtime.runtime}: ${runtime.detail}`);
    // Stdio MCP servers run in a bubblewrap jail on the tools worker.
    log(`stdio MCP jail: ${await ensureTool('bwrap', 'bubblewrap', (m) => log(`bubblewrap: ${m}`))}`);
    // The SDK's self-hosted runner needs Node 22+; the suites run it as the operator would.
    log(`node for the SDK's environment worker: ${ensureWorkerNode((m) => log(`worker node: ${m}`))}`);
    // Only the Web UI browser test needs it; a machine that cannot install it still runs everything else.
    try {
      log(`chromium (Web UI browser test): ${ensureChromium((m) => log(`chromium: ${m}`))}`);
    } catch (err) {
      log(`chromium: ${(err as Error).message}`);
    }
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).message}`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`setup: failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
