// A thread's call that waits for a confirmation is cross-posted onto its coordinator's log once, although the thread
// and then the coordinator continue as new while it waits, and settled once after the confirmation.
import type { SessionEvent } from '../src/session/events';
import { childSessionId } from '../src/workflows/subagents';
import { resolveToolUseUpdate, sendMessageUpdate } from '../src/session/contract';
import { messagesUntilHandover, toolStep } from './helpers/actions';
import { startHarness, startSession, testAgent, turnDone, waitForEvents, type Harness } from './helpers/env';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: `xpost-${process.pid}` });
});
afterAll(async () => {
  await h?.stop();
});

it('cross-posts a waiting call once and settles it once, across continue-as-new of the thread and the coordinator', async () => {
  const id = `xpost-${process.pid}`;
  const thread = childSessionId(id, 'toolu_delegate');
  h.mock.script(thread, {
    steps: [toolStep('bash', { command: 'echo asked' }), { reply: { content: [{ type: 'text', text: 'ran it' }] } }],
  });
  const coordinator = await startSession(h, {
    id,
    agent: {
      tools: ['bash', 'delegate', 'message_thread'],
      limits: { historyEvents: 100 },
      roster: [
        {
          name: 'careful',
          agent: {
            name: 'careful',
            model: testAgent().model,
            tools: ['bash'],
            policies: { bash: 'always_ask' },
            limits: { historyEvents: 100 },
          },
        },
      ],
    },
  });
  h.mock.script(id, {
    steps: [
      {
        reply: {
          content: [
            { type: 'tool_use', id: 'toolu_delegate', name: 'delegate', input: { agent: 'careful', message: 'ask' } },
          ],
        },
      },
      { reply: { content: [{ type: 'text', text: 'done' }] } },
    ],
  });
  const threadHandle = h.env.client.workflow.getHandle(thread);
  try {
    const { seq } = await coordinator.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    const posts = (events: SessionEvent[]) =>
      events.filter((e): e is Extract<SessionEvent, { type: 'thread_tool_call' }> => e.type === 'thread_tool_call');
    const [waiting] = posts(await waitForEvents(coordinator, (ev) => posts(ev).length >= 1));
    expect(waiting).toMatchObject({ state: 'waiting', name: 'bash', waitsFor: 'confirmation' });
    // Both continue as new while the call waits.
    await messagesUntilHandover(threadHandle);
    await messagesUntilHandover(coordinator);
    await threadHandle.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: waiting.toolUseId, allow: true }] });
    const done = await waitForEvents(coordinator, turnDone(seq));
    const after = await waitForEvents(coordinator, (ev) => posts(ev).some((p) => p.state === 'settled'));
    expect(posts(after).map((p) => [p.toolUseId, p.state])).toEqual([
      [waiting.toolUseId, 'waiting'],
      [waiting.toolUseId, 'settled'],
    ]);
    expect(done.some((e) => e.type === 'tool_result' && e.toolUseId === 'toolu_delegate' && !e.isError)).toBe(true);
  } finally {
    await coordinator.terminate('test over').catch(() => undefined);
    await threadHandle.terminate('test over').catch(() => undefined);
  }
});
