// What `agents status` reads from a coordinator's log: each thread's agent, latest status, usage and own log, and
// the line it prints for it; the spending line against a budget.
import type { SessionEvent } from '../src/session/events';
import { sessionStats, spendLine, threadLine } from '../src/observability/session-stats';

const at = (seq: number) => ({ seq, time: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString() });
const usage = { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 30, cacheCreationInputTokens: 0 };

it("tells each thread's agent, latest status, usage and own log from the coordinator's log", () => {
  const events = [
    { ...at(0), type: 'session_started', agent: { name: 'lead', model: 'claude-test' } },
    { ...at(1), type: 'thread_created', threadId: 'sthr_a', sessionId: 'sesn_x/thread-a', agent: 'writer' },
    { ...at(2), type: 'thread_created', threadId: 'sthr_b', sessionId: 'sesn_x/thread-b', agent: 'reviewer' },
    {
      ...at(3),
      type: 'thread_status',
      threadId: 'sthr_a',
      agent: 'writer',
      status: 'idle',
      stopReason: 'end_turn',
      usage,
    },
    { ...at(4), type: 'thread_status', threadId: 'sthr_b', agent: 'reviewer', status: 'running' },
    { ...at(5), type: 'thread_archived', threadId: 'sthr_a' },
  ] as unknown as SessionEvent[];
  const { threads } = sessionStats(events, new Date());
  expect(threads).toEqual([
    { threadId: 'sthr_a', agent: 'writer', sessionId: 'sesn_x/thread-a', status: 'terminated', archived: true, usage },
    { threadId: 'sthr_b', agent: 'reviewer', sessionId: 'sesn_x/thread-b', status: 'running', archived: false },
  ]);
  expect(threads.map(threadLine)).toEqual([
    'thread sthr_a (writer): terminated, archived, 150 tokens; its log: agents events sesn_x/thread-a',
    'thread sthr_b (reviewer): running; its log: agents events sesn_x/thread-b',
  ]);
  expect(sessionStats(events.slice(0, 1), new Date()).threads).toEqual([]);
});

it('prints the spending against the budget, and when the budget stops model calls', () => {
  expect(spendLine({ costNanoUsd: 12_000_000, budget: { amount: 3, currency: 'USD' }, reached: false })).toBe(
    '$0.0120 of a $0.03 budget ($0.0180 left)',
  );
  expect(spendLine({ costNanoUsd: 36_000_000, budget: { amount: 3, currency: 'USD' }, reached: true })).toMatch(
    /^\$0\.0360 of a \$0\.03 budget \(reached/,
  );
});
