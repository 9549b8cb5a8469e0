// A session whose brain worker has DATABASE_URL: every handover seals into the PostgreSQL archive, nothing into
// DATA_DIR/archive, and a client on another "host" (its own DATA_DIR) reads the oldest events with `agents events`,
// after the runs that held them are deleted from Temporal.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MockStep } from '../src/dev/model-script';
import { PostgresSessionArchive } from '../src/archive';
import { ArchivedSessionLog, LiveSessionLog, readEvents } from '../src/log/session-log';
import { openDb, type Db } from '../src/storage/db';
import { sendMessageUpdate } from '../src/session/contract';
import type { SessionEvent } from '../src/session/events';
import { freshPostgresDatabase } from './helpers/api';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { runAgents } from './helpers/cli';
import {
  runsOf,
  startHarness,
  startSession,
  deleteWorkflowRun,
  testDataConverter,
  turnDone,
  type Harness,
} from './helpers/env';

let h: Harness;
let pg: { url: string; drop(): Promise<void> };
let db: Db;
let worker: ChildWorker | undefined;
const hostA = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-host-a-'));
const hostB = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-host-b-'));

beforeAll(async () => {
  h = await startHarness({ worker: false });
  pg = await freshPostgresDatabase();
  worker = await spawnWorker({
    TEMPORAL_ADDRESS: h.env.address,
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    DATA_DIR: hostA,
    KEY_FILES: 'off',
    DATABASE_URL: pg.url,
  });
  db = await openDb({ databaseUrl: pg.url, dataDir: hostB });
});
afterAll(async () => {
  await worker?.kill('SIGTERM');
  await db?.close();
  await h?.stop();
  await pg?.drop();
  for (const d of [hostA, hostB]) fs.rmSync(d, { recursive: true, force: true });
});

const readLog = (n: number): MockStep => ({
  reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 0, limit: n } }] },
});

it('hands over into the PostgreSQL archive, and `agents events` on another host reads the first runs after Temporal forgets them', async () => {
  const handle = await startSession(h, {
    agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
  });
  h.mock.script(handle.workflowId, { steps: Array.from({ length: 40 }, () => readLog(2)) });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log again and again' }] });
  const log = new ArchivedSessionLog(
    new PostgresSessionArchive(db, testDataConverter()),
    new LiveSessionLog(h.env.client),
  );
  let events: SessionEvent[] = [];
  for (const deadline = Date.now() + 120_000; !turnDone(seq)(events); await new Promise((r) => setTimeout(r, 200))) {
    if (Date.now() > deadline)
      throw new Error(`the turn did not finish; worker stderr: ${worker!.stderr().slice(-2000)}`);
    events = await readEvents(log, handle.workflowId, 0);
  }
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
  // The later runs' session_events calls read events 0 and 1 back out of the PostgreSQL archive.
  const last = events.filter((e) => e.type === 'tool_result').pop()!;
  expect(JSON.parse(last.type === 'tool_result' ? last.output : '').events.map((e: SessionEvent) => e.type)).toEqual([
    'session_started',
    'user_message',
  ]);

  const runs = await runsOf(h.env.client, handle.workflowId);
  expect(runs.length).toBeGreaterThanOrEqual(3);
  const sealed = await db.query<{ from_seq: number; through_seq: number }>(
    'select from_seq, through_seq from archive_segments where session_id = $1 order by from_seq',
    [handle.workflowId],
  );
  expect(sealed.length).toBeGreaterThanOrEqual(runs.length - 1);
  expect(sealed[0].from_seq).toBe(0);

  // Temporal forgets the first two runs; only the archive holds their events now.
  for (const r of runs.slice(0, 2)) {
    deleteWorkflowRun(h.env.address, handle.workflowId, r.runId);
  }
  for (;;) {
    const left = (await runsOf(h.env.client, handle.workflowId)).map((r) => r.runId);
    if (!left.includes(runs[0].runId) && !left.includes(runs[1].runId)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const env = { DATA_DIR: hostB, KEY_FILES: 'off', DATABASE_URL: pg.url };
  const first = await runAgents(
    h.env.address,
    ['events', handle.workflowId, '--from', '0', '--limit', '5', '--json'],
    env,
  );
  expect(first.stderr).toBe('');
  expect(
    first.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as SessionEvent),
  ).toEqual(events.slice(0, 5));
  const all = await runAgents(h.env.address, ['events', handle.workflowId, '--json'], env);
  expect(
    all.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as SessionEvent).seq),
  ).toEqual(events.map((e) => e.seq));

  // Neither the brain's host nor the client's keeps anything on its disk: no archive, no database, no key.
  expect(fs.readdirSync(hostA, { recursive: true })).toEqual([]);
  expect(fs.readdirSync(hostB, { recursive: true })).toEqual([]);
});

it('stops a brain worker at start, naming DATABASE_URL but not its password, when the server is unreachable', async () => {
  const password = 'never-in-a-log-42';
  const started = spawnWorker({
    TEMPORAL_ADDRESS: h.env.address,
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    DATA_DIR: hostA,
    KEY_FILES: 'off',
    DATABASE_URL: `postgres://agents:${password}@127.0.0.1:1/agents`,
  });
  await expect(started).rejects.toThrow(
    /exited with 1 before it was ready; stderr: .*cannot open the session archive in PostgreSQL \(DATABASE_URL\): .*ECONNREFUSED/s,
  );
  await expect(started).rejects.not.toThrow(password);
});

it('fails `agents events` with one line naming DATABASE_URL when the archive server is unreachable', async () => {
  const r = await runAgents(h.env.address, ['events', 'no-such-session', '--json'], {
    DATA_DIR: hostB,
    KEY_FILES: 'off',
    DATABASE_URL: 'postgres://agents:hidden-pw@127.0.0.1:1/agents',
  });
  expect(r.stdout).toBe('');
  expect(r.stderr).not.toContain('hidden-pw');
  expect(r.stderr.trim().split('\n')).toEqual([
    expect.stringMatching(/^error: .*cannot open the session archive in PostgreSQL \(DATABASE_URL\): .*ECONNREFUSED/),
  ]);
});
