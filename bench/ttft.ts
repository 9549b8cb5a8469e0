// Time to first token of a new session, lazy versus eager sandbox provisioning, on the real stack.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startHarness, startSession, uniqueId, type Harness } from '../test/helpers/env';
import { docker } from '../test/helpers/hands';
import { LABEL } from '../src/sandbox/docker';
import type { SessionEvent } from '../src/session/events';
import { endSignal, eventsQuery } from '../src/workflows/messages';

type Arm = 'lazy' | 'eager';
const ARMS: Arm[] = ['lazy', 'eager'];

const N = positiveInt('BENCH_N', 20);
const WARMUP = positiveInt('BENCH_WARMUP', 2, true);
const POLL_MS = 20;
// The local model server answers at once; a real model's first byte can be added to see how the gap shrinks.
const FIRST_BYTE_MS = positiveInt('BENCH_FIRST_BYTE_MS', 0, true);
const HOST = `bench-${process.pid}`;

interface Sample {
  arm: Arm;
  sessionId: string;
  /** From `workflow.start` to the model server receiving the session's first /v1/messages request. */
  firstRequestMs: number;
  /** From `workflow.start` to the first `assistant_message` seen by polling the `events` query. */
  firstAssistantMs: number;
  /** The same, by the event's own workflow timestamp: free of the polling interval. */
  firstAssistantLoggedMs: number;
  /** What the workflow recorded in `sandbox_provisioned.ms` (eager only). */
  provisionMs?: number;
}

interface Stats {
  p50: number;
  p95: number;
  mean: number;
}

function positiveInt(name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) throw new Error(`${name} must be an integer ${zeroOk ? '>= 0' : '>= 1'}, got ${raw}`);
  return n;
}

/** Linear interpolation between closest ranks (numpy's default), so p95 of 20 samples is not just the 19th. */
function percentile(sorted: number[], p: number): number {
  const pos = (sorted.length - 1) * p;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function stats(values: number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), mean: values.reduce((a, b) => a + b, 0) / values.length };
}

async function runSession(h: Harness, arm: Arm): Promise<Sample> {
  const id = uniqueId(`bench-${arm}`);
  if (FIRST_BYTE_MS > 0) h.mock.script(id, { firstByteDelayMs: FIRST_BYTE_MS });
  const t0 = Date.now();
  const handle = await startSession(h, { id, agent: { provision: arm }, message: { text: 'hello' } });
  try {
    const events: SessionEvent[] = [];
    let firstAssistantMs: number | undefined;
    while (firstAssistantMs === undefined) {
      // A query that lands before the first workflow task has run fails; the next poll asks again.
      const page = await handle.query(eventsQuery, { from: events.length }).catch(() => undefined);
      const seenAt = Date.now();
      events.push(...(page?.events ?? []));
      const failed = events.find((e) => e.type === 'error');
      if (failed) throw new Error(`session ${id} logged an error: ${JSON.stringify(failed)}`);
      if (events.some((e) => e.type === 'assistant_message')) firstAssistantMs = seenAt - t0;
      else if (seenAt - t0 > 120_000) throw new Error(`no assistant_message in session ${id} after 120 s`);
      else await sleep(POLL_MS);
    }
    const request = h.mock.requests(id).find((r) => r.path === '/v1/messages');
    if (!request) throw new Error(`session ${id} answered without a /v1/messages request`);
    const assistant = events.find((e) => e.type === 'assistant_message')!;
    const provisioned = events.find((e) => e.type === 'sandbox_provisioned');
    if ((arm === 'eager') !== (provisioned !== undefined)) throw new Error(`session ${id} (${arm}) provisioned ${provisioned ? 'a' : 'no'} sandbox before its first reply`);
    return {
      arm,
      sessionId: id,
      firstRequestMs: request.at - t0,
      firstAssistantMs,
      firstAssistantLoggedMs: Date.parse(assistant.time) - t0,
      ...(provisioned?.type === 'sandbox_provisioned' ? { provisionMs: provisioned.ms } : {}),
    };
  } finally {
    // Waiting for the end means its container is gone before the next session is timed.
    await handle.signal(endSignal, { reason: 'benchmark' }).catch(() => undefined);
    await handle.result().catch(() => undefined);
  }
}

