// `npm run setup`: idempotently ensures what the platform needs on this machine, and says what it did.
import { ensureTemporalCli } from './infra/temporal-cli';

function main(): number {
  const log = (m: string) => process.stderr.write(`setup: ${m}\n`);
  try {
    const cli = ensureTemporalCli(log);
    log(cli.source === 'built' ? `built the Temporal CLI at ${cli.path}` : `Temporal CLI found (${cli.source}): ${cli.path}`);
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).message}`);
    return 1;
  }
}

process.exitCode = main();
