// The benchmark suite: `npm run bench` (full) or `npm run bench -- --quick`; `--only a,b` runs some of them.
// Writes bench/results/latest.json, latest.md and one PNG chart per benchmark.
import '../test/helpers/test-keys';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { armsChart, lineChart } from './charts';
import { SETTINGS, Stack, commit, machine, type BenchResult, type Ctx, type Goal } from './lib';
import { runTtft } from './ttft';

type Runner = (ctx: Ctx) => Promise<BenchResult[]>;

const lazyImport =
  <K extends string>(file: string, fn: K): Runner =>
  async (ctx) =>
    ((await import(file)) as Record<K, Runner>)[fn](ctx);

/** `alone`: it times a few milliseconds of overhead and never overlaps another benchmark. */
const BENCHMARKS: { key: string; run: Runner; alone?: boolean }[] = [
  { key: 'ttft', run: runTtft },
  { key: 'turn_overhead', run: lazyImport('./turn-overhead', 'runTurnOverhead'), alone: true },
  { key: 'floor_overhead', run: lazyImport('./floor', 'runFloorOverhead'), alone: true },
  { key: 'floor_throughput', run: lazyImport('./floor', 'runFloorThroughput'), alone: true },
  { key: 'execute', run: lazyImport('./execute', 'runExecute'), alone: true },
  { key: 'runtime', run: lazyImport('./runtime', 'runRuntime'), alone: true },
  { key: 'archive', run: lazyImport('./archive', 'runArchive'), alone: true },
  { key: 'api_stream', run: lazyImport('./api-stream', 'runApiStream'), alone: true },
  { key: 'workflow_cpu', run: lazyImport('./workflow-cpu', 'runWorkflowCpu'), alone: true },
  { key: 'crash', run: lazyImport('./crash', 'runCrash') },
  { key: 'scale', run: lazyImport('./scale', 'runScale') },
  { key: 'history', run: lazyImport('./history', 'runHistory') },
  { key: 'console', run: lazyImport('./console', 'runConsole'), alone: true },
  { key: 'session_files', run: lazyImport('./session-files', 'runSessionFiles'), alone: true },
  { key: 'self_hosted', run: lazyImport('./self-hosted', 'runSelfHosted'), alone: true },
];

/** The order benchmarks run in: those that run alone, then the others, the longest first. */
const ORDER = [
  'turn_overhead',
  'floor_overhead',
  'floor_throughput',
  'workflow_cpu',
  'execute',
  'runtime',
  'archive',
  'console',
  'session_files',
  'self_hosted',
  'api_stream',
  'ttft',
  'crash',
  'scale',
  'history',
];
/** How many benchmarks run at once by default: a quick run overlaps three, a full run none. */
const QUICK_PARALLEL = 3;

