// Model faults: Temporal retries what the API says is transient, honours retry-after, and bounds the budget.
import { sendMessageUpdate } from '../src/session/contract';
import { allEvents, say, startHarness, startSession, waitForEvents, type Harness } from './helpers/env';
import { conversationOf } from './helpers/env';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('callModel faults', () => {
  it('retries 429 with retry-after, 529, and 500 three times, then yields one assistant_message', async () => {
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, {
      steps: [{ status: 429, retryAfter: 1 }, { status: 529 }, { status: 500 }, { status: 500 }, { status: 500 }],
    });
    const events = await say(handle, 'hello through the storm');
    const retry = ['model_retry_scheduled', 'model_retry_started'];
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      ...retry,
      ...retry,
      ...retry,
      ...retry,
      ...retry,
      'assistant_message',
    ]);
    // Each retry is logged with the attempt that failed and why, and the attempt that goes ahead.
    const scheduled = events.flatMap((e) => (e.type === 'model_retry_scheduled' ? [e] : []));
    expect(scheduled.map((e) => [e.attempt, e.error.type])).toEqual([
      [1, 'ModelError.RateLimited'],
      [2, 'ModelError.Overloaded'],
      [3, 'ModelError.Server'],
      [4, 'ModelError.Server'],
      [5, 'ModelError.Server'],
    ]);
    expect(events.flatMap((e) => (e.type === 'model_retry_started' ? [e.attempt] : []))).toEqual([2, 3, 4, 5, 6]);
    // retry-after: 1 set the first retry a second out, although the policy's interval is 50 ms.
    expect(Date.parse(scheduled[0].retryAt) - Date.parse(scheduled[0].time)).toBeGreaterThanOrEqual(1000);
    const requests = h.mock.requests(handle.workflowId);
    expect(requests.map((r) => r.status)).toEqual([429, 529, 500, 500, 500, 200]);
    // retry-after: 1 held the second attempt back by at least a second.
    expect(requests[1].at - requests[0].at).toBeGreaterThanOrEqual(1000);
  });

  it('retries a connection dropped mid-stream and a slow first byte', async () => {
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ dropMidStream: true }, { firstByteDelayMs: 1500 }] });
    const events = await say(handle, 'hello over a bad line');
    expect(events.filter((e) => e.type === 'assistant_message')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'error')).toHaveLength(0);
    expect(h.mock.requests(handle.workflowId)).toHaveLength(2);
  });

  it('abandons a response that stalls past limits.modelStreamIdleMs and retries it', async () => {
    const handle = await startSession(h, { agent: { limits: { modelStreamIdleMs: 1000 } } });
    h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 30_000 }] });
    const events = await say(handle, 'hello to a model that hangs');
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'model_retry_scheduled',
      'model_retry_started',
      'assistant_message',
    ]);
    expect(events[2]).toMatchObject({ attempt: 1, error: { type: 'ModelError.Timeout' } });
    // The turn finished on the retry while the stalled response had still not sent a byte.
    const requests = h.mock.requests(handle.workflowId);
    expect(requests.map((r) => r.status)).toEqual([0, 200]);
  });

  it('logs the retry of a local model call (limits.modelCall local) the same way', async () => {
    const handle = await startSession(h, { agent: { limits: { modelCall: 'local' } } });
    h.mock.script(handle.workflowId, { steps: [{ status: 529 }] });
    const events = await say(handle, 'hello, locally');
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'model_retry_scheduled',
      'model_retry_started',
      'assistant_message',
    ]);
    expect(events[2]).toMatchObject({ attempt: 1, error: { type: 'ModelError.Overloaded' } });
    expect(h.mock.requests(handle.workflowId).map((r) => r.status)).toEqual([529, 200]);
  });

  it('logs an error when a local model call spends limits.modelRetry, and the session waits for the user', async () => {
    const handle = await startSession(h, {
      agent: { limits: { modelCall: 'local', modelRetry: { maxAttempts: 2, initialIntervalMs: 50 } } },
    });
    h.mock.script(handle.workflowId, { steps: [{ status: 503 }, { status: 503 }] });
    const events = await say(handle, 'hi');
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'model_retry_scheduled',
      'model_retry_started',
      'error',
    ]);
    expect(events.at(-1)).toMatchObject({ kind: 'model', message: expect.stringMatching(/ModelError.Server.*503/) });
    const next = await say(handle, 'again');
    expect(next.at(-1)).toMatchObject({ type: 'assistant_message' });
  });

  it('turns a 400 into an error event, then answers the next user message', async () => {
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ status: 400, message: 'prompt is malformed' }] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'first' }] });
    const afterError = await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'error'));
    const error = afterError.find((e) => e.type === 'error')!;
    expect(error).toMatchObject({ type: 'error', kind: 'model' });
    expect(error.type === 'error' && error.message).toMatch(/ModelError.InvalidRequest.*400.*prompt is malformed/);
    // Not retried: one request only.
    expect(h.mock.requests(handle.workflowId)).toHaveLength(1);
    const events = await say(handle, 'second');
    expect(events.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'error',
      'user_message',
      'assistant_message',
    ]);
    const last = h.mock.requests(handle.workflowId).at(-1)!;
    expect(last.status).toBe(200);
    expect(conversationOf(last.body)).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'first' },
          { type: 'text', text: 'second' },
        ],
      },
    ]);
  });

  it.each([401, 403, 404])('does not retry a %i', async (status) => {
    const handle = await startSession(h);
    h.mock.script(handle.workflowId, { steps: [{ status }] });
    const events = await say(handle, 'hi');
    expect(events.at(-1)).toMatchObject({ type: 'error', kind: 'model' });
    expect(h.mock.requests(handle.workflowId)).toHaveLength(1);
  });

  it('stops retrying when limits.modelRetry is spent, and the session waits for the user', async () => {
    const handle = await startSession(h, {
      agent: { limits: { modelRetry: { maxAttempts: 3, initialIntervalMs: 50 } } },
    });
    h.mock.script(handle.workflowId, { steps: Array.from({ length: 5 }, () => ({ status: 503 })) });
    const events = await say(handle, 'hi');
    expect(events.at(-1)).toMatchObject({ type: 'error', kind: 'model' });
    expect(h.mock.requests(handle.workflowId)).toHaveLength(3);
    // Two retries were logged; the third failure spent the budget.
    expect(
      events
        .filter((e) => e.type === 'model_retry_scheduled')
        .map((e) => e.type === 'model_retry_scheduled' && e.attempt),
    ).toEqual([1, 2]);
    // With the script cleared, the next turn gets the built-in reply.
    h.mock.script(handle.workflowId, { steps: [] });
    const next = await say(handle, 'again');
    expect(next.at(-1)).toMatchObject({ type: 'assistant_message' });
    expect((await allEvents(handle)).filter((e) => e.type === 'error')).toHaveLength(1);
  });
});
