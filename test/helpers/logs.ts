// Logs the workflow can produce, for property tests of what is built from a log.
import fc from 'fast-check';
import type { NewEvent, SessionEvent } from '../../src/session/events';

const t = '2026-01-01T00:00:00.000Z';
const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/** Logs the workflow can produce: turns of user input and tool rounds, user input arriving mid-round, interrupts. */
export const logArb = () => {
  const round = fc.record({
    tools: fc.integer({ min: 0, max: 3 }),
    userDuring: fc.boolean(),
    text: fc.string({ minLength: 1, maxLength: 300 }).filter((s) => s.trim() !== ''),
    output: fc.string({ maxLength: 2000 }),
  });
  const turn = fc.record({
    texts: fc.array(fc.string({ minLength: 1, maxLength: 500 }), { minLength: 1, maxLength: 3 }),
    rounds: fc.array(round, { maxLength: 5 }),
    cut: fc.boolean(),
  });
  return fc.array(turn, { minLength: 1, maxLength: 8 }).map((turns) => {
    const events: SessionEvent[] = [];
    const push = (e: NewEvent) => events.push({ ...e, seq: events.length, time: t } as SessionEvent);
    push({ type: 'session_started', agent: {} });
    let id = 0;
    for (const tn of turns) {
      for (const text of tn.texts) push({ type: 'user_message', text });
      for (const r of tn.rounds) {
        const ids = Array.from({ length: r.tools }, () => `t${id++}`);
        push({
          type: 'assistant_message',
          content: [
            { type: 'text', text: r.text },
            ...ids.map((i) => ({ type: 'tool_use', id: i, name: 'x', input: {} })),
          ],
          stopReason: ids.length ? 'tool_use' : 'end_turn',
          usage,
        } as never);
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

/** A log and the model calls made while it was written: each call's `throughSeq`, in order. */
export interface SimulatedSession {
  events: SessionEvent[];
  calls: number[];
  /** The user messages, in the order they were appended. */
  inputs: string[];
}

/**
 * Sessions as the workflow writes them, with user input arriving at any moment: before a turn, while a model
 * call is in flight, while tools run; turns cut short by a model error or an interrupt. Every reply records the
 * `throughSeq` its call read, and input that arrives during a turn is answered by that turn's next call or by a
 * new turn, as in the session loop.
 */
export const sessionArb = () =>
  fc
    .record({
      inputs: fc.integer({ min: 1, max: 10 }),
      choices: fc.array(fc.nat({ max: 99 }), { minLength: 20, maxLength: 300 }),
    })
    .map(({ inputs, choices }): SimulatedSession => {
      let c = 0;
      const choose = (n: number) => (c < choices.length ? choices[c++] % n : 0);
      const events: SessionEvent[] = [];
      const calls: number[] = [];
      const texts: string[] = [];
      const push = (e: NewEvent) => {
        const event = { ...e, seq: events.length, time: t } as SessionEvent;
        events.push(event);
        return event.seq;
      };
      let lastUserSeq = -1;
      let handledThrough = -1;
      const deliver = () => {
        if (texts.length >= inputs) return;
        const text = `message ${texts.length}`;
        texts.push(text);
        lastUserSeq = push({ type: 'user_message', text });
      };
      const maybeDeliver = () => {
        for (let k = choose(3); k > 0; k--) if (choose(2) === 0) deliver();
      };
      push({ type: 'session_started', agent: {} });
      let id = 0;
      for (;;) {
        if (lastUserSeq <= handledThrough) {
          if (texts.length >= inputs) break;
          deliver();
        }
        for (let round = 0; ; round++) {
          handledThrough = lastUserSeq;
          const throughSeq = events.length - 1;
          calls.push(throughSeq);
          maybeDeliver();
          const outcome = choose(12);
          if (outcome === 0) {
            push({ type: 'error', kind: 'model', message: 'the model call failed' });
            break;
          }
          if (outcome === 1) {
            push({ type: 'interrupted', reason: 'interrupted by user' });
            handledThrough = lastUserSeq;
            break;
          }
          const ids = Array.from({ length: round >= 4 ? 0 : choose(3) }, () => `toolu_${id++}`);
          push({
            type: 'assistant_message',
            content: [
              { type: 'text', text: `reply ${calls.length}` },
              ...ids.map((i) => ({ type: 'tool_use', id: i, name: 'x', input: {} })),
            ],
            stopReason: ids.length ? 'tool_use' : 'end_turn',
            usage,
            throughSeq,
          } as never);
          if (ids.length === 0) break;
          for (const i of ids) push({ type: 'tool_use', id: i, name: 'x', input: {} });
          maybeDeliver();
          const cut = choose(10) === 0;
          for (const i of ids)
            push({
              type: 'tool_result',
              toolUseId: i,
              output: cut ? 'interrupted before the tool finished' : `out ${i}`,
              isError: cut,
            });
          if (cut) {
            push({ type: 'interrupted', reason: 'interrupted by user' });
            handledThrough = lastUserSeq;
            break;
          }
        }
      }
      return { events, calls, inputs: texts };
    });
