// `npm run soak`: many sessions at once against the real stack, with racing input, handovers, brain kills and
// server restarts; prints what it did and found, and exits non-zero on any violation.
// Usage: tsx test/soak/run.ts [--sessions N] [--minutes M | --messages K] [--seed S] [--rate R] [--brains B]
//   [--kill-every SECONDS] [--kill-on-handover 0|1] [--restarts N] [--retry-share F] [--bash-share F] [--action-share F]
//   [--history-events N] [--readers N] [--settle SECONDS] [--failures DIR] [--report docs/soak.md] [--json FILE]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULTS, formatSoak, runSoak, type SoakOptions } from './soak';

const FLAGS: Record<string, keyof SoakOptions> = {
  '--sessions': 'sessions',
  '--minutes': 'minutes',
  '--messages': 'messages',
  '--seed': 'seed',
  '--rate': 'rate',
  '--brains': 'brains',
  '--kill-every': 'killEverySeconds',
  '--kill-on-handover': 'killOnHandover',
  '--restarts': 'restarts',
  '--retry-share': 'retryShare',
  '--bash-share': 'bashShare',
  '--action-share': 'actionShare',
  '--history-events': 'historyEvents',
  '--readers': 'readers',
  '--settle': 'settleSeconds',
};

function parse(argv: string[]): { opts: Partial<SoakOptions>; report?: string; json?: string } {
  const opts: Partial<SoakOptions> = { failuresDir: path.join(__dirname, 'failures') };
  let report: string | undefined;
  let json: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--report') report = value;
    else if (flag === '--json') json = value;
    else if (flag === '--failures') opts.failuresDir = value;
    else if (FLAGS[flag]) {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0)
        throw new Error(`${flag} takes a non-negative number, not ${JSON.stringify(value)}`);
      (opts as Record<string, number | boolean>)[FLAGS[flag]] = FLAGS[flag] === 'killOnHandover' ? n > 0 : n;
    } else
      throw new Error(
        `unknown option ${flag}; options: ${[...Object.keys(FLAGS), '--failures', '--report', '--json'].join(' ')}`,
      );
  }
  if ((opts.brains ?? DEFAULTS.brains) < 1) throw new Error('--brains must be at least 1');
  return { opts, report, json };
}

async function main() {
  const { opts, report, json } = parse(process.argv.slice(2));
  // Ctrl-C or a kill stops the run, and the stack (dev server, workers, sandboxes) is torn down before exit.
  const stop = new AbortController();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => stop.abort());
  const result = await runSoak({ ...opts, signal: stop.signal });
  let commit = '';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  const text = formatSoak(result, commit);
  process.stdout.write(text);
  if (report) {
    fs.mkdirSync(path.dirname(report), { recursive: true });
    fs.writeFileSync(report, text);
    process.stderr.write(`wrote ${report}\n`);
  }
  if (json) fs.writeFileSync(json, `${JSON.stringify(result, null, 1)}\n`);
  process.exitCode = result.violations.length ? 1 : uncaught ? 2 : 0;
}

// A client call still retrying when the stack has gone fails on its own timer: say so, and finish the report.
let uncaught = 0;
process.on('uncaughtException', (err) => {
  uncaught++;
  process.stderr.write(`soak: uncaught: ${err.stack ?? err.message}\n`);
});

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(2);
});
