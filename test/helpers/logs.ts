// Logs the workflow can produce, for property tests of what is built from a log.
import fc from 'fast-check';
import type { NewEvent, SessionEvent } from '../../src/session/events';

const t = '2026-01-01T00:00:00.000Z';
const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/** Logs the workflow can produce: turns of user input and tool rounds, user input arriving mid-round, interrupts. */
export const logArb = () => {
  const round = fc.record({ tools: fc.integer({ min: 0, max: 3 }), userDuring: fc.boolean(), text: fc.string({ minLength: 1, maxLength: 300 }).filter((s) => s.trim() !== ''), output: fc.string({ maxLength: 2000 }) });
  const turn = fc.record({ texts: fc.array(fc.string({ minLength: 1, maxLength: 500 }), { minLength: 1, maxLength: 3 }), rounds: fc.array(round, { maxLength: 5 }), cut: fc.boolean() });
  return fc.array(turn, { minLength: 1, maxLength: 8 }).map((turns) => {
    const events: SessionEvent[] = [];
    const push = (e: NewEvent) => events.push({ ...e, seq: events.length, time: t } as SessionEvent);
    push({ type: 'session_started', agent: {} });
    let id = 0;
    for (const tn of turns) {
      for (const text of tn.texts) push({ type: 'user_message', text });
      for (const r of tn.rounds) {
        const ids = Array.from({ length: r.tools }, () => `t${id++}`);
        push({ type: 'assistant_message', content: [{ type: 'text', text: r.text }, ...ids.map((i) => ({ type: 'tool_use', id: i, name: 'x', input: {} }))], stopReason: ids.length ? 'tool_use' : 'end_turn', usage } as never);
        for (const i of ids) push({ type: 'tool_use', id: i, name: 'x', input: {} });
        if (r.userDuring) push({ type: 'user_message', text: r.text });
        for (const i of ids) push({ type: 'tool_result', toolUseId: i, output: r.output, isError: false });
        if (ids.length === 0) break;
      }
      if (tn.cut) push({ type: 'interrupted', reason: 'x' });
    }
    return events;
  });
};
