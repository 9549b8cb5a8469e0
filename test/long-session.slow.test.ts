// A session of 1,000 turns with a tool call each: it runs through several continue-as-new handovers, each run's
// history stays small, history bytes per turn stay flat, and the first events stay readable after the first
// runs are deleted from Temporal. Its sandbox runs under runc: the suite is about the log and history, and its 1,000
// commands under gVisor add about a third to its time (the sandbox suites and the sandbox_runtime benchmark cover gVisor).
import type { WorkflowHandle } from '@temporalio/client';
import { sendMessageUpdate, statusQuery } from '../src/session/contract';
import type { SessionEvent } from '../src/session/events';
import {
  allEvents,
  runsOf as runsOfSession,
  startHarness,
  startSession,
  deleteWorkflowRun,
  doorbell,
  type Doorbell,
  type Harness,
} from './helpers/env';
import { runAgents } from './helpers/cli';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';

const TURNS = 1000;
let h: Harness;
let bell: Doorbell | undefined;
const HOST = `test-long-${process.pid}`;
beforeAll(async () => {
  const dockerHost = await resolveDockerHost();
  if (!dockerHost) throw new Error('no Docker engine answers: run `npm run setup`');
  const sandboxes = new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage(), runtime: 'runc' });
  h = await startHarness({ role: 'all', hostId: HOST, sandboxes });
});
afterAll(async () => {
  await bell?.close();
  await h?.stop();
});

const runsOf = (id: string) => runsOfSession(h.env.client, id);

/** Every run of the session as `describe` reports it (visibility lists leave out the history size). */
async function describeRuns(handle: WorkflowHandle) {
  const runs = await runsOf(handle.workflowId);
  return Promise.all(runs.map((r) => h.env.client.workflow.getHandle(handle.workflowId, r.runId).describe()));
}

/** History bytes of every run so far. */
async function historyBytes(handle: WorkflowHandle): Promise<number> {
  return (await describeRuns(handle)).reduce((n, r) => n + r.historySize!, 0);
}

/** Sends one message and waits until its turn is over: the status query, asked each time the history rings. */
async function turn(handle: WorkflowHandle, bell: Doorbell, text: string): Promise<void> {
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
  await bell.until(async () => {
    const s = await handle.query(statusQuery);
    return s.state === 'waiting_for_user' && s.lastSeq > seq;
  });
}

it(
  `runs ${TURNS} turns with tool calls through several handovers, with flat history per turn`,
  async () => {
    const handle = await startSession(h);
    bell = doorbell(h.env.client, handle.workflowId);
    const started = Date.now();
    const bytesAt = new Map<number, number>([[0, await historyBytes(handle)]]);
    for (let i = 1; i <= TURNS; i++) {
      await turn(handle, bell, `turn ${i}: run \`echo ${i} >> counter.txt\``);
      if (i === 100 || i === TURNS - 100 || i === TURNS) bytesAt.set(i, await historyBytes(handle));
    }
    const elapsed = Date.now() - started;

    const runs = await describeRuns(handle);
    const status = await handle.query(statusQuery);
    expect(runs.length).toBeGreaterThanOrEqual(4);
    expect(status.run).toBe(runs.length);
    for (const r of runs) {
      expect(r.historyLength).toBeLessThan(10_240);
      expect(r.historySize).toBeLessThan(10 * 1024 * 1024);
    }
    const first100 = bytesAt.get(100)! - bytesAt.get(0)!;
    const last100 = bytesAt.get(TURNS)! - bytesAt.get(TURNS - 100)!;
    expect(last100).toBeLessThanOrEqual(1.2 * first100);

    // One gap-free log; one result per tool use; the side effect ran exactly once per turn.
    const events = await allEvents(handle);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const results = events.filter((e) => e.type === 'tool_result') as Extract<SessionEvent, { type: 'tool_result' }>[];
    expect(results).toHaveLength(TURNS);
    expect(new Set(results.map((r) => r.toolUseId)).size).toBe(TURNS);
    await turn(handle, bell, 'count them: `wc -l < counter.txt`');
    await bell.close();
    const count = (await allEvents(handle)).filter((e) => e.type === 'tool_result').pop();
    expect(count?.type === 'tool_result' && count.output).toBe(`${TURNS}\n[exit 0]`);

    // The first runs go the way retention would take them; the first events are still there.
    for (const r of runs.slice(0, 2)) {
      deleteWorkflowRun(h.env.address, handle.workflowId, r.runId);
    }
    while ((await runsOf(handle.workflowId)).some((r) => r.runId === runs[0].runId || r.runId === runs[1].runId))
      await new Promise((r) => setTimeout(r, 200));
    const cli = await runAgents(h.env.address, ['events', handle.workflowId, '--from', '0', '--limit', '5', '--json']);
    expect(
      cli.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as SessionEvent).seq),
    ).toEqual([0, 1, 2, 3, 4]);

    const u = status.usage;
    const input = u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens;
    process.stderr.write(
      `${TURNS} turns in ${(elapsed / 1000).toFixed(1)} s over ${runs.length} runs; ` +
        `events per run ${runs.map((r) => r.historyLength).join('/')}, bytes per run ${runs.map((r) => r.historySize).join('/')}; ` +
        `history bytes: first 100 turns ${first100}, last 100 turns ${last100} (x${(last100 / first100).toFixed(2)}); ` +
        `log ${events.length} events; cache reads ${((100 * u.cacheReadInputTokens) / input).toFixed(1)}% of input tokens\n`,
    );
  },
  60 * 60_000,
);
