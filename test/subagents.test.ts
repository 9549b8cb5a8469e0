// Sub-agents: spawn_agent starts child sessions that run in parallel, each with its own log and sandbox, and
// answer through the tool result; a child crash stays in the child; cancelling the parent cancels its
// children; a parent that continues as new still gets the answer; usage rolls up into the parent's status.
import type Docker from 'dockerode';
import type { WorkflowHandle } from '@temporalio/client';
import type { SessionEvent, Usage } from '../src/session/events';
import { childSessionId } from '../src/workflows/subagents';
import { endSignal, sendMessageUpdate, statusQuery, userMessageSignal } from '../src/session/contract';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import {
  allEvents,
  runsOf,
  say,
  startHarness,
  startSession,
  testArchive,
  turnDone,
  uniqueId,
  waitForEvents,
  type Harness,
} from './helpers/env';
import { wakeSession } from '../src/session-ops';
import { docker, sessionContainers } from './helpers/hands';
import { ofType, resultOf, spawn, turn } from './helpers/subagents';
import type { MockBlock } from '../src/dev/model-script';

let h: Harness;
let d: Docker;
const HOST = `test-subagents-${process.pid}`;
const workers: ChildWorker[] = [];
beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'all', hostId: HOST });
});
/** Gates held responses wait at; all are opened at the end, so no activity outlives the suite. */
const gates: string[] = [];
const gate = (name: string) => (gates.push(name), name);
afterAll(async () => {
  for (const g of gates) h?.mock.release(g);
  await Promise.all(workers.map((w) => w.kill()));
  await h?.stop();
});

function usageOf(events: SessionEvent[]): Usage {
  const total = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
  for (const e of ofType(events, 'assistant_message'))
    for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += e.usage[k];
  return total;
}

const child = (parent: WorkflowHandle, toolUseId: string) =>
  h.env.client.workflow.getHandle(childSessionId(parent.workflowId, toolUseId));

