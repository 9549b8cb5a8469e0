// Pure parts: the conversation built from a log, and how model errors map to Temporal failures.
import fc from 'fast-check';
import Anthropic from '@anthropic-ai/sdk';
import { buildMessages } from '../src/session/context';
import type { SessionEvent } from '../src/session/events';
import { retryAfterMs, toModelFailure } from '../src/model/errors';
import { validateRequest } from '../src/model/mock-server';
import { logArb } from './helpers/logs';

const t = '2026-01-01T00:00:00.000Z';
const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

describe('buildMessages', () => {
  it('pairs every tool_use with its result and merges user input that arrived during the round', () => {
    const events: SessionEvent[] = [
      { seq: 0, time: t, type: 'session_started', agent: {} },
      { seq: 1, time: t, type: 'user_message', text: 'go' },
      { seq: 2, time: t, type: 'assistant_message', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }], stopReason: 'tool_use', usage },
      { seq: 3, time: t, type: 'tool_use', id: 'a', name: 'x', input: {} },
      { seq: 4, time: t, type: 'user_message', text: 'also this' },
      { seq: 5, time: t, type: 'tool_result', toolUseId: 'a', output: '', isError: true, error: { kind: 'tool', message: 'boom' } },
    ];
    expect(buildMessages(events)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: '(no output)', is_error: true }, { type: 'text', text: 'also this' }] },
    ]);
  });

  it('always yields a conversation the Messages API accepts, for any interleaving the workflow can produce', () => {
    // Turns of user input and tool rounds whose tool uses all get results, possibly cut short by an interrupt or a
    // model error (no reply), with more user input arriving at any point.
    fc.assert(
      fc.property(logArb(), (events) => {
        const messages = buildMessages(events);
        expect(() => validateRequest({ model: 'm', max_tokens: 1, messages })).not.toThrow();
      }),
    );
  });
});

describe('model error mapping', () => {
  const headers = (h: Record<string, string>) => new Headers(h);
  it.each([408, 409, 429, 500, 503, 529])('makes %i retryable', (status) => {
    const f = toModelFailure(Anthropic.APIError.generate(status, { error: { message: 'x' } }, 'x', headers({})));
    expect(f.nonRetryable).toBe(false);
  });
  it.each([400, 401, 403, 404])('makes %i non-retryable', (status) => {
    const f = toModelFailure(Anthropic.APIError.generate(status, { error: { message: 'x' } }, 'x', headers({})));
    expect(f.nonRetryable).toBe(true);
  });
  it('honours retry-after in seconds, as a date, and retry-after-ms', () => {
    expect(retryAfterMs(headers({ 'retry-after': '3' }))).toBe(3000);
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '3' }))).toBe(250);
    expect(retryAfterMs(headers({ 'retry-after': new Date(10_000).toUTCString() }), 4000)).toBe(6000);
    const f = toModelFailure(Anthropic.APIError.generate(429, { error: { message: 'slow down' } }, 'slow down', headers({ 'retry-after': '2' })));
    expect(f.type).toBe('ModelError.RateLimited');
    expect(f.nextRetryDelay).toBe(2000);
  });
  it('makes connection errors retryable', () => {
    const f = toModelFailure(new Anthropic.APIConnectionError({ message: 'ECONNRESET' }));
    expect(f).toMatchObject({ type: 'ModelError.Connection', nonRetryable: false });
  });
});
