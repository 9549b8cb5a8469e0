// Shared pieces of the benchmark suite: settings, statistics, interleaving, the machine and the stack.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type ConnectionLike, type WorkflowHandle } from '@temporalio/client';
import { clientInterceptors } from '../src/log/query-retry';
import {
  createTestEnv,
  doorbell,
  freePort,
  removeHostSandboxes,
  startTestWorker,
  testDataConverter,
  turnDone,
  ROOT,
} from '../test/helpers/env';
import { MockModelServer } from '../src/dev/model-server';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../src/infra/temporal-cli';
import { installRuntime, type RunningWorker, type WorkerOptions, type WorkerStatus } from '../src/worker';
import { loadConfig } from '../src/config';
import type { ChildWorker } from '../test/helpers/child-worker';
import type { SessionEvent } from '../src/session/events';
import { endSignal, eventsQuery } from '../src/session/contract';

/** The pinned defaults every result records. */
export const SETTINGS = {
  /** The local model server waits this long before the first byte of every response. */
  modelFirstByteMs: 300,
  /** ... and this long after each streamed content delta (a word of text, half a tool input). */
  modelChunkDelayMs: 10,
  /** The recipe of the TTFT benchmark: a repo cloned by the hands host, then one setup command inside. */
  recipeRepoFiles: 400,
  recipeRepoFileBytes: 4096,
  recipeSetup: ['sleep 0.5 && git ls-files | wc -l > .setup-done'],
};

/**
 * The pause before each timed tool call in the sandbox benchmarks: a session's tool calls are at least a model turn
 * apart. The work a sandbox does in the background after a call (starting the next warm unit of the exec wrapper)
 * is thus not charged to the next call, in any arm; `execute_back_to_back` measures a call that comes with no pause.
 */
export const SETTLE_MS = 100;
export const settle = (): Promise<void> => new Promise((r) => setTimeout(r, SETTLE_MS));

export interface ArmStats {
  n: number;
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
}

export interface BenchResult {
  name: string;
  arms: Record<string, ArmStats>;
  notes: string;
  [extra: string]: unknown;
}

export interface Ctx {
  quick: boolean;
  stack: Stack;
  log(msg: string): void;
}

/** Linear interpolation between closest ranks (numpy's default), so p95 of 20 samples is not just the 19th. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * p;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

export function armStats(values: number[]): ArmStats {
  return {
    n: values.length,
    p50Ms: round(percentile(values, 0.5)),
    p95Ms: round(percentile(values, 0.95)),
    meanMs: round(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)),
  };
}

/** p50 and p95 of arm `a` over arm `b`. */
export function ratio(a: ArmStats, b: ArmStats): { p50: number; p95: number } {
  return { p50: round(a.p50Ms / b.p50Ms, 3), p95: round(a.p95Ms / b.p95Ms, 3) };
}

/**
 * Runs `warmup + rounds` rounds of every arm in turn, alternating which arm goes first (A B, B A, ...), so each
 * arm has the same predecessors. `sample` returns one or more samples; warm-up rounds are dropped.
 */
export async function interleave<A extends string>(
  arms: readonly A[],
  rounds: number,
  warmup: number,
  sample: (arm: A, round: number) => Promise<number | number[]>,
  log?: (msg: string) => void,
): Promise<Record<A, number[]>> {
  const out = Object.fromEntries(arms.map((a) => [a, [] as number[]])) as Record<A, number[]>;
  for (let i = 0; i < warmup + rounds; i++) {
    const order = i % 2 === 0 ? arms : [...arms].reverse();
    for (const arm of order) {
      const v = await sample(arm, i);
      const values = Array.isArray(v) ? v : [v];
      if (i >= warmup) out[arm].push(...values);
      log?.(
        `${i < warmup ? 'warm-up' : `${i - warmup + 1}/${rounds}`} ${arm}: ${values.map((x) => x.toFixed(1)).join(' ')}`,
      );
    }
  }
  return out;
}