function parseArgs(argv: string[]) {
  const quick = argv.includes('--quick');
  // Keep the other benchmarks of the existing latest.json and replace only those run now.
  const merge = argv.includes('--merge');
  // How many benchmarks run at once, each in its own namespace: `--parallel N`; quick 3, full 1.
  const parallelArg = argv.find((a) => a.startsWith('--parallel'));
  const parallelIdx = argv.indexOf('--parallel');
  const parallelRaw = parallelArg?.includes('=')
    ? parallelArg.split('=')[1]
    : parallelIdx >= 0
      ? argv[parallelIdx + 1]
      : undefined;
  const parallel = parallelRaw === undefined ? (quick ? QUICK_PARALLEL : 1) : Number(parallelRaw);
  if (!Number.isInteger(parallel) || parallel < 1 || parallel > BENCHMARKS.length)
    throw new Error(`--parallel takes 1 to ${BENCHMARKS.length}, not ${parallelRaw}`);
  const onlyArg = argv.find((a) => a.startsWith('--only'));
  const onlyIdx = argv.indexOf('--only');
  const only = onlyArg?.includes('=') ? onlyArg.split('=')[1] : onlyIdx >= 0 ? argv[onlyIdx + 1] : undefined;
  const keys = only ? only.split(',') : BENCHMARKS.map((b) => b.key);
  for (const k of keys)
    if (!BENCHMARKS.some((b) => b.key === k))
      throw new Error(`unknown benchmark ${k}; one of ${BENCHMARKS.map((b) => b.key).join(', ')}`);
  // `--server cluster`: on the production cluster (test/helpers/temporal-cluster.ts) instead of the dev server; each
  // result's name gets `_cluster`, so a merge keeps both servers' figures.
  const serverIdx = argv.indexOf('--server');
  const serverArg =
    argv.find((a) => a.startsWith('--server='))?.split('=')[1] ?? (serverIdx >= 0 ? argv[serverIdx + 1] : 'dev');
  if (serverArg !== 'dev' && serverArg !== 'cluster')
    throw new Error(`--server takes dev or cluster, not ${serverArg}`);
  // `--out DIR`: write the results there instead of bench/results. `--merge-from FILE`: run nothing, and merge the
  // benchmarks of another run's latest.json into this one's (runs on the two servers at once, each in its own DIR).
  const outIdx = argv.indexOf('--out');
  const out = outIdx >= 0 ? path.resolve(argv[outIdx + 1]) : path.join(__dirname, 'results');
  const fromIdx = argv.indexOf('--merge-from');
  const mergeFrom = fromIdx >= 0 ? path.resolve(argv[fromIdx + 1]) : undefined;
  return {
    quick,
    keys: mergeFrom ? [] : keys,
    merge: merge || mergeFrom !== undefined,
    parallel,
    server: serverArg as 'dev' | 'cluster',
    out,
    mergeFrom,
  };
}

const fmt = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(1));

/** Every benchmark's figures against their goals, with the server each ran on. */
export function goalsOf(benchmarks: BenchResult[]): (Goal & { benchmark: string; server: string })[] {
  return benchmarks.flatMap((b) =>
    ((b.goals ?? []) as Goal[]).map((g) => ({
      benchmark: b.name,
      server: (b.server as string | undefined) ?? 'dev',
      ...g,
    })),
  );
}

export function markdown(out: {
  commit: string;
  machine: ReturnType<typeof machine> & { loadavgAtEnd?: number[] };
  mode: string;
  parallel?: number;
  date: string;
  durationS: number;
  settings: typeof SETTINGS;
  benchmarks: BenchResult[];
}): string {
  const m = out.machine;
  const lines = [
    `# Benchmark results (${out.mode})`,
    '',
    `${out.date}, commit \`${out.commit}\`, ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}, load average (1, 5, 15 min) at start ${m.loadavgAtStart.join(' ')}${m.loadavgAtEnd ? `, at end ${m.loadavgAtEnd.join(' ')}` : ''}; the run took ${out.durationS} s, ${(out.parallel ?? 1) > 1 ? `${out.parallel} benchmarks at a time, each in its own namespace` : 'one benchmark at a time'}.`,
    `Each benchmark's own time: ${out.benchmarks.map((b) => `${b.name} ${b.durationS ?? '?'} s`).join(', ')}.`,
    `Settings: model first byte ${out.settings.modelFirstByteMs} ms, ${out.settings.modelChunkDelayMs} ms per streamed chunk; TTFT recipe clones ${out.settings.recipeRepoFiles} files of ${out.settings.recipeRepoFileBytes} B and runs \`${out.settings.recipeSetup.join('; ')}\`.`,
    '',
    '| benchmark | arm | n | p50 ms | p95 ms | ratio | p50 ratio | p95 ratio |',
    '|---|---|---:|---:|---:|---|---:|---:|',
  ];
  for (const b of out.benchmarks) {
    const ratioTo = (b.ratioTo ?? {}) as Record<string, string>;
    for (const [i, [arm, s]] of Object.entries(b.arms).entries()) {
      const base = ratioTo[arm] ? b.arms[ratioTo[arm]] : undefined;
      const r = base
        ? [`${arm} / ${ratioTo[arm]}`, (s.p50Ms / base.p50Ms).toFixed(3), (s.p95Ms / base.p95Ms).toFixed(3)]
        : ['', '', ''];
      lines.push(
        `| ${i === 0 ? b.name : ''} | ${arm} | ${s.n} | ${fmt(s.p50Ms)} | ${fmt(s.p95Ms)} | ${r.join(' | ')} |`,
      );
    }
  }
  const goals = goalsOf(out.benchmarks);
  if (goals.length > 0) {
    lines.push('', '| benchmark | server | figure | value | goal | met |', '|---|---|---|---:|---|---|');
    for (const g of goals)
      lines.push(
        `| ${g.benchmark} | ${g.server} | ${g.figure} | ${g.value} | ${g.goal.op} ${g.goal.target} | ${g.met ? 'met' : 'not met'} |`,
      );
  }
  lines.push('');
  for (const b of out.benchmarks) lines.push(`- **${b.name}**: ${b.notes}`);
  lines.push('');
  return lines.join('\n');
}

