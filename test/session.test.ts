// The session workflow end to end: real dev server, real worker, real SDK against the local Messages API server.
import { spawnSync } from 'node:child_process';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import {
  endSignal,
  interruptSignal,
  sendMessageUpdate,
  statusQuery,
  userMessageSignal,
  MAX_MESSAGE_BYTES,
} from '../src/session/contract';
import {
  allEvents,
  expectGapFreeAndValid,
  say,
  startHarness,
  startSession,
  temporalCliPath,
  waitForEvents,
  type Harness,
} from './helpers/env';
import { conversationOf } from './helpers/env';
import { readLogStep, toolStep } from './helpers/actions';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('sessionWorkflow', () => {
  it('runs three user turns with a tool round trip into a gap-free log that matches the contract', async () => {
    const handle = await startSession(h, { message: { text: 'Hello there' } });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message'));
    h.mock.script(handle.workflowId, { steps: [readLogStep] });
    await say(handle, 'What have we said so far?');
    await say(handle, 'Thanks!');
    await handle.signal(endSignal, { reason: 'done' });
    const result = await handle.result();
    const events = await allEvents(handle);
    expectGapFreeAndValid(events);
    expect(result.lastSeq).toBe(events.length - 1);
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'assistant_message',
      'user_message',
      'assistant_message',
      'tool_use',
      'tool_result',
      'assistant_message',
      'user_message',
      'assistant_message',
      'session_ended',
    ]);
    const toolUse = events[5];
    const toolResult = events[6];
    if (toolUse.type !== 'tool_use' || toolResult.type !== 'tool_result') throw new Error('unexpected event types');
    expect(toolUse.name).toBe('session_events');
    expect(toolResult.toolUseId).toBe(toolUse.id);
    expect(toolResult.isError).toBe(false);
    // The tool returned the session's own log: its first events are the ones above.
    const slice = JSON.parse(toolResult.output) as { events: { seq: number; type: string }[] };
    expect(slice.events.map((e) => e.type).slice(0, 5)).toEqual([
      'session_started',
      'user_message',
      'assistant_message',
      'user_message',
      'assistant_message',
    ]);
    // Every model call was a conversation the API accepts, and carried the session id as metadata.user_id.
    const requests = h.mock.requests(handle.workflowId);
    expect(requests).toHaveLength(4);
    expect(requests.every((r) => r.status === 200)).toBe(true);
    expect(requests.every((r) => (r.body.metadata as { user_id: string }).user_id === handle.workflowId)).toBe(true);
    expect(requests.every((r) => r.body.stream === true)).toBe(true);
    const status = await handle.query(statusQuery);
    expect(status.state).toBe('ended');
    expect(status.usage.inputTokens).toBeGreaterThan(0);
  });

  it('offers every session of one worker the same tool specs, field descriptions included', async () => {
    // Each session evaluates the tool modules anew, while their schemas are built once per worker.
    const specs: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const handle = await startSession(h);
      await say(handle, `Hello ${i}`);
      specs.push(h.mock.requests(handle.workflowId)[0].body.tools);
      await handle.signal(endSignal, {});
    }
    expect(specs[1]).toEqual(specs[0]);
    expect(specs[2]).toEqual(specs[0]);
    const bash = (
      specs[0] as { name: string; input_schema: { properties: Record<string, { description?: string }> } }[]
    ).find((t) => t.name === 'bash');
    expect(bash?.input_schema.properties.command.description).toBe('the bash command to run');
  });

  it('accepts input by signal, by update and by a plain-JSON signal from the Temporal CLI', async () => {
    const handle = await startSession(h);
    await handle.signal(userMessageSignal, { text: 'by signal' });
    await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 1);
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'by update' }] });
    expect(seq).toBe(3);
    await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 2);
    const cli = spawnSync(
      temporalCliPath(),
      [
        'workflow',
        'signal',
        '--address',
        h.env.address,
        '--workflow-id',
        handle.workflowId,
        '--name',
        'userMessage',
        '--input',
        '{"text":"by the temporal CLI"}',
      ],
      { encoding: 'utf8' },
    );
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);
    const events = await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 3);
    const texts = events.flatMap((e) => (e.type === 'user_message' ? [e.text] : []));
    expect(texts).toEqual(['by signal', 'by update', 'by the temporal CLI']);
    const replies = events.flatMap((e) => (e.type === 'assistant_message' ? [e.content[0].text] : []));
    expect(replies).toEqual(['You said: by signal', 'You said: by update', 'You said: by the temporal CLI']);
  });

  it('rejects empty, oversized and mistyped messages with a clear error and appends nothing', async () => {
    const handle = await startSession(h);
    const bad: [unknown, RegExp][] = [
      [{ text: '' }, /text must not be empty/],
      [{ text: '   ' }, /text must not be empty/],
      [{ text: 'x'.repeat(MAX_MESSAGE_BYTES + 1) }, /at most 1048576 bytes/],
      [{ text: 'é'.repeat(MAX_MESSAGE_BYTES / 2 + 1) }, /at most 1048576 bytes/],
      [{ text: 42 }, /text must be a string/],
      [{ text: 'ok', extra: true }, /Unrecognized key/i],
      [{ text: 'ok', messageId: 7 }, /messageId/],
    ];
    for (const [input, message] of bad) {
      const err = await handle.executeUpdate(sendMessageUpdate, { args: [input as never] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause?.message).toMatch(message);
    }
    for (const [input] of bad) await handle.signal(userMessageSignal, input as never);
    const cli = spawnSync(
      temporalCliPath(),
      [
        'workflow',
        'signal',
        '--address',
        h.env.address,
        '--workflow-id',
        handle.workflowId,
        '--name',
        'userMessage',
        '--input',
        '{"text":""}',
      ],
      { encoding: 'utf8' },
    );
    expect(cli.status).toBe(0);
    // A valid message afterwards proves the signals above were processed before it, and appended nothing.
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'valid' }] });
    expect(seq).toBe(1);
    const events = await allEvents(handle);
    expect(events.filter((e) => e.type === 'user_message')).toHaveLength(1);
    expect(h.mock.requests(handle.workflowId).length).toBeLessThanOrEqual(1);
  });

  it('appends a repeated messageId once, by signal or by update', async () => {
    const handle = await startSession(h);
    const first = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'once', messageId: 'm-1' }] });
    const again = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'once', messageId: 'm-1' }] });
    expect(again.seq).toBe(first.seq);
    await handle.signal(userMessageSignal, { text: 'once', messageId: 'm-1' });
    await handle.signal(userMessageSignal, { text: 'twice', messageId: 'm-2' });
    await handle.signal(userMessageSignal, { text: 'twice', messageId: 'm-2' });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'marker' }] });
    const events = await allEvents(handle);
    expect(
      events.filter((e) => e.type === 'user_message').map((e) => (e.type === 'user_message' ? e.text : '')),
    ).toEqual(['once', 'twice', 'marker']);
  });

  it('interrupts a model call in flight, appends interrupted, and answers the next message', async () => {
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 30_000 }] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'a slow question' }] });
    const deadline = Date.now() + 20_000;
    while (h.mock.requests(handle.workflowId).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect((await handle.query(statusQuery)).state).toBe('running');
    await handle.signal(interruptSignal, { reason: 'changed my mind' });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
    expect((await handle.query(statusQuery)).state).toBe('waiting_for_user');
    await say(handle, 'a quick question');
    const events = await allEvents(handle);
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'interrupted',
      'user_message',
      'assistant_message',
    ]);
    const interrupted = events[2];
    expect(interrupted.type === 'interrupted' && interrupted.reason).toBe('changed my mind');
    // The next call carried both user messages, merged into one user turn the API accepts.
    const last = h.mock.requests(handle.workflowId).at(-1)!;
    expect(last.status).toBe(200);
    expect(conversationOf(last.body)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a slow question' },
          { type: 'text', text: 'a quick question' },
        ],
      },
    ]);
  });

  it('closes an interrupted tool round with error results so the conversation stays valid', async () => {
    const handle = await startSession(h);
    // The first reply asks for the tool; the second call (with the tool result) hangs until interrupted.
    h.mock.script(handle.workflowId, {
      steps: [
        { reply: { content: [{ type: 'tool_use', name: 'session_events', input: {} }] } },
        { firstByteDelayMs: 30_000 },
      ],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'tool_result'));
    const deadline = Date.now() + 20_000;
    while (h.mock.requests(handle.workflowId).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    await handle.signal(interruptSignal, {});
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
    await say(handle, 'and now?');
    expect(h.mock.requests(handle.workflowId).at(-1)!.status).toBe(200);
  });

  it('ends on the end signal, even mid-turn, and refuses input afterwards', async () => {
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 30_000 }] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'slow' }] });
    await handle.signal(endSignal, { reason: 'user left' });
    const result = await handle.result();
    expect(result.reason).toBe('user left');
    const events = await allEvents(handle);
    expect(events.at(-1)).toMatchObject({ type: 'session_ended', reason: 'user left' });
    expect((await handle.query(statusQuery)).state).toBe('ended');
  });
});

describe('a malformed sandbox tool call', () => {
  it('is answered with the refusal before anything runs: no sandbox is provisioned for it', async () => {
    const handle = await startSession(h, { agent: { tools: ['bash', 'str_replace_based_edit_tool'] } });
    h.mock.script(handle.workflowId, {
      steps: [toolStep('bash', { command: '' }), toolStep('str_replace_based_edit_tool', { command: 'view' })],
    });
    const events = await say(handle, 'Run something');
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((r) => (r.type === 'tool_result' ? [r.isError, r.output] : []))).toEqual([
      [true, 'invalid input for bash: command: command must not be empty'],
      [true, 'invalid input for str_replace_based_edit_tool: path: Invalid input: expected string, received undefined'],
    ]);
    expect(events.filter((e) => e.type === 'sandbox_provisioned')).toEqual([]);
    expect((await handle.query(statusQuery)).sandboxes).toEqual([]);
  });
});