export function commit(): string {
  try {
    const sha = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty =
      // The results a run before this one wrote (bench/results) are not a change to what is measured.
      execFileSync('git', ['-C', ROOT, 'status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results'], {
        encoding: 'utf8',
      }).trim() !== '';
    return dirty ? `${sha}-dirty` : sha;
  } catch {
    return 'unknown';
  }
}

export function machine() {
  return {
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryBytes: os.totalmem(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadavgAtStart: os.loadavg().map((l) => round(l, 2)),
  };
}

/** The Temporal server a stack runs on: the dev server, or the production cluster of test/helpers/temporal-cluster.ts. */
export interface StackServer {
  kind: 'dev' | 'cluster';
  address: string;
  client: Client;
  connection: ConnectionLike;
  teardown(): Promise<void>;
  /** The server's processes (the cluster's four services), for their CPU time; the dev server's is found by port. */
  pids?(): number[];
  /** Makes a namespace with the platform's search attributes (the dev server makes them at its start). */
  createNamespace?(name: string): Promise<void>;
}

/**
 * Requests the shared model server remembers: benchmarks that run at once read their sessions' requests while others
 * (scale's 10,000 sessions) make many more, so the server keeps every request of a run.
 */
const BENCH_MAX_RECORDED = 1_000_000;

/**
 * The Temporal server and the local model server, shared by every benchmark; workers come and go per benchmark. A
 * stack is bound to one namespace: `in()` gives a view of the same servers in another namespace (created when the
 * server starts), whose task queues (brain, hands pool, hands hosts) no worker of another one polls, so
 * benchmarks in different namespaces can run at once.
 */
export class Stack {
  readonly client: Client;
  /** The dev server's Prometheus endpoint. */
  metricsUrl?: string;
  private constructor(
    readonly env: StackServer,
    readonly mock: MockModelServer,
    readonly namespace = 'default',
    readonly hostId = `bench-${process.pid}`,
  ) {
    this.client =
      namespace === 'default'
        ? env.client
        : new Client({
            connection: env.connection,
            namespace,
            dataConverter: testDataConverter(),
            interceptors: clientInterceptors,
          });
  }

  /** `dev` or `cluster`: which server the figures are from. */
  get server(): StackServer['kind'] {
    return this.env.kind;
  }

  static async start(namespaces: string[] = []): Promise<Stack> {
    // The platform's own dev server settings (eager activity execution), and a namespace per benchmark.
    // The server's Prometheus metrics on a known port: the crash benchmark counts heartbeat calls there.
    const metricsPort = await freePort();
    const env = await createTestEnv([
      ...DEV_SERVER_DYNAMIC_CONFIG,
      '--metrics-port',
      String(metricsPort),
      ...namespaces.flatMap((n) => ['--namespace', n]),
    ]);
    const mock = new MockModelServer({ maxRecorded: BENCH_MAX_RECORDED });
    await mock.start();
    const stack = new Stack(
      {
        kind: 'dev',
        address: env.address,
        client: env.client,
        connection: env.connection,
        teardown: () => env.teardown(),
      },
      mock,
    );
    stack.metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    return stack;
  }

  /**
   * The production cluster (startTemporalCluster: the server built from the Go proxy on PostgreSQL, four service
   * processes, the compose stack's dynamic config with eager activities), with each namespace made as an operator
   * does, search attributes registered by the CLI.
   */
  static async startCluster(namespaces: string[] = [], log: (m: string) => void = () => undefined): Promise<Stack> {
    const { startTemporalCluster } = await import('../test/helpers/temporal-cluster');
    // In-process workers log as on the dev server's stack (createTestEnv): warnings, unless LOG_LEVEL asks for more.
    installRuntime(process.env.LOG_LEVEL ? loadConfig().LOG_LEVEL : 'WARN');
    const cluster = await startTemporalCluster({ log });
    try {
      for (const n of namespaces) await cluster.createNamespace(n, '72h', true);
      const mock = new MockModelServer({ maxRecorded: BENCH_MAX_RECORDED });
      await mock.start();
      return new Stack(
        {
          kind: 'cluster',
          address: cluster.address,
          client: cluster.client,
          connection: cluster.client.connection,
          teardown: () => cluster.stop(),
          pids: () => cluster.pids(),
          createNamespace: (name) => cluster.createNamespace(name, '72h', true),
        },
        mock,
      );
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** The same servers in namespace `namespace`, with sandboxes under their own hands host id. */
  in(namespace: string): Stack {
    const view = new Stack(this.env, this.mock, namespace, `bench-${process.pid}-${namespace}`);
    view.metricsUrl = this.metricsUrl;
    return view;
  }

  /** The Temporal server's processes: the dev server's one, or the cluster's four. */
  serverPids(): number[] {
    if (this.env.pids) return this.env.pids();
    const pid = this.serverPid();
    return pid === undefined ? [] : [pid];
  }

  /** The dev server's process id (found by its port), for its CPU time. */
  serverPid(): number | undefined {
    if (this.env.kind !== 'dev') return undefined;
    const port = this.env.address.split(':').pop();
    for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const i = args.indexOf('--port');
        if (args.includes('start-dev') && i >= 0 && args[i + 1] === port) return Number(pid);
      } catch {
        // the process ended while we looked
      }
    }
    return undefined;
  }

  /** An in-process worker of every role (brain, hands on this stack's host id, tools). */
  worker(
    opts: { role?: 'all' | 'brain' | 'hands'; hostId?: string; apiDb?: WorkerOptions['apiDb'] } = {},
  ): Promise<RunningWorker> {
    return startTestWorker(this.env.address, this.mock.url, {
      role: opts.role ?? 'all',
      hostId: opts.hostId ?? this.hostId,
      reapIntervalMs: 0,
      namespace: this.namespace,
      ...(opts.apiDb ? { apiDb: opts.apiDb } : {}),
    });
  }

  /** The environment of a child worker (`agents worker`) on this stack. */
  childEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      TEMPORAL_ADDRESS: this.env.address,
      TEMPORAL_NAMESPACE: this.namespace,
      ANTHROPIC_BASE_URL: this.mock.url,
      ANTHROPIC_API_KEY: 'test-key',
      ...extra,
    };
  }

  /** Scripts the pinned model latency for a session (plus any steps). */
  model(
    sessionId: string,
    steps: Parameters<MockModelServer['script']>[1]['steps'] = [],
    firstByteDelayMs = SETTINGS.modelFirstByteMs,
  ) {
    this.mock.script(sessionId, { steps, firstByteDelayMs, chunkDelayMs: SETTINGS.modelChunkDelayMs });
  }

  /** Removes this stack's sandboxes; the root stack (namespace `default`) also stops the servers. */
  async stop(): Promise<void> {
    if (this.namespace === 'default') {
      await this.mock.stop().catch(() => undefined);
      await this.env.teardown().catch(() => undefined);
    }
    await removeHostSandboxes(this.hostId).catch(() => undefined);
  }
}

