// The fast tier: the session's decision loop, with the real workflow on a real Temporal dev server and a real
// worker, and the model scripted in process (test/helpers/scripted-model.ts): no HTTP, no sandbox. Every request
// the model gets is checked as the real Messages API would check it, and each test ends with none refused.
//
// The environment is the local dev server (createTestEnv), not a time-skipping one: that one's test server binary
// would be downloaded, and this machine has no internet. Nor is one needed: a slow call is a scripted gate the
// test releases (or never does), not a delay, and no assertion is about time.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowHandle } from '@temporalio/client';
import Anthropic from '@anthropic-ai/sdk';
import { PREFILL_REFUSAL } from '../src/dev/request-checks';
import type { ModelRequest } from '../src/model/model-client';
import type { AgentInput } from '../src/session/agent';
import type { EventOf, SessionEvent } from '../src/session/events';
import { EMPTY_REPLY_NUDGE } from '../src/session/harness';
import { interruptSignal, sendMessageUpdate, statusQuery } from '../src/session/contract';
import type { RunningWorker } from '../src/worker';
import { statusUntil } from './helpers/actions';
import {
  allEvents,
  createTestEnv,
  expectGapFreeAndValid,
  say,
  startSession,
  startTestWorker,
  uniqueId,
  waitForEvents,
} from './helpers/env';
import { ScriptedModel, type ScriptedStep } from './helpers/scripted-model';

const model = new ScriptedModel();
let env: TestWorkflowEnvironment;
let worker: RunningWorker;
beforeAll(async () => {
  env = await createTestEnv();
  worker = await startTestWorker(env.address, model);
});
afterAll(async () => {
  await worker?.shutdown();
  await env?.teardown();
});
afterEach(() => {
  // No request of the test was one the API would refuse, and every call had a scripted step.
  expect(model.problems.splice(0)).toEqual([]);
});

const text = (t: string): ScriptedStep => ({ reply: { content: [{ type: 'text', text: t }] } });
const EMPTY: ScriptedStep = { reply: { content: [] } };
/** A reply that reads `limit` events of the session's own log from `from`, with a line of text first. */
const readLog = (from: number, limit: number): ScriptedStep => ({
  reply: {
    content: [
      { type: 'text', text: `Reading from ${from}.` },
      { type: 'tool_use', name: 'session_events', input: { from, limit } },
    ],
  },
});

/** Starts a session without sandboxes whose model calls are answered by `steps`. */
async function start(steps: ScriptedStep[], agent: Partial<AgentInput> = {}): Promise<WorkflowHandle> {
  const id = uniqueId('loop');
  model.script(id, { steps });
  return startSession({ env }, { id, agent: { tools: ['session_events'], sandboxes: {}, ...agent } });
}

const typesOf = (events: SessionEvent[]) => events.map((e) => e.type);
const ofType = <T extends SessionEvent['type']>(events: SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);
/** The conversation of each request the session's model got, in order. */
const conversations = (handle: WorkflowHandle): ModelRequest['messages'][] =>
  model.requests(handle.workflowId).map((c) => c.request.messages);
const user = (...texts: string[]) => ({ role: 'user', content: texts.map((t) => ({ type: 'text', text: t })) });
const assistant = (...texts: string[]) => ({
  role: 'assistant',
  content: texts.map((t) => ({ type: 'text', text: t })),
});

/** A log with `n` replies, or one with an error event, which ends the wait so the assertions show it. */
const replies = (n: number) => (events: SessionEvent[]) =>
  ofType(events, 'assistant_message').length >= n || events.some((e) => e.type === 'error');

/** Waits until the turn has ended: the session waits for the user again. */
const idle = (handle: WorkflowHandle) => statusUntil(handle, (s) => s.state === 'waiting_for_user');

