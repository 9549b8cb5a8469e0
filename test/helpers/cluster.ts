// A cluster on one machine: Temporal, one PostgreSQL database, and brain workers as separate processes, each a
// "host" with its own DATA_DIR, sharing only TEMPORAL_ADDRESS, DATABASE_URL and the keys.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MockStep } from '../../src/dev/model-script';
import type { SessionEvent } from '../../src/session/events';
import { freshPostgresDatabase } from './api';
import { spawnWorker, type ChildWorker } from './child-worker';
import { runAgents } from './cli';
import { runsOf, startHarness, deleteWorkflowRun, type Harness } from './env';

export interface Cluster {
  h: Harness;
  /** Every host's DATA_DIR, made at start. */
  hosts: string[];
  /** Starts a brain worker on host `i`. */
  brainOn(i: number): Promise<ChildWorker>;
  /** `agents events --json` run on host `i`. */
  eventsOn(i: number, id: string): Promise<SessionEvent[]>;
  /** Deletes every run of `id` but the last from Temporal, and waits until they are gone. */
  forgetEarlyRuns(id: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startCluster(hostCount: number): Promise<Cluster> {
  const h = await startHarness({ worker: false });
  const pg = await freshPostgresDatabase().catch(async (e) => {
    await h.stop();
    throw e;
  });
  const hosts = Array.from({ length: hostCount }, (_, i) =>
    fs.mkdtempSync(path.join(os.tmpdir(), `agents-cluster-${i}-`)),
  );
  const workers: ChildWorker[] = [];
  const hostEnv = (i: number) => ({
    TEMPORAL_ADDRESS: h.env.address,
    DATA_DIR: hosts[i],
    KEY_FILES: 'off',
    DATABASE_URL: pg.url,
  });
  return {
    h,
    hosts,
    async brainOn(i) {
      const w = await spawnWorker({
        ...hostEnv(i),
        ANTHROPIC_BASE_URL: h.mock.url,
        ANTHROPIC_API_KEY: 'test-key',
        STREAM_LISTEN: 'off',
      });
      workers.push(w);
      return w;
    },
    async eventsOn(i, id) {
      const r = await runAgents(h.env.address, ['events', id, '--json'], hostEnv(i));
      if (r.code !== 0) throw new Error(`agents events on host ${i} failed: ${r.stderr}`);
      return r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as SessionEvent);
    },
    async forgetEarlyRuns(id) {
      const runs = await runsOf(h.env.client, id);
      for (const r of runs.slice(0, -1)) {
        deleteWorkflowRun(h.env.address, id, r.runId);
      }
      for (let left = runs.length; left > 1; left = (await runsOf(h.env.client, id)).length)
        await new Promise((r) => setTimeout(r, 200));
      return runs.length - 1;
    },
    async stop() {
      for (const w of workers) await w.kill('SIGKILL');
      await h.stop();
      await pg.drop();
      for (const d of hosts) fs.rmSync(d, { recursive: true, force: true });
    },
  };
}

/** A model reply that reads the first two events of the session's log (out of the archive after a handover). */
export const readLogStep: MockStep = {
  reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 0, limit: 2 } }] },
};

/** Every tool call of the log answered exactly once, in order. */
export function callsAnsweredOnce(events: SessionEvent[]): { uses: string[]; results: string[] } {
  return {
    uses: events.flatMap((e) => (e.type === 'tool_use' ? [e.id] : [])),
    results: events.flatMap((e) => (e.type === 'tool_result' ? [e.toolUseId] : [])),
  };
}

/** Waits until the mock model has seen `n` requests of session `id`. */
export async function requestsSeen(c: Cluster, id: string, n: number, why: () => string): Promise<void> {
  for (
    const deadline = Date.now() + 120_000;
    c.h.mock.requests(id).length < n;
    await new Promise((r) => setTimeout(r, 100))
  ) {
    if (Date.now() > deadline) throw new Error(`${n} model requests of ${id} were not seen: ${why()}`);
  }
}