async function main() {
  const { quick, keys, merge, parallel, server, out: dir, mergeFrom } = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const log = (msg: string) =>
    process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${msg}\n`);
  const info = machine();
  log(
    `bench: ${quick ? 'quick' : 'full'} run of ${keys.join(', ')} on ${info.cores} cores, ${parallel} at a time, on the ${server} server`,
  );
  // Each benchmark in its own namespace, with its own hands host id: none sees another's workers or sandboxes.
  const namespaceOf = (key: string) => `bench-${key.replace(/_/g, '-')}`;
  const chosen = ORDER.filter((k) => keys.includes(k)).map((k) => BENCHMARKS.find((b) => b.key === k)!);
  const stack = !chosen.length
    ? undefined
    : server === 'cluster'
      ? await Stack.startCluster(
          chosen.map((b) => namespaceOf(b.key)),
          (m) => log(`cluster: ${m}`),
        )
      : await Stack.start(chosen.map((b) => namespaceOf(b.key)));
  const results: BenchResult[] = [];
  let failed = false;
  let stopping = false;
  const stacks: Stack[] = [];
  // SIGTERM, or a second SIGINT: stop at once. The stack's servers are stopped (within 30 s) and the process exits,
  // which ends the worker processes the benchmarks started (test/helpers/child-worker.ts kills them on exit; a floor
  // worker ends when its stdin closes). Without this, a benchmark killed mid-run left its dev server and workers
  // running, and they loaded the machine under the next run.
  const abort = (signal: string) => {
    log(`${signal}: stopping the stack and exiting`);
    const stopped = Promise.allSettled([...stacks, ...(stack ? [stack] : [])].map((s) => s.stop()));
    void Promise.race([stopped, new Promise((r) => setTimeout(r, 30_000).unref())]).finally(() => process.exit(130));
  };
  process.once('SIGINT', () => {
    stopping = true;
    log('interrupted: stopping after the running benchmarks (interrupt again to stop now)');
    process.once('SIGINT', () => abort('SIGINT'));
  });
  process.once('SIGTERM', () => abort('SIGTERM'));
  const alone = chosen.filter((b) => b.alone);
  const queue = chosen.filter((b) => !b.alone);
  const lanes = Math.min(parallel, queue.length);
  const runOne = async (b: (typeof BENCHMARKS)[number], tag: string) => {
    const s = stack!.in(namespaceOf(b.key));
    stacks.push(s);
    const t = Date.now();
    const loadStart = os.loadavg().map((l) => Math.round(l * 100) / 100);
    log(`== ${b.key}`);
    try {
      const r = await b.run({ quick, stack: s, log: (m) => log(`${tag}${m}`) });
      const durationS = Math.round((Date.now() - t) / 100) / 10;
      results.push(
        ...r.map((x) => ({
          ...x,
          ...(server === 'cluster' ? { name: `${x.name}_cluster`, server } : { server: x.server ?? server }),
          durationS,
          mode: quick ? 'quick' : 'full',
          loadavg: { start: loadStart, end: os.loadavg().map((l) => Math.round(l * 100) / 100) },
        })),
      );
      log(`== ${b.key} done in ${durationS} s`);
    } catch (err) {
      failed = true;
      log(`== ${b.key} FAILED: ${(err as Error).stack ?? String(err)}`);
    }
  };
  const lane = async () => {
    for (let b = queue.shift(); b && !stopping; b = queue.shift()) await runOne(b, lanes > 1 ? `[${b.key}] ` : '');
  };
  try {
    for (const b of alone) if (!stopping) await runOne(b, '');
    await Promise.all(Array.from({ length: lanes }, lane));
  } finally {
    for (const s of stacks) await s.stop();
    await stack?.stop();
  }
  if (mergeFrom) {
    const other = JSON.parse(fs.readFileSync(mergeFrom, 'utf8')) as { benchmarks: BenchResult[] };
    results.push(...other.benchmarks);
  }
  // Results in the suite's order, whichever lane finished first.
  const order = (name: string) =>
    [
      'ttft_lazy_vs_eager',
      'turn_overhead',
      'floor_overhead',
      'floor_throughput',
      'workflow_task_cpu',
      'execute_roundtrip',
      'sandbox_runtime',
      'archive',
      'api_first_message',
      'api_stream_delivery',
      'api_stream_handover',
      'crash_recovery',
      'scale',
      'history_growth',
      'console',
    ].indexOf(name);
  results.sort((x, y) => order(x.name.replace(/_cluster$/, '')) - order(y.name.replace(/_cluster$/, '')));
  fs.mkdirSync(dir, { recursive: true });
  const previous =
    merge && fs.existsSync(path.join(dir, 'latest.json'))
      ? (JSON.parse(fs.readFileSync(path.join(dir, 'latest.json'), 'utf8')) as {
          mode: string;
          durationS: number;
          benchmarks: BenchResult[];
        })
      : undefined;
  if (previous) {
    const kept = previous.benchmarks.filter((b) => !results.some((r) => r.name === b.name));
    results.unshift(...kept);
  }
  const out = {
    commit: commit(),
    machine: { ...info, loadavgAtEnd: os.loadavg().map((l) => Math.round(l * 100) / 100) },
    // A merge of runs of both modes is `mixed`; each result says its own.
    mode: previous && previous.mode !== (quick ? 'quick' : 'full') ? 'mixed' : quick ? 'quick' : 'full',
    parallel,
    date: new Date(started).toISOString(),
    durationS: Math.round((Date.now() - started) / 1000) + (previous?.durationS ?? 0),
    settings: SETTINGS,
    benchmarks: results,
    goals: goalsOf(results),
  };
  fs.writeFileSync(path.join(dir, 'latest.json'), `${JSON.stringify(out, null, 2)}\n`);
  fs.writeFileSync(path.join(dir, 'latest.md'), markdown(out));
  for (const b of results) {
    await armsChart(b, path.join(dir, `${b.name}.png`)).catch((err) =>
      log(`chart ${b.name} failed: ${(err as Error).message}`),
    );
    const series = b.series as { x: number; y: number; series: string }[] | undefined;
    const chart = b.chart as { title: string; subtitle?: string; x: string; y: string } | undefined;
    if (series && chart)
      await lineChart(series, path.join(dir, `${b.name}_series.png`), chart).catch((err) =>
        log(`chart ${b.name} series failed: ${(err as Error).message}`),
      );
  }
  process.stdout.write(markdown(out));
  log(`bench: wrote ${path.relative(process.cwd(), dir)}/latest.json, latest.md and charts in ${out.durationS} s`);
  // Lingering client retries (queries to ended sessions, a dead worker's sticky queue) must not hold the run open.
  process.exit(failed ? 1 : 0);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
