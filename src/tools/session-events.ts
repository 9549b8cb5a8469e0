// session_events: a slice of the session's own log, which the session answers from its run (or the archive,
// for events an earlier run sealed).
import { z } from 'zod';
import type { SessionEvent } from '../session/events';
import { capOutput, defineTool, invalidInput, oneLine, toolError, type ToolOutcome } from './kind';
import { shared } from '../session/shared';

export const SessionEventsInputSchema = shared('session-events.SessionEventsInputSchema', () =>
  z
    .object({
      from: z.number().int().nonnegative().default(0).describe('first event number to return'),
      limit: z.number().int().min(1).max(200).default(50).describe('how many events to return'),
    })
    .strict(),
);
export type SessionEventsInput = z.infer<typeof SessionEventsInputSchema>;

export const sessionEvents = defineTool({
  kind: 'session_events',
  runs: 'workflow',
  input: SessionEventsInputSchema,
  summary: (name) => oneLine(name),
  description:
    "Reads a slice of this session's own event log (user messages, your replies, tool calls and results), numbered from 0. " +
    'Use it to re-read what happened earlier. Returns JSON {events, nextSeq}.',
});

/** A call's input, parsed: the slice it asks for, or the tool_result for input the schema refuses. */
export function parseSessionEvents(
  name: string,
  input: unknown,
): { ok: true; slice: SessionEventsInput } | { ok: false; outcome: ToolOutcome } {
  const parsed = SessionEventsInputSchema.safeParse(input ?? {});
  return parsed.success
    ? { ok: true, slice: parsed.data }
    : { ok: false, outcome: toolError(invalidInput(name, parsed.error)) };
}

/** Whether a call asks for events before `baseSeq`, which an earlier run sealed into the archive. */
export function readsArchive(input: unknown, baseSeq: number): boolean {
  const p = parseSessionEvents('session_events', input);
  return p.ok && p.slice.from < baseSeq;
}

/** The tool_result for a slice of events, the first of which is `from`. */
export function sliceOutcome(from: number, slice: readonly SessionEvent[]): ToolOutcome {
  return { output: capOutput(JSON.stringify({ events: slice, nextSeq: from + slice.length })), isError: false };
}

/** session_events over this run's events, the first of which is `baseSeq`. */
export function readRunEvents(
  use: { id: string; name: string; input: unknown },
  events: readonly SessionEvent[],
  baseSeq = 0,
): ToolOutcome {
  const p = parseSessionEvents(use.name, use.input);
  if (!p.ok) return p.outcome;
  const start = p.slice.from - baseSeq;
  return sliceOutcome(p.slice.from, events.slice(start, start + p.slice.limit));
}
