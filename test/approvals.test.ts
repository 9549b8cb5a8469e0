// Approvals against real parts: brain workers as child processes (SIGKILLed in one test), a hands worker with
// real Docker sandboxes, the local Messages API server, and the `agents` CLI.
import type { WorkflowHandle } from '@temporalio/client';
import type { AgentInput } from '../src/session/agent';
import type { EventOf, SessionEvent } from '../src/session/events';
import { endSignal, resolveToolUseUpdate, sendMessageUpdate, statusQuery } from '../src/session/contract';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { expectOneLineError, runAgents } from './helpers/cli';
import { allEvents, startHarness, startSession, startTestWorker, waitForEvents, type Harness } from './helpers/env';
import type { RunningWorker } from '../src/worker';
import { messagesUntilHandover, statusUntil, toolStep } from './helpers/actions';

let h: Harness;
let hands: RunningWorker;
let brain: ChildWorker;
const HOST = `test-approvals-${process.pid}`;

const spawnBrain = () =>
  spawnWorker({ TEMPORAL_ADDRESS: h.env.address, ANTHROPIC_BASE_URL: h.mock.url, ANTHROPIC_API_KEY: 'test-key' });

beforeAll(async () => {
  h = await startHarness({ worker: false });
  hands = await startTestWorker(h.env.address, h.mock.url, { role: 'hands', hostId: HOST, reapIntervalMs: 0 });
  brain = await spawnBrain();
});
afterAll(async () => {
  await brain?.kill();
  await hands?.shutdown().catch(() => undefined);
  await h?.stop();
  const { removeHostSandboxes } = await import('./helpers/env');
  await removeHostSandboxes(HOST);
});

const agents = (args: string[]) => runAgents(h.env.address, args);
const toolCall = toolStep;
const bashCall = (command: string) => toolStep('bash', { command });

const resultOf = (events: SessionEvent[], id: string) =>
  events.find((e): e is EventOf<'tool_result'> => e.type === 'tool_result' && e.toolUseId === id);

/** The tool_result blocks the model was sent for `id`, across every request of the session. */
function sentResults(sessionId: string, id: string): Record<string, unknown>[] {
  return h.mock
    .requests(sessionId)
    .flatMap((r) =>
      (r.body.messages as { content: unknown }[]).flatMap((m) =>
        Array.isArray(m.content) ? (m.content as Record<string, unknown>[]) : [],
      ),
    )
    .filter((b) => b.type === 'tool_result' && b.tool_use_id === id);
}

const endSession = async (handle: WorkflowHandle) => {
  await handle.signal(endSignal, { reason: 'test done' });
  await handle.result();
};

const pushPolicy: Partial<AgentInput> = { policies: { bash: { default: 'allow', ask: ['git push*'] } } };