describe('the decision loop', () => {
  it('answers a plain turn with one model call and one reply', async () => {
    const handle = await start([
      { reply: { content: [{ type: 'text', text: 'Hi.' }], usage: { inputTokens: 12, outputTokens: 3 } } },
    ]);
    const events = await say(handle, 'Hello');
    expectGapFreeAndValid(events);
    expect(typesOf(events)).toEqual(['session_started', 'user_message', 'assistant_message']);
    expect(events[2]).toMatchObject({
      content: [{ type: 'text', text: 'Hi.' }],
      stopReason: 'end_turn',
      throughSeq: 1,
    });
    const [call] = model.requests(handle.workflowId);
    expect(call.request).toMatchObject({
      sessionId: handle.workflowId,
      model: 'claude-test',
      messages: [user('Hello')],
    });
    expect(call.request.tools.map((t) => t.name)).toEqual(['session_events']);
    expect(model.requests(handle.workflowId)).toHaveLength(1);
    expect((await handle.query(statusQuery)).usage).toMatchObject({ inputTokens: 12, outputTokens: 3 });
  });

  it('runs a session_events tool round: the call, its result from the log, and the reply that read it', async () => {
    const handle = await start([readLog(0, 2), text('The log starts with the session and your message.')]);
    const events = await say(handle, 'What has happened so far?');
    expectGapFreeAndValid(events);
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      'assistant_message',
      'tool_use',
      'tool_result',
      'assistant_message',
    ]);
    const [, , asked, use, result, answer] = events;
    if (asked.type !== 'assistant_message' || use.type !== 'tool_use' || result.type !== 'tool_result')
      throw new Error('unexpected event types');
    expect(asked.stopReason).toBe('tool_use');
    expect(use).toMatchObject({ id: asked.content[1].id, name: 'session_events', input: { from: 0, limit: 2 } });
    expect(result).toMatchObject({ toolUseId: use.id, isError: false });
    const slice = JSON.parse(result.output) as { events: SessionEvent[]; nextSeq: number };
    expect([slice.events.map((e) => e.type), slice.nextSeq]).toEqual([['session_started', 'user_message'], 2]);
    expect(answer).toMatchObject({ stopReason: 'end_turn', throughSeq: 4 });
    // The second call carried the reply with its tool call and, in the next user turn, the tool's output.
    expect(conversations(handle)[1]).toEqual([
      user('What has happened so far?'),
      { role: 'assistant', content: asked.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: result.output }] },
    ]);
  });

  it('runs several tool rounds in one turn, one of them with two calls, until the model stops calling tools', async () => {
    const twoCalls: ScriptedStep = {
      reply: {
        content: [
          { type: 'tool_use', id: 'toolu_a', name: 'session_events', input: { from: 0, limit: 1 } },
          { type: 'tool_use', id: 'toolu_b', name: 'session_events', input: { from: 1, limit: 1 } },
        ],
      },
    };
    const handle = await start([readLog(0, 1), twoCalls, readLog(2, 1), text('Read it all.')]);
    const events = await say(handle, 'Read the start, three times over.');
    expectGapFreeAndValid(events);
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      ...['assistant_message', 'tool_use', 'tool_result'],
      ...['assistant_message', 'tool_use', 'tool_use', 'tool_result', 'tool_result'],
      ...['assistant_message', 'tool_use', 'tool_result'],
      'assistant_message',
    ]);
    expect(ofType(events, 'tool_result').map((r) => [r.toolUseId, r.isError])).toEqual([
      [ofType(events, 'tool_use')[0].id, false],
      ['toolu_a', false],
      ['toolu_b', false],
      [ofType(events, 'tool_use')[3].id, false],
    ]);
    // One call a round, each carrying the whole turn so far; the two results of the second round share one user turn.
    const sent = conversations(handle);
    expect(sent.map((m) => m.length)).toEqual([1, 3, 5, 7]);
    expect(sent[2][4].content.map((b) => [b.type, b.tool_use_id])).toEqual([
      ['tool_result', 'toolu_a'],
      ['tool_result', 'toolu_b'],
    ]);
    expect(ofType(events, 'assistant_message').map((e) => e.throughSeq)).toEqual([1, 4, 9, 12]);
  });

  it('stops a turn at limits.maxToolRoundsPerTurn with an error event, and answers the next message', async () => {
    const handle = await start([readLog(0, 1), readLog(0, 1), text('Back to you.')], {
      limits: { maxToolRoundsPerTurn: 2 },
    });
    let events = await say(handle, 'Keep reading.');
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      ...Array(2).fill(['assistant_message', 'tool_use', 'tool_result']).flat(),
      'error',
    ]);
    expect(events.at(-1)).toMatchObject({
      kind: 'limit',
      message: 'stopped after 2 tool rounds in one turn (limits.maxToolRoundsPerTurn)',
    });
    expect(model.requests(handle.workflowId)).toHaveLength(2);
    events = await say(handle, 'Enough.');
    expectGapFreeAndValid(events);
    expect(typesOf(events).slice(-2)).toEqual(['user_message', 'assistant_message']);
    expect(events.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'Back to you.' }] });
    // The last round's result and the new message are one user turn, the result first.
    const last = conversations(handle)[2];
    expect(last.at(-1)!.content.map((b) => b.type)).toEqual(['tool_result', 'text']);
  });

  it('nudges a model that replies empty (default@2), at most twice a turn', async () => {
    const handle = await start([EMPTY, text('Here is my answer.'), EMPTY, EMPTY, EMPTY], { harness: 'default@2' });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Answer me.' }] });
    let events = await waitForEvents(handle, replies(2));
    expect(events.map((e) => [e.type, e.type === 'user_message' ? (e.source ?? 'user') : ''])).toEqual([
      ['session_started', ''],
      ['user_message', 'user'],
      ['assistant_message', ''],
      ['user_message', 'harness'],
      ['assistant_message', ''],
    ]);
    expect(events[3]).toMatchObject({ text: EMPTY_REPLY_NUDGE });
    expect(events[4]).toMatchObject({ content: [{ type: 'text', text: 'Here is my answer.' }] });
    // The model saw its empty reply as a turn of its own, then the nudge.
    expect(conversations(handle)[1].slice(-2)).toEqual([assistant('(no content)'), user(EMPTY_REPLY_NUDGE)]);

    // Three empty replies in a row: two nudges, then the turn ends.
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'And again.' }] });
    await waitForEvents(handle, replies(5));
    await idle(handle);
    events = await allEvents(handle);
    expectGapFreeAndValid(events);
    expect(typesOf(events.slice(5))).toEqual([
      'user_message',
      'assistant_message',
      'user_message',
      'assistant_message',
      'user_message',
      'assistant_message',
    ]);
    expect(ofType(events, 'user_message').filter((e) => e.source === 'harness')).toHaveLength(3);
    expect(model.requests(handle.workflowId)).toHaveLength(5);
  });

  it('turns a model call that fails after its retries into an error event, and answers the next message', async () => {
    const handle = await start(
      [
        { status: 500, message: 'upstream down' },
        { status: 500, message: 'upstream down' },
        text('Recovered.'),
        { status: 400, message: 'bad request' },
        text('Fine again.'),
      ],
      {
        limits: { modelRetry: { maxAttempts: 2, initialIntervalMs: 10, backoffCoefficient: 1, maximumIntervalMs: 10 } },
      },
    );
    let events = await say(handle, 'First.');
    // The first 500 is a logged retry; the second spends the budget.
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      'model_retry_scheduled',
      'model_retry_started',
      'error',
    ]);
    expect(events[2]).toMatchObject({ attempt: 1, error: { type: 'ModelError.Server' } });
    expect(events[4]).toMatchObject({
      kind: 'model',
      message: expect.stringMatching(/^ModelError\.Server: model API returned 500: .*upstream down/),
    });
    // Both attempts sent the same conversation.
    expect(conversations(handle)).toEqual([[user('First.')], [user('First.')]]);

    events = await say(handle, 'Second.');
    expect(events.at(-1)).toMatchObject({ type: 'assistant_message', content: [{ type: 'text', text: 'Recovered.' }] });
    // The unanswered message and the next one went as one user turn.
    expect(conversations(handle)[2]).toEqual([user('First.', 'Second.')]);

    // A refusal (400) is not retried: one call, then the error event.
    events = await say(handle, 'Third.');
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      kind: 'model',
      message: expect.stringMatching(/^ModelError\.InvalidRequest: /),
    });
    expect(model.requests(handle.workflowId)).toHaveLength(4);
    events = await say(handle, 'Fourth.');
    expectGapFreeAndValid(events);
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      'model_retry_scheduled',
      'model_retry_started',
      'error',
      'user_message',
      'assistant_message',
      'user_message',
      'error',
      'user_message',
      'assistant_message',
    ]);
    expect(events.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'Fine again.' }] });
  });

  it('answers a message sent while the model call is in flight once, after that reply, in causal order', async () => {
    const gate = uniqueId('in-flight');
    const handle = await start([
      { gate, reply: { content: [{ type: 'text', text: 'Thinking it over.' }] } },
      text('Now to your second message.'),
    ]);
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'First.' }] });
    await model.whenRequests(handle.workflowId, 1);
    const { seq } = await handle.executeUpdate(sendMessageUpdate, {
      args: [{ text: 'Sent while the model was generating.' }],
    });
    expect(seq).toBe(2);
    model.release(gate);
    await waitForEvents(handle, replies(2));
    await idle(handle);
    const events = await allEvents(handle);
    expectGapFreeAndValid(events);
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      'user_message',
      'assistant_message',
      'assistant_message',
    ]);
    // The first reply read only the first message; the second call read the second one, and answered it.
    expect(ofType(events, 'assistant_message').map((e) => e.throughSeq)).toEqual([1, 3]);
    // Two calls: the second message was answered once, and its request puts it after the reply that did not see it.
    expect(conversations(handle)).toEqual([
      [user('First.')],
      [user('First.'), assistant('Thinking it over.'), user('Sent while the model was generating.')],
    ]);
  });

  it('compacts a window over its token budget with a summariser call that leaves the script alone', async () => {
    const answers = ['One.', 'Two.', 'Three.', 'Four.'];
    const handle = await start(answers.map(text), { limits: { contextTokens: 1000 } });
    for (let i = 1; i <= answers.length; i++) await say(handle, `turn ${i}: ${'lorem ipsum '.repeat(100)}`);
    const events = await allEvents(handle);
    expectGapFreeAndValid(events);
    // Every turn got its scripted reply, in order, however many compaction calls came between.
    expect(ofType(events, 'assistant_message').map((e) => e.content[0].text)).toEqual(answers);
    const compactions = ofType(events, 'context_compacted');
    expect(compactions.length).toBeGreaterThanOrEqual(1);
    const calls = model.requests(handle.workflowId);
    expect(calls.filter((c) => c.compaction)).toHaveLength(compactions.length);
    for (const c of compactions)
      expect([c.summary, c.tokensAfter < c.tokensBefore]).toEqual([expect.stringMatching(/\[1\] turn 1/), true]);
    // After a compaction, the next request carries the summary in its system prompt and no longer holds turn 1.
    const last = calls.at(-1)!.request;
    expect(JSON.stringify(last.system)).toContain('<summary>');
    expect(JSON.stringify(last.messages)).not.toContain('turn 1:');
  });

  it('interrupts a slow call: the call is aborted, interrupted is appended, and the next message is answered', async () => {
    const handle = await start([
      { gate: uniqueId('never-released'), reply: { content: [{ type: 'text', text: 'Too late.' }] } },
      text('A quick answer.'),
    ]);
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'A slow question.' }] });
    const [slow] = await model.whenRequests(handle.workflowId, 1);
    expect((await handle.query(statusQuery)).state).toBe('running');
    await handle.signal(interruptSignal, { reason: 'changed my mind' });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
    await idle(handle);
    // The activity was cancelled, and the call it held saw its abort signal.
    await expect(slow.settled).resolves.toBe('aborted');
    const events = await say(handle, 'A quick question.');
    expectGapFreeAndValid(events);
    expect(typesOf(events)).toEqual([
      'session_started',
      'user_message',
      'interrupted',
      'user_message',
      'assistant_message',
    ]);
    expect(events[2]).toMatchObject({ reason: 'changed my mind' });
    expect(events[4]).toMatchObject({ content: [{ type: 'text', text: 'A quick answer.' }] });
    expect(conversations(handle)).toEqual([
      [user('A slow question.')],
      [user('A slow question.', 'A quick question.')],
    ]);
  });
});