async function removeLeftovers(): Promise<number> {
  const d = await docker();
  const filters = JSON.stringify({ label: [`${LABEL.host}=${HOST}`] });
  const containers = await d.listContainers({ all: true, filters });
  await Promise.all(containers.map((c) => d.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
  const { Volumes: volumes } = await d.listVolumes({ filters });
  await Promise.all((volumes ?? []).map((v) => d.getVolume(v.Name).remove().catch(() => undefined)));
  return containers.length;
}

async function machine() {
  const d = await docker();
  const version = await d.version().catch(() => undefined);
  return {
    host: os.hostname(),
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadavgAtStart: os.loadavg(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    docker: version?.Version,
  };
}

function fmt(n: number, width: number, digits = 1): string {
  return n.toFixed(digits).padStart(width);
}

function report(samples: Sample[]) {
  const metrics = [
    { key: 'firstRequestMs', label: 'first /v1/messages request' },
    { key: 'firstAssistantMs', label: 'first assistant_message (polled)' },
    { key: 'firstAssistantLoggedMs', label: 'first assistant_message (logged)' },
  ] as const;
  const summary: Record<string, { lazy: Stats; eager: Stats; ratio: Stats; reductionPct: Stats }> = {};
  const lines = [`${'metric'.padEnd(34)}${'stat'.padEnd(6)}${'lazy ms'.padStart(10)}${'eager ms'.padStart(10)}${'lazy/eager'.padStart(12)}${'reduction'.padStart(11)}`];
  for (const m of metrics) {
    const lazy = stats(samples.filter((s) => s.arm === 'lazy').map((s) => s[m.key]));
    const eager = stats(samples.filter((s) => s.arm === 'eager').map((s) => s[m.key]));
    const ratio = { p50: lazy.p50 / eager.p50, p95: lazy.p95 / eager.p95, mean: lazy.mean / eager.mean };
    const reductionPct = { p50: (1 - ratio.p50) * 100, p95: (1 - ratio.p95) * 100, mean: (1 - ratio.mean) * 100 };
    summary[m.key] = { lazy, eager, ratio, reductionPct };
    for (const stat of ['p50', 'p95', 'mean'] as const) {
      const label = stat === 'p50' ? m.label : '';
      lines.push(`${label.padEnd(34)}${stat.padEnd(6)}${fmt(lazy[stat], 10)}${fmt(eager[stat], 10)}${fmt(ratio[stat], 12, 3)}${`${fmt(reductionPct[stat], 9)}%`.padStart(11)}`);
    }
  }
  const provision = stats(samples.flatMap((s) => (s.provisionMs === undefined ? [] : [s.provisionMs])));
  lines.push(`eager sandbox_provisioned.ms: p50 ${provision.p50.toFixed(1)}, p95 ${provision.p95.toFixed(1)}, mean ${provision.mean.toFixed(1)}`);
  return { table: lines.join('\n'), summary: { ...summary, eagerProvisionMs: provision } };
}

async function main() {
  let stopping = false;
  process.once('SIGINT', () => {
    stopping = true;
    process.stderr.write('\nstopping after this session\n');
  });
  const date = new Date();
  const info = await machine();
  process.stderr.write(`ttft: starting the stack (host ${HOST}, ${info.cpus} cpus)\n`);
  const h = await startHarness({ role: 'all', hostId: HOST });
  const samples: Sample[] = [];
  try {
    // Alternating which arm goes first (L E, E L, ...) gives each arm the same predecessors, so neither
    // inherits more of the previous session's teardown.
    const rounds = WARMUP + N;
    for (let i = 0; i < rounds && !stopping; i++) {
      for (const arm of i % 2 === 0 ? ARMS : [...ARMS].reverse()) {
        const s = await runSession(h, arm);
        const warm = i < WARMUP;
        if (!warm) samples.push(s);
        process.stderr.write(`${warm ? 'warm-up' : `${i - WARMUP + 1}/${N}`} ${arm.padEnd(5)} request ${s.firstRequestMs} ms, assistant_message ${s.firstAssistantMs} ms${s.provisionMs !== undefined ? `, provision ${s.provisionMs} ms` : ''}\n`);
      }
    }
  } finally {
    await h.stop();
    const left = await removeLeftovers();
    if (left > 0) process.stderr.write(`removed ${left} leftover container(s)\n`);
  }
  if (stopping) {
    process.stderr.write('interrupted: no results written\n');
    return;
  }

  const { table, summary } = report(samples);
  process.stdout.write(
    `TTFT of a new session, lazy vs eager sandbox provisioning: ${N} sessions per arm, interleaved, after ${WARMUP} warm-up(s) per arm; ` +
      `${info.cpus} cpus, model first byte ${FIRST_BYTE_MS} ms\n\n${table}\n`,
  );
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, { recursive: true });
  // ISO 8601 basic format: sortable and free of ':' for any file system.
  const file = path.join(dir, `ttft-${date.toISOString().replace(/[-:]|\.\d+/g, '')}.json`);
  const config = { n: N, warmup: WARMUP, pollMs: POLL_MS, firstByteDelayMs: FIRST_BYTE_MS, order: 'lazy,eager then eager,lazy, alternating' };
  fs.writeFileSync(file, `${JSON.stringify({ benchmark: 'ttft', date: date.toISOString(), machine: { ...info, loadavgAtEnd: os.loadavg() }, config, summary, samples }, null, 2)}\n`);
  process.stdout.write(`\nraw samples and summary: ${path.relative(process.cwd(), file)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`ttft: failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