describe('approvals', () => {
  it('asks before `git push` but not before `ls`; approve and deny both reach the model', async () => {
    const handle = await startSession(h, { agent: pushPolicy });
    const id = handle.workflowId;
    h.mock.script(id, {
      steps: [bashCall('ls -a'), bashCall('git push origin main'), bashCall('git push --force origin main')],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'list the files, then push twice' }] });

    // `ls` ran without asking; the first push waits.
    const pending = await statusUntil(handle, (s) => s.state === 'requires_action');
    let events = await allEvents(handle);
    const [lsUse, pushUse] = events.filter((e): e is EventOf<'tool_use'> => e.type === 'tool_use');
    expect(resultOf(events, lsUse.id)).toMatchObject({ isError: false, output: expect.stringMatching(/\[exit 0\]$/) });
    expect(events.filter((e) => e.type === 'approval_requested')).toEqual([
      expect.objectContaining({ toolUseId: pushUse.id, policy: 'bash: ask "git push*"' }),
    ]);
    expect(pending.pending).toEqual([
      {
        kind: 'approval',
        toolUseId: pushUse.id,
        name: 'bash',
        input: { command: 'git push origin main' },
        policy: 'bash: ask "git push*"',
        onTimeout: 'deny',
      },
    ]);
    expect((await agents(['status', id])).stdout).toMatch(
      new RegExp(`state: requires_action[\\s\\S]*pending approval ${pushUse.id}: bash`),
    );
    expect(h.mock.requests(id)).toHaveLength(2);

    // Approved by the update: the push runs in the sandbox and its output reaches the model.
    const { seq } = await handle.executeUpdate(resolveToolUseUpdate, {
      args: [{ toolUseId: pushUse.id, allow: true, by: 'alice' }],
    });
    events = await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'approval_requested').length === 2);
    expect(events[seq]).toMatchObject({ type: 'approval_resolved', toolUseId: pushUse.id, allow: true, by: 'alice' });
    const pushed = resultOf(events, pushUse.id)!;
    expect(pushed.seq).toBe(seq + 1);
    expect(pushed.output).toMatch(/origin|repository/);
    expect(pushed.output).toMatch(/\[exit 128\]$/);
    expect(sentResults(id, pushUse.id)[0]).toMatchObject({ content: pushed.output, is_error: true });

    // Denied from the command line: nothing runs, and the model reads the reason as a denied tool error.
    const forceUse = events.filter((e): e is EventOf<'tool_use'> => e.type === 'tool_use')[2];
    const denied = await agents(['deny', id, forceUse.id, '--reason', 'no force pushes on main']);
    expect(denied.code).toBe(0);
    events = await waitForEvents(handle, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.seq > forceUse.seq),
    );
    expect(resultOf(events, forceUse.id)).toMatchObject({
      isError: true,
      output: 'user denied this tool call: no force pushes on main',
      error: { kind: 'denied', message: 'user denied this tool call: no force pushes on main' },
    });
    expect(sentResults(id, forceUse.id)).toEqual([
      expect.objectContaining({ content: 'user denied this tool call: no force pushes on main', is_error: true }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'assistant_message', stopReason: 'end_turn' });
    expect((await handle.query(statusQuery)).state).toBe('waiting_for_user');

    // A second decision, an unknown id and bad input are refused with one line each, and append nothing.
    const before = (await allEvents(handle)).length;
    expectOneLineError(
      await agents(['approve', id, forceUse.id]),
      new RegExp(`tool use ${forceUse.id} was already denied \\(event \\d+, by user\\)`),
    );
    expectOneLineError(
      await agents(['approve', id, lsUse.id]),
      new RegExp(`no approval is pending for tool use ${lsUse.id}`),
    );
    expectOneLineError(await agents(['deny', id, 'toolu_nope', '--by', 'timeout']), /by: `timeout` is reserved/);
    const refused = await handle
      .executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: 'toolu_nope', allow: 'yes' } as never] })
      .catch((e: Error) => e);
    expect((refused as Error & { cause?: Error }).cause?.message).toMatch(/allow: allow must be true or false/);
    expect(await allEvents(handle)).toHaveLength(before);
    await endSession(handle);
  });

  it('applies the policy default when an approval times out', async () => {
    const handle = await startSession(h, {
      agent: {
        tools: ['session_events'],
        sandboxes: {},
        policies: { session_events: { default: 'ask', timeoutSeconds: 2, onTimeout: 'allow' } },
      },
    });
    h.mock.script(handle.workflowId, { steps: [toolCall('session_events', { from: 0, limit: 2 })] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the first events' }] });
    const s = await statusUntil(handle, (x) => x.state === 'requires_action');
    expect(s.pending).toEqual([
      expect.objectContaining({
        kind: 'approval',
        policy: 'session_events: default ask',
        onTimeout: 'allow',
        expiresAt: expect.any(String),
      }),
    ]);
    const events = await waitForEvents(handle, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn'),
    );
    const use = events.find((e): e is EventOf<'tool_use'> => e.type === 'tool_use')!;
    expect(events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      toolUseId: use.id,
      allow: true,
      by: 'timeout',
    });
    expect(resultOf(events, use.id)).toMatchObject({
      isError: false,
      output: expect.stringContaining('"session_started"'),
    });

    // With onTimeout deny (the default), the model hears that the approval timed out.
    const strict = await startSession(h, {
      agent: {
        tools: ['session_events'],
        sandboxes: {},
        policies: { session_events: { default: 'ask', timeoutSeconds: 1 } },
      },
    });
    h.mock.script(strict.workflowId, { steps: [toolCall('session_events', {})] });
    await strict.executeUpdate(sendMessageUpdate, { args: [{ text: 'read' }] });
    const ev2 = await waitForEvents(strict, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn'),
    );
    expect(ev2.find((e) => e.type === 'tool_result')).toMatchObject({
      isError: true,
      error: { kind: 'denied', message: 'its approval timed out and the policy denied it' },
    });
    await endSession(handle);
    await endSession(strict);
  });

  it('keeps an approval pending across a SIGKILL of the brain worker', async () => {
    const handle = await startSession(h, { agent: pushPolicy });
    h.mock.script(handle.workflowId, { steps: [bashCall('git push 2>/dev/null; echo pushed')] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'push it' }] });
    const { pending } = await statusUntil(handle, (s) => s.state === 'requires_action');
    await brain.kill('SIGKILL');
    brain = await spawnBrain();
    // The new worker rebuilds the pending approval from history.
    expect((await handle.query(statusQuery)).pending).toEqual(pending);
    const approved = await agents(['approve', handle.workflowId, pending![0].toolUseId, '--json']);
    expect(approved.code).toBe(0);
    const events = await waitForEvents(handle, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn'),
    );
    expect(events.filter((e) => e.type === 'approval_resolved')).toEqual([
      expect.objectContaining({ seq: JSON.parse(approved.stdout).seq, allow: true, by: 'user' }),
    ]);
    expect(resultOf(events, pending![0].toolUseId)!.output).toBe('pushed\n[exit 0]');
    await endSession(handle);
  });

  it('keeps an approval pending across continue-as-new', async () => {
    const handle = await startSession(h, {
      agent: {
        tools: ['session_events'],
        sandboxes: {},
        policies: { session_events: 'always_ask' },
        limits: { historyEvents: 100 },
      },
    });
    const id = handle.workflowId;
    h.mock.script(id, { steps: [toolCall('session_events', { from: 0, limit: 1 })] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
    const { pending } = await statusUntil(handle, (s) => s.state === 'requires_action');
    // Messages sent while it waits grow the history past its limit: the run hands over, the approval goes with it.
    await messagesUntilHandover(handle);
    const s = await statusUntil(h.env.client.workflow.getHandle(id), (x) => (x.run ?? 1) >= 2);
    expect(s).toMatchObject({ state: 'requires_action', pending });
    const live = h.env.client.workflow.getHandle(id);
    await live.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: pending![0].toolUseId, allow: true }] });
    const events = await waitForEvents(live, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn'),
    );
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'approval_requested')).toHaveLength(1);
    expect(resultOf(events, pending![0].toolUseId)).toMatchObject({
      isError: false,
      output: expect.stringContaining('session_started'),
    });
    await endSession(live);
  });

  it('closes an approval carried across a handover when the turn is interrupted, and the next turn is valid', async () => {
    const handle = await startSession(h, {
      agent: {
        tools: ['session_events'],
        sandboxes: {},
        policies: { session_events: 'always_ask' },
        limits: { historyEvents: 100 },
      },
    });
    const id = handle.workflowId;
    h.mock.script(id, { steps: [toolCall('session_events', {})] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
    const { pending } = await statusUntil(handle, (s) => s.state === 'requires_action');
    await messagesUntilHandover(handle);
    const live = h.env.client.workflow.getHandle(id);
    await statusUntil(live, (s) => s.state === 'requires_action');
    expect((await agents(['interrupt', id, '--reason', 'changed my mind'])).code).toBe(0);
    let events = await waitForEvents(live, (ev) => ev.some((e) => e.type === 'interrupted'));
    expect(resultOf(events, pending![0].toolUseId)).toMatchObject({
      isError: true,
      output: 'interrupted before the tool finished',
    });
    const { seq } = await live.executeUpdate(sendMessageUpdate, { args: [{ text: 'hello again' }] });
    events = await waitForEvents(live, (ev) => ev.some((e) => e.seq > seq && e.type === 'assistant_message'));
    expect(events.at(-1)).toMatchObject({
      type: 'assistant_message',
      content: [{ type: 'text', text: 'You said: hello again' }],
    });
    expect(h.mock.requests(id).every((r) => r.status === 200)).toBe(true);
    expectOneLineError(await agents(['approve', id, pending![0].toolUseId]), /no approval is pending for tool use/);
    await endSession(live);
  });
});
