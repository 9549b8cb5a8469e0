// Two hosts of one cluster: brain workers as separate processes with DATA_DIRs of their own, sharing only
// TEMPORAL_ADDRESS, DATABASE_URL and the keys. Host A dies (SIGKILL) mid-turn, after its session has handed over
// into the PostgreSQL archive; host B carries the turn to its end; a client on a third host reads every event,
// including those of runs deleted from Temporal, and no host keeps anything of the session on its disk.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MockStep } from '../src/model/mock-script';
import { sendMessageUpdate } from '../src/session/contract';
import type { SessionEvent } from '../src/session/events';
import { freshPostgresDatabase } from './helpers/api';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { runAgents } from './helpers/cli';
import { expectGapFreeAndValid, runsOf, startHarness, startSession, temporalCliPath, turnDone, type Harness } from './helpers/env';

let h: Harness;
let pg: { url: string; drop(): Promise<void> };
const workers: ChildWorker[] = [];
const hosts = ['a', 'b', 'c'].map((n) => fs.mkdtempSync(path.join(os.tmpdir(), `agents-cluster-${n}-`)));
const [hostA, hostB, hostC] = hosts;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  pg = await freshPostgresDatabase();
});
afterAll(async () => {
  for (const w of workers) await w.kill('SIGKILL');
  await h?.stop();
  await pg?.drop();
  for (const d of hosts) fs.rmSync(d, { recursive: true, force: true });
});

const hostEnv = (dataDir: string) => ({ TEMPORAL_ADDRESS: h.env.address, DATA_DIR: dataDir, KEY_FILES: 'off', DATABASE_URL: pg.url });
async function brainOn(dataDir: string): Promise<ChildWorker> {
  const w = await spawnWorker({ ...hostEnv(dataDir), ANTHROPIC_BASE_URL: h.mock.url, ANTHROPIC_API_KEY: 'test-key', STREAM_LISTEN: 'off' });
  workers.push(w);
  return w;
}
const readLog: MockStep = { reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 0, limit: 2 } }] } };

/** `agents events` on `dataDir`, parsed. */
async function eventsOn(dataDir: string, id: string): Promise<SessionEvent[]> {
  const r = await runAgents(h.env.address, ['events', id, '--json'], hostEnv(dataDir));
  expect(r.stderr).toBe('');
  return r.stdout.trim().split('\n').map((l) => JSON.parse(l) as SessionEvent);
}

it('carries a session across a host killed mid-turn, every event readable from a third host after Temporal forgets its first runs', async () => {
  const a = await brainOn(hostA);
  const handle = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } } });
  const id = handle.workflowId;
  const gate = `cluster-${id}`;
  h.mock.script(id, { steps: [...Array.from({ length: 24 }, () => readLog), { gate, ...readLog }, ...Array.from({ length: 6 }, () => readLog), { reply: { content: [{ type: 'text', text: 'done' }] } }] });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log again and again' }] });

  // Host A is in the gated model call (the 25th) after handing over at least once; then it dies.
  for (const deadline = Date.now() + 120_000; h.mock.requests(id).length < 25; await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > deadline) throw new Error(`host A did not reach the gated call; stderr: ${a.stderr().slice(-2000)}`);
  }
  expect((await runsOf(h.env.client, id)).length).toBeGreaterThanOrEqual(2);
  await a.kill('SIGKILL');

  // Host B starts after the death and takes the retried call and the rest of the turn.
  await brainOn(hostB);
  h.mock.release(gate);
  let events: SessionEvent[] = [];
  for (const deadline = Date.now() + 180_000; !turnDone(seq)(events); await new Promise((r) => setTimeout(r, 300))) {
    if (Date.now() > deadline) throw new Error(`host B did not finish the turn; last event ${JSON.stringify(events.at(-1))}`);
    events = await eventsOn(hostC, id);
  }
  expectGapFreeAndValid(events);
  // Every call the model made was answered once, across the death (the dead host's call was retried on host B).
  const uses = events.flatMap((e) => (e.type === 'tool_use' ? [e.id] : []));
  const results = events.flatMap((e) => (e.type === 'tool_result' ? [e.toolUseId] : []));
  expect(uses.length).toBeGreaterThanOrEqual(25);
  expect(results).toEqual(uses);
  expect(new Set(uses).size).toBe(uses.length);

  // Temporal forgets every run but the last; the archive alone holds their events, and every host reads them.
  const runs = await runsOf(h.env.client, id);
  expect(runs.length).toBeGreaterThanOrEqual(3);
  for (const r of runs.slice(0, -1)) {
    const del = spawnSync(temporalCliPath(), ['workflow', 'delete', '--address', h.env.address, '--workflow-id', id, '--run-id', r.runId], { encoding: 'utf8' });
    expect(del.status).toBe(0);
  }
  for (let left = runs.length; left > 1; left = (await runsOf(h.env.client, id)).length) await new Promise((r) => setTimeout(r, 200));
  for (const host of hosts) expect(await eventsOn(host, id)).toEqual(events);

  // No host keeps a segment, a vault entry, a database or a key on its disk.
  for (const host of hosts) expect(fs.readdirSync(host, { recursive: true })).toEqual([]);
});
