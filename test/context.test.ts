// Pure parts: the conversation built from a log, and how model errors map to Temporal failures.
import fc from 'fast-check';
import Anthropic from '@anthropic-ai/sdk';
import { buildMessages, causalOrder, CONTINUE_NOTE } from '../src/session/context';
import type { SessionEvent } from '../src/session/events';
import { retryAfterMs, toModelFailure } from '../src/model/model-errors';
import { validateRequest } from '../src/dev/request-checks';
import { logArb, sessionArb } from './helpers/logs';

const t = '2026-01-01T00:00:00.000Z';
const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

describe('buildMessages', () => {
  it('pairs every tool_use with its result and merges user input that arrived during the round', () => {
    const events: SessionEvent[] = [
      { seq: 0, time: t, type: 'session_started', agent: {} },
      { seq: 1, time: t, type: 'user_message', text: 'go' },
      {
        seq: 2,
        time: t,
        type: 'assistant_message',
        content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }],
        stopReason: 'tool_use',
        usage,
      },
      { seq: 3, time: t, type: 'tool_use', id: 'a', name: 'x', input: {} },
      { seq: 4, time: t, type: 'user_message', text: 'also this' },
      {
        seq: 5,
        time: t,
        type: 'tool_result',
        toolUseId: 'a',
        output: '',
        isError: true,
        error: { kind: 'tool', message: 'boom' },
      },
    ];
    expect(buildMessages(events)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: '(no output)', is_error: true },
          { type: 'text', text: 'also this' },
        ],
      },
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

/** Each turn's role, checked strictly: the real API would combine two turns of one role; the builder never sends them. */
function expectStrictTurns(messages: { role: string }[]) {
  expect(messages[0].role).toBe('user');
  expect(messages[messages.length - 1].role).toBe('user');
  messages.forEach((m, i) => i > 0 && expect(m.role).not.toBe(messages[i - 1].role));
}

const textsOf = (messages: { role: string; content: { type: string; text?: string }[] }[]) =>
  messages.flatMap((m, i) =>
    m.role === 'user' ? m.content.filter((b) => b.type === 'text').map((b) => ({ text: b.text!, turn: i })) : [],
  );

describe('the conversation follows causality, not arrival', () => {
  it('puts input that arrived during a model call after the reply that did not see it', () => {
    const events: SessionEvent[] = [
      { seq: 0, time: t, type: 'session_started', agent: {} },
      { seq: 1, time: t, type: 'user_message', text: 'first' },
      { seq: 2, time: t, type: 'user_message', text: 'sent while the model was generating' },
      {
        seq: 3,
        time: t,
        type: 'assistant_message',
        content: [{ type: 'text', text: 'answer to first' }],
        stopReason: 'end_turn',
        usage,
        throughSeq: 1,
      },
    ];
    expect(buildMessages(events)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'answer to first' }] },
      { role: 'user', content: [{ type: 'text', text: 'sent while the model was generating' }] },
    ]);
    expect(causalOrder(events).map((e) => e.seq)).toEqual([0, 1, 3, 2]);
  });

  it('merges input that arrived during a call with the results of the tools that call asked for', () => {
    const events: SessionEvent[] = [
      { seq: 0, time: t, type: 'session_started', agent: {} },
      { seq: 1, time: t, type: 'user_message', text: 'go' },
      { seq: 2, time: t, type: 'user_message', text: 'and this' },
      {
        seq: 3,
        time: t,
        type: 'assistant_message',
        content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }],
        stopReason: 'tool_use',
        usage,
        throughSeq: 1,
      },
      { seq: 4, time: t, type: 'tool_use', id: 'a', name: 'x', input: {} },
      { seq: 5, time: t, type: 'tool_result', toolUseId: 'a', output: 'ok', isError: false },
    ];
    expect(buildMessages(events)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: 'ok' },
          { type: 'text', text: 'and this' },
        ],
      },
    ]);
  });

  it('gives every model call a request the strict API accepts, and answers every message once, after what it did not see', () => {
    fc.assert(
      fc.property(sessionArb(), ({ events, calls, inputs }) => {
        for (const through of calls) {
          const messages = buildMessages(events.filter((e) => e.seq <= through));
          expectStrictTurns(messages);
          expect(() => validateRequest({ model: 'm', max_tokens: 1, messages })).not.toThrow();
        }
        const all = buildMessages(events);
        const seen = textsOf(all as never).filter((x) => x.text !== CONTINUE_NOTE);
        expect(seen.map((x) => x.text).sort()).toEqual([...inputs].sort());
        // A message comes after every reply whose call read less than it, and before every reply whose call read it.
        const replyTurns = all.map((m, i) => ({ m, i })).filter((x) => x.m.role === 'assistant');
        const replies = events.filter((e) => e.type === 'assistant_message');
        for (const e of events) {
          if (e.type !== 'user_message') continue;
          const turn = seen.find((x) => x.text === e.text)!.turn;
          replies.forEach((r, k) => {
            if (r.type !== 'assistant_message') return;
            if (r.throughSeq! < e.seq) expect(turn).toBeGreaterThan(replyTurns[k].i);
            else expect(turn).toBeLessThan(replyTurns[k].i);
          });
        }
      }),
      { numRuns: 300 },
    );
  });

  it('never sends a trailing assistant turn or two turns of one role, whatever order the log holds', () => {
    const event = fc.oneof(
      fc.string({ minLength: 1, maxLength: 20 }).map((text) => ({ type: 'user_message' as const, text })),
      fc
        .record({
          text: fc.string({ minLength: 1, maxLength: 20 }),
          through: fc.option(fc.nat({ max: 40 }), { nil: undefined }),
        })
        .map(({ text, through }) => ({
          type: 'assistant_message' as const,
          content: [{ type: 'text', text }],
          stopReason: 'end_turn',
          usage,
          ...(through === undefined ? {} : { throughSeq: through }),
        })),
      fc.constant({ type: 'interrupted' as const, reason: 'x' }),
    );
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 40 }), (raw) => {
        const events = raw.map((e, seq) => ({ ...e, seq, time: t })) as SessionEvent[];
        const messages = buildMessages(events);
        if (messages.length === 0) return;
        expect(messages[messages.length - 1].role).toBe('user');
        messages.forEach((m, i) => i > 0 && expect(m.role).not.toBe(messages[i - 1].role));
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
    const f = toModelFailure(
      Anthropic.APIError.generate(
        429,
        { error: { message: 'slow down' } },
        'slow down',
        headers({ 'retry-after': '2' }),
      ),
    );
    expect(f.type).toBe('ModelError.RateLimited');
    expect(f.nextRetryDelay).toBe(2000);
  });
  it('makes connection errors retryable', () => {
    const f = toModelFailure(new Anthropic.APIConnectionError({ message: 'ECONNRESET' }));
    expect(f).toMatchObject({ type: 'ModelError.Connection', nonRetryable: false });
  });
});
