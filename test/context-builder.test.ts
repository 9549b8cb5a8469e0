// The ContextBuilder: what goes into the window under a token budget, and where a compaction may cut.
import fc from 'fast-check';
import {
  buildContext,
  chooseCut,
  compactionRequest,
  cutPoints,
  FULL_WINDOW,
  KEEP_SHARE,
  MODEL_TEXT_LIMIT,
  estimateTokens,
  windowAfter,
} from '../src/session/context-builder';
import type { SessionEvent } from '../src/session/events';
import { logArb } from './helpers/logs';
import { validateRequest } from '../src/dev/request-checks';
import { TOOL_SPECS } from '../src/tools/registry';

const t = '2026-01-01T00:00:00.000Z';
const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
const tools = [TOOL_SPECS.session_events];

/** Every tool_use id of the kept events has its result kept too, and the other way round. */
function pairsIntact(kept: SessionEvent[]): boolean {
  const uses = new Set(kept.filter((e) => e.type === 'tool_use').map((e) => (e as { id: string }).id));
  const results = new Set(
    kept.filter((e) => e.type === 'tool_result').map((e) => (e as { toolUseId: string }).toolUseId),
  );
  return [...uses].every((u) => results.has(u)) && [...results].every((r) => uses.has(r));
}

describe('ContextBuilder', () => {
  it('sends the whole log when it fits the budget', () => {
    const events: SessionEvent[] = [
      { seq: 0, time: t, type: 'session_started', agent: {} },
      { seq: 1, time: t, type: 'user_message', text: 'hi' },
    ];
    const built = buildContext({ events, window: FULL_WINDOW, system: 'sys', tools, budgetTokens: 10_000 });
    expect(built).toMatchObject({
      system: ['sys'],
      overBudget: false,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
    expect(built.cutSeq).toBeUndefined();
  });

  it('puts the summary after the system prompt and says the raw events can be re-read with session_events', () => {
    const events: SessionEvent[] = [
      {
        seq: 7,
        time: t,
        type: 'assistant_message',
        content: [{ type: 'text', text: 'on it' }],
        stopReason: 'end_turn',
        usage,
      },
    ];
    const built = buildContext({
      events,
      window: { fromSeq: 7, summary: 'we did X [3]' },
      system: 'sys',
      tools,
      budgetTokens: 10_000,
    });
    expect(built.system).toHaveLength(2);
    expect(built.system[1]).toContain('we did X [3]');
    expect(built.system[1]).toMatch(/Events 0 to 6 .*session_events/s);
    // A window that opens with the assistant gets a user line first, as the API requires.
    expect(built.messages[0].role).toBe('user');
    expect(() => validateRequest({ model: 'm', max_tokens: 1, messages: built.messages })).not.toThrow();
  });

  it('cuts a text longer than the model limit to a head and a tail that name the event holding all of it', () => {
    const text = 'a'.repeat(MODEL_TEXT_LIMIT) + 'b'.repeat(1_000_000);
    const events: SessionEvent[] = [{ seq: 3, time: t, type: 'user_message', text }];
    const built = buildContext({ events, window: FULL_WINDOW, tools, budgetTokens: 1e9 });
    const sent = String(built.messages[0].content[0].text);
    expect(sent.length).toBeLessThan(MODEL_TEXT_LIMIT + 200);
    expect(sent).toMatch(
      /^a+\n\[\d+ of 1032768 characters left out here; event 3 of the session log holds the whole text\]\nb+$/,
    );
  });

  it('never cuts between a tool_use and its tool_result, and every window it leaves is a valid conversation', () => {
    fc.assert(
      fc.property(logArb(), fc.integer({ min: 200, max: 5000 }), (events, budget) => {
        let window = FULL_WINDOW;
        for (let i = 0; i < 50; i++) {
          const inWindow = events.filter((e) => e.seq >= window.fromSeq);
          const built = buildContext({ events: inWindow, window, system: 's', tools, budgetTokens: budget });
          expect(() => validateRequest({ model: 'm', max_tokens: 1, messages: built.messages })).not.toThrow();
          expect(pairsIntact(inWindow)).toBe(true);
          if (!built.overBudget || built.cutSeq === undefined) return;
          expect(built.cutSeq).toBeGreaterThan(window.fromSeq);
          window = { fromSeq: built.cutSeq, summary: 'summary' };
        }
        throw new Error('compaction did not converge');
      }),
      { numRuns: 300 },
    );
  });

  it('keeps as much of the tail as fits in its share of the budget', () => {
    fc.assert(
      fc.property(logArb(), fc.integer({ min: 100, max: 3000 }), (events, keep) => {
        const cut = chooseCut(events, FULL_WINDOW, keep);
        const points = cutPoints(events, FULL_WINDOW);
        if (points.length === 0) return expect(cut).toBeUndefined();
        expect(points).toContain(cut);
        const earlier = points.filter((p) => p < cut!);
        // An earlier cut would have kept more than the share allows (or this is the latest cut point).
        if (earlier.length && cut !== points[points.length - 1]) {
          const tail = buildContext({
            events: events.filter((e) => e.seq >= earlier[earlier.length - 1]),
            window: FULL_WINDOW,
            tools: [],
            budgetTokens: 1e9,
          }).tokens;
          expect(tail).toBeGreaterThan(keep * 0.5);
        }
      }),
      { numRuns: 200 },
    );
    expect(KEEP_SHARE).toBeLessThan(1);
  });

  it('writes a compaction request with the previous summary and numbered events, and finds the latest window in a log', () => {
    const events: SessionEvent[] = [
      { seq: 4, time: t, type: 'user_message', text: 'fix the bug' },
      { seq: 5, time: t, type: 'tool_use', id: 'a', name: 'bash', input: { command: 'npm test' } },
      { seq: 6, time: t, type: 'tool_result', toolUseId: 'a', output: '1 failing', isError: true },
      { seq: 7, time: t, type: 'context_compacted', throughSeq: 5, summary: 'S2', tokensBefore: 10, tokensAfter: 5 },
    ];
    const req = compactionRequest('S1', events.slice(0, 3), 10_000);
    expect(req.text).toContain('<summary>\nS1\n</summary>');
    expect(req.text).toContain('[4] user: fix the bug');
    expect(req.text).toContain('[5] tool call bash (a)');
    expect(req.text).toContain('[6] tool result for a (error): 1 failing');
    expect(windowAfter(events)).toEqual({ fromSeq: 6, summary: 'S2' });
    expect(estimateTokens('abcd')).toBe(2);
  });
});