/** Events of the current run by query; enough for benchmarks whose sessions stay in their first run. */
export async function liveEvents(handle: WorkflowHandle, from = 0): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  let cursor = from;
  for (;;) {
    const page = await handle.query(eventsQuery, { from: cursor, limit: 1000 });
    // After a handover the current run starts at its firstSeq; what came before is sealed in the archive.
    if (page.events.length === 0 && page.firstSeq !== undefined && page.firstSeq > cursor) {
      cursor = page.firstSeq;
      continue;
    }
    events.push(...page.events);
    cursor += page.events.length;
    // A page is cut at 1,000 events or about 1 MB; benchmark events are small, so a short page is the last.
    if (page.events.length < 1000) return events;
  }
}

/** Polls the current run's log until `pred` holds. */
export async function waitLive(
  handle: WorkflowHandle,
  pred: (events: SessionEvent[]) => boolean,
  timeoutMs = 120_000,
  pollMs = 25,
  from = 0,
): Promise<SessionEvent[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await liveEvents(handle, from).catch(() => [] as SessionEvent[]);
    const failed = events.find((e) => e.type === 'error');
    if (failed) throw new Error(`session ${handle.workflowId} logged an error: ${JSON.stringify(failed)}`);
    if (pred(events)) return events;
    if (Date.now() > deadline)
      throw new Error(
        `session ${handle.workflowId}: condition not met within ${timeoutMs} ms; log: ${events.map((e) => e.type).join(',')}`,
      );
    await sleep(pollMs);
  }
}