describe('spawn_agent', () => {
  it('runs two children in parallel, each in its own sandbox, and gives the parent both answers and their usage', async () => {
    const parent = await startSession(h, { agent: { tools: ['bash', 'spawn_agent'] } });
    const events = await turn(h, parent, [
      { type: 'text', text: 'Two helpers at once.' },
      spawn('toolu_alpha', { task: 'Run `sleep 2; echo alpha-$((6*7)) > out.txt; cat out.txt; hostname`' }),
      spawn('toolu_beta', { task: 'Run `sleep 2; echo beta-$((6*8)) > out.txt; cat out.txt; hostname`' }),
    ]);
    expect(resultOf(events, 'toolu_alpha')).toMatchObject({
      isError: false,
      output: expect.stringContaining('alpha-42'),
    });
    expect(resultOf(events, 'toolu_beta')).toMatchObject({
      isError: false,
      output: expect.stringContaining('beta-48'),
    });
    // Both started before either finished.
    const types = events.map((e) => e.type);
    expect(types.lastIndexOf('subagent_started')).toBeLessThan(types.indexOf('subagent_finished'));
    expect(ofType(events, 'error')).toEqual([]);

    const children = [child(parent, 'toolu_alpha'), child(parent, 'toolu_beta')];
    const logs = await Promise.all(children.map(async (c) => (await c.result(), allEvents(c))));
    const sandboxIds = new Set<string>();
    for (const [i, log] of logs.entries()) {
      expect(log[0]).toMatchObject({
        type: 'session_started',
        parent: { sessionId: parent.workflowId, toolUseId: ['toolu_alpha', 'toolu_beta'][i] },
      });
      expect(ofType(log, 'sandbox_provisioned')).toHaveLength(1);
      sandboxIds.add(ofType(log, 'sandbox_provisioned')[0].sandboxId);
      expect(log[log.length - 1]).toMatchObject({ type: 'session_ended', reason: 'answered' });
      expect(await sessionContainers(d, children[i].workflowId)).toHaveLength(0);
    }
    expect(sandboxIds.size).toBe(2);
    // Each side links to the other.
    expect(
      ofType(events, 'subagent_started')
        .map((e) => e.sessionId)
        .sort(),
    ).toEqual(children.map((c) => c.workflowId).sort());

    const childUsage = logs.map(usageOf);
    expect(
      ofType(events, 'subagent_finished')
        .map((e) => e.usage)
        .sort((a, b) => a!.outputTokens - b!.outputTokens),
    ).toEqual([...childUsage].sort((a, b) => a.outputTokens - b.outputTokens));
    const own = usageOf(events);
    const status = await parent.query(statusQuery);
    expect(status.subagents).toEqual({
      running: [],
      usage: {
        inputTokens: childUsage[0].inputTokens + childUsage[1].inputTokens,
        outputTokens: childUsage[0].outputTokens + childUsage[1].outputTokens,
        cacheReadInputTokens: childUsage[0].cacheReadInputTokens + childUsage[1].cacheReadInputTokens,
        cacheCreationInputTokens: childUsage[0].cacheCreationInputTokens + childUsage[1].cacheCreationInputTokens,
      },
    });
    expect(status.usage.outputTokens).toBe(own.outputTokens + childUsage[0].outputTokens + childUsage[1].outputTokens);
    expect(status.usage.inputTokens).toBe(own.inputTokens + childUsage[0].inputTokens + childUsage[1].inputTokens);
    await parent.signal(endSignal, {});
    await parent.result();
  });

  it('refuses an unknown sub-agent or bad input with a readable tool error and starts nothing', async () => {
    const parent = await startSession(h, { agent: { tools: ['spawn_agent'], sandboxes: {} } });
    const events = await turn(h, parent, [
      spawn('toolu_x', { task: 'x', agent: 'nobody' }),
      spawn('toolu_y', { task: '' }),
    ]);
    expect(resultOf(events, 'toolu_x')).toMatchObject({
      isError: true,
      output: 'no sub-agent named nobody; this agent declares none',
    });
    expect(resultOf(events, 'toolu_y')?.output).toMatch(/invalid input for spawn_agent: task: task must not be empty/);
    expect(ofType(events, 'subagent_started')).toEqual([]);
    await parent.signal(endSignal, {});
  });

  it('keeps a child that was terminated inside the child: the parent gets an error result and carries on', async () => {
    const parent = await startSession(h, { agent: { tools: ['spawn_agent'], sandboxes: {} } });
    const target = child(parent, 'toolu_doomed');
    h.mock.script(target.workflowId, { steps: [{ gate: gate(`${target.workflowId}-hold`) }] });
    h.mock.script(parent.workflowId, {
      steps: [{ reply: { content: [spawn('toolu_doomed', { task: 'never finishes' })] } }],
    });
    const { seq } = await parent.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await waitForEvents(parent, (ev) => ev.some((e) => e.type === 'subagent_started'));
    await waitForEvents(target, (ev) => ev.some((e) => e.type === 'user_message'));
    await target.terminate('simulated crash');
    h.mock.release(`${target.workflowId}-hold`);
    const events = await waitForEvents(parent, turnDone(seq));
    expect(resultOf(events, 'toolu_doomed')).toMatchObject({
      isError: true,
      output: expect.stringMatching(/stopped without answering: .*terminated/i),
    });
    expect(ofType(events, 'subagent_finished')).toMatchObject([{ sessionId: target.workflowId, isError: true }]);
    expect(ofType(events, 'error')).toEqual([]);
    const after = await say(parent, 'still there?');
    expect(after[after.length - 1]).toMatchObject({
      type: 'assistant_message',
      content: [{ type: 'text', text: 'You said: still there?' }],
    });
    await parent.signal(endSignal, {});
  });

  it("survives a SIGKILL of the child's worker: the child finishes on another worker and the parent's log has no error", async () => {
    const queue = `subagents-${process.pid}`;
    const env = { TEMPORAL_ADDRESS: h.env.address, ANTHROPIC_BASE_URL: h.mock.url, ANTHROPIC_API_KEY: 'test-key' };
    // The sub-agent's brain runs on its own queue, served only by the worker processes started here.
    const w1 = await spawnWorkerOn(queue, env);
    const parent = await startSession(h, {
      agent: { tools: ['bash', 'spawn_agent'], subagents: { worker: { taskQueue: queue } } },
    });
    const target = child(parent, 'toolu_kill');
    h.mock.script(parent.workflowId, {
      steps: [
        {
          reply: {
            content: [spawn('toolu_kill', { task: 'Run `sleep 3; echo survived-$((40+2))`', agent: 'worker' })],
          },
        },
      ],
    });
    const { seq } = await parent.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await waitForEvents(parent, (ev) => ev.some((e) => e.type === 'subagent_started'), 60_000);
    await waitForEvents(target, (ev) => ev.some((e) => e.type === 'tool_use'), 60_000);
    await w1.kill('SIGKILL');
    await spawnWorkerOn(queue, env);
    const events = await waitForEvents(parent, turnDone(seq), 120_000);
    expect(resultOf(events, 'toolu_kill')).toMatchObject({
      isError: false,
      output: expect.stringContaining('survived-42'),
    });
    expect(ofType(events, 'error')).toEqual([]);
    expect(ofType(events, 'interrupted')).toEqual([]);
    const childLog = await allEvents(target);
    expect(childLog[childLog.length - 1]).toMatchObject({ type: 'session_ended', reason: 'answered' });
    await parent.signal(endSignal, {});
  });

  it('cancels the children when the parent is cancelled; both logs end', async () => {
    const parent = await startSession(h, { agent: { tools: ['spawn_agent'], sandboxes: {} } });
    const kids = [child(parent, 'toolu_c1'), child(parent, 'toolu_c2')];
    for (const k of kids) h.mock.script(k.workflowId, { steps: [{ gate: gate(`${k.workflowId}-never`) }] });
    h.mock.script(parent.workflowId, {
      steps: [{ reply: { content: [spawn('toolu_c1', { task: 'wait' }), spawn('toolu_c2', { task: 'wait' })] } }],
    });
    await parent.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await waitForEvents(parent, (ev) => ev.filter((e) => e.type === 'subagent_started').length === 2);
    await parent.cancel();
    expect(await parent.result()).toMatchObject({ reason: 'cancelled' });
    const parentLog = await allEvents(parent);
    expect(parentLog.filter((e) => e.type === 'tool_result').map((e) => e.type === 'tool_result' && e.output)).toEqual([
      'session ended before the tool finished',
      'session ended before the tool finished',
    ]);
    expect(parentLog[parentLog.length - 1]).toMatchObject({ type: 'session_ended', reason: 'cancelled' });
    for (const k of kids) {
      expect(await k.result()).toMatchObject({ reason: 'cancelled' });
      const log = await allEvents(k);
      expect(log[log.length - 1]).toMatchObject({ type: 'session_ended', reason: 'cancelled' });
    }
    for (const k of kids) h.mock.release(`${k.workflowId}-never`);
  });

  it('cancels the children a dead run waited for when the parent is woken, and closes their calls', async () => {
    const parent = await startSession(h, { agent: { tools: ['spawn_agent'], sandboxes: {} } });
    const target = child(parent, 'toolu_orphan');
    h.mock.script(target.workflowId, { steps: [{ gate: gate(`${target.workflowId}-never`) }] });
    h.mock.script(parent.workflowId, { steps: [{ reply: { content: [spawn('toolu_orphan', { task: 'wait' })] } }] });
    await parent.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await waitForEvents(parent, (ev) => ev.some((e) => e.type === 'subagent_started'));
    await parent.terminate('simulated loss of the run');
    await wakeSession(h.env.client, testArchive(), parent.workflowId);
    const woken = h.env.client.workflow.getHandle(parent.workflowId);
    expect(await target.result()).toMatchObject({ reason: 'cancelled' });
    const events = await waitForEvents(woken, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.seq > (resultOf(ev, 'toolu_orphan')?.seq ?? Infinity)),
    );
    expect(resultOf(events, 'toolu_orphan')).toMatchObject({
      isError: true,
      output: 'the run stopped before this tool finished',
    });
    expect((await woken.query(statusQuery)).subagents?.running).toEqual([]);
    await woken.signal(endSignal, {});
  });

  /** Starts a parent whose child waits at a gate, and makes the parent continue as new meanwhile. */
  async function handOverWhileChildRuns(prefix: string, reply: MockBlock[]) {
    const parent = await startSession(h, {
      id: uniqueId(prefix),
      agent: { tools: ['spawn_agent'], sandboxes: {}, limits: { historyEvents: 100, subagentCheckMs: 1000 } },
    });
    const target = child(parent, 'toolu_slow');
    const go = gate(`${target.workflowId}-go`);
    h.mock.script(target.workflowId, { steps: [{ gate: go, reply: { content: reply } }] });
    h.mock.script(parent.workflowId, {
      steps: [{ reply: { content: [spawn('toolu_slow', { task: 'take your time' })] } }],
    });
    const { seq } = await parent.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await waitForEvents(parent, (ev) => ev.some((e) => e.type === 'subagent_started'));
    // Input while the child runs grows the parent's history past its limit: the parent hands over meanwhile.
    for (let i = 0; (await parent.describe()).historyLength < 110; i++)
      await parent.signal(userMessageSignal, { text: `note ${i}` });
    const deadline = Date.now() + 60_000;
    while ((await runsOf(h.env.client, parent.workflowId)).length < 2) {
      if (Date.now() > deadline) throw new Error('the parent never continued as new');
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await parent.query(statusQuery)).subagents?.running).toEqual([
      { sessionId: target.workflowId, toolUseId: 'toolu_slow' },
    ]);
    return { parent, target, seq, go };
  }

  it('gets the answer of a child that finishes after the parent continued as new', async () => {
    const { parent, seq, go } = await handOverWhileChildRuns('can-parent', [
      { type: 'text', text: 'the slow answer is 42' },
    ]);
    h.mock.release(go);
    const events = await waitForEvents(parent, turnDone(seq), 60_000);
    expect(resultOf(events, 'toolu_slow')).toMatchObject({ isError: false, output: 'the slow answer is 42' });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const finished = ofType(events, 'subagent_finished')[0];
    expect(finished.seq).toBeGreaterThanOrEqual((await parent.query(statusQuery)).firstSeq ?? 0);
    expect(ofType(events, 'error')).toEqual([]);
    await parent.signal(endSignal, {});
  });

  it('notices a child that was terminated after the parent continued as new', async () => {
    const { parent, target, seq } = await handOverWhileChildRuns('can-crash', [{ type: 'text', text: 'never sent' }]);
    await target.terminate('simulated crash');
    const events = await waitForEvents(parent, turnDone(seq), 60_000);
    expect(resultOf(events, 'toolu_slow')).toMatchObject({
      isError: true,
      output: expect.stringContaining('closed without a report'),
    });
    expect(ofType(events, 'error')).toEqual([]);
    await parent.signal(endSignal, {});
  });
});

async function spawnWorkerOn(queue: string, env: Record<string, string>): Promise<ChildWorker> {
  const w = await spawnWorker(env, 'brain', [], ['--task-queue', queue]);
  workers.push(w);
  return w;
}