describe('the scripted model', () => {
  const request = (messages: unknown[]): ModelRequest => ({
    sessionId: 'checks',
    model: 'claude-test',
    messages: messages as ModelRequest['messages'],
    tools: [],
    maxTokens: 100,
  });
  const refusalOf = (m: ScriptedModel, messages: unknown[]) =>
    m.createMessage(request(messages), {}).then(
      () => 'answered',
      (e: unknown) =>
        e instanceof Anthropic.APIError
          ? `${e.status} ${(e.error as { error: { message: string } }).error.message}`
          : (e as Error).message,
    );

  it('refuses, as the real API would, a request the workflow must never send, and records each refusal', async () => {
    const m = new ScriptedModel();
    m.script('checks', { steps: [text('ok')] });
    const toolUse = {
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'session_events', input: {} }],
    };
    expect(await refusalOf(m, [user('hi'), assistant('a reply')])).toBe(`400 ${PREFILL_REFUSAL}`);
    expect(await refusalOf(m, [user('hi'), toolUse, user('no result')])).toMatch(
      /^400 messages\.2: `tool_use` ids were found without `tool_result` blocks/,
    );
    expect(await refusalOf(m, [user('hi'), user('again')])).toBe('400 messages.1: two user turns in a row');
    expect(await refusalOf(m, [user('')])).toMatch(
      /^400 messages\.0\.content\.0\.text: text content blocks must be non-empty/,
    );
    expect(m.problems.map((p) => p.sessionId)).toEqual(['checks', 'checks', 'checks', 'checks']);
    // None of them used the script: a valid request still gets its step, and one past the script is refused.
    expect(await refusalOf(m, [user('hi')])).toBe('answered');
    expect(await refusalOf(m, [user('hi')])).toBe('no scripted step for call 6 of session checks');
    expect(m.problems).toHaveLength(5);
  });
});