/**
 * As waitLive, reading the log only when its history rings (a completed workflow task): no query load on the
 * worker between events, which matters when one worker holds thousands of sessions.
 */
export async function waitRung(
  client: Client,
  handle: WorkflowHandle,
  pred: (events: SessionEvent[]) => boolean,
  timeoutMs = 120_000,
  from = 0,
): Promise<SessionEvent[]> {
  let events: SessionEvent[] = [];
  const bell = doorbell(client, handle.workflowId);
  try {
    await bell.until(async () => {
      events = await liveEvents(handle, from).catch(() => events);
      const failed = events.find((e) => e.type === 'error');
      if (failed) throw new Error(`session ${handle.workflowId} logged an error: ${JSON.stringify(failed)}`);
      return pred(events);
    }, timeoutMs);
    return events;
  } finally {
    await bell.close();
  }
}

export const turnFinished = turnDone;

/** CPU seconds (user + system) a process has used, from /proc. */
/** User plus system CPU seconds from a `/proc/.../stat` file (a process's or one of its threads'). */
function statCpuSeconds(file: string): number {
  const fields = fs.readFileSync(file, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function cpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** CPU seconds of a set of processes; a process that has ended counts nothing. */
export function totalCpuSeconds(pids: number[]): number {
  let sum = 0;
  for (const pid of pids)
    try {
      sum += cpuSeconds(pid);
    } catch {
      // gone
    }
  return sum;
}

/** A figure against its goal, as each benchmark with one reports it (collected into latest.json's `goals`). */
export interface Goal {
  /** What is compared, e.g. "per-activity overhead / no-op floor's per-activity time (p50)". */
  figure: string;
  value: number;
  /** `<=` or `>=` the target. */
  goal: { op: '<=' | '>='; target: number };
  met: boolean;
}

export function goal(figure: string, value: number, op: '<=' | '>=', target: number): Goal {
  const v = Math.round(value * 1000) / 1000;
  return { figure, value: v, goal: { op, target }, met: op === '<=' ? v <= target : v >= target };
}

/** CPU seconds of each thread of a process, by thread id. */
export function threadCpuSeconds(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), statCpuSeconds(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // the thread ended while we looked
    }
  }
  return out;
}

/** The sum of a Prometheus counter's samples whose labels contain every given `key="value"`. */
export async function metricSum(url: string, name: string, labels: string[] = []): Promise<number> {
  const text = await (await fetch(url)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

export async function endSession(handle: WorkflowHandle): Promise<void> {
  await handle.signal(endSignal, { reason: 'benchmark' }).catch(() => undefined);
  await handle.result().catch(() => undefined);
}

/** A local git repository of `files` files of `bytes` bytes each, for recipes that clone. */
export function makeRepo(files: number, bytes: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-repo-'));
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=bench', '-c', 'user.email=bench@example.com', ...args], {
      stdio: 'ignore',
    });
  git('init', '-q', '-b', 'main');
  for (let i = 0; i < files; i++) {
    const sub = path.join(dir, `src/m${i % 20}`);
    fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `f${i}.txt`), `${i} `.repeat(Math.ceil(bytes / `${i} `.length)).slice(0, bytes));
  }
  git('add', '-A');
  git('commit', '-q', '-m', 'bench fixture');
  return dir;
}

/** The child worker's own report (`kill -USR2`): RSS, main-thread heap, sessions in its workflow cache. */
export async function workerStatus(worker: ChildWorker): Promise<WorkerStatus | undefined> {
  const before = worker.stderr().length;
  worker.process.kill('SIGUSR2');
  for (let i = 0; i < 40; i++) {
    await sleep(50);
    const line = worker
      .stderr()
      .slice(before)
      .split('\n')
      .find((l) => l.includes('"worker status"'));
    if (line) return JSON.parse(line) as WorkerStatus;
  }
  return undefined;
}
