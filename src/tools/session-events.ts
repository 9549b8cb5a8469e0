// session_events: a slice of the session's own log, which the session answers from its run (or the archive,
// for events an earlier run sealed).
import { z } from 'zod';
import type { SessionEvent } from '../session/events';
import { capOutput, invalidInput, oneLine, toolError, type ToolKind, type ToolOutcome } from './kind';
import { shared } from '../session/shared';

export const SessionEventsInputSchema = shared('session-events.SessionEventsInputSchema', () => z
  .object({
    from: z.number().int().nonnegative().default(0),
    limit: z.number().int().min(1).max(200).default(50),
  })
  .strict());
export type SessionEventsInput = z.infer<typeof SessionEventsInputSchema>;

export const sessionEvents: ToolKind<SessionEventsInput> = {
  kind: 'session_events',
  runs: 'workflow',
  input: SessionEventsInputSchema,
  summary: (name) => oneLine(name),
  spec: {
    name: 'session_events',
    description:
      "Reads a slice of this session's own event log (user messages, your replies, tool calls and results), numbered from 0. " +
      'Use it to re-read what happened earlier. Returns JSON {events, nextSeq}.',
    input_schema: {
      type: 'object',
      properties: {
        from: { type: 'integer', minimum: 0, description: 'first event number to return' },
        limit: { type: 'integer', minimum: 1, maximum: 200, description: 'how many events to return' },
      },
    },
  },
};

/** session_events over this run's events, the first of which is `baseSeq`. */
export function readRunEvents(use: { id: string; name: string; input: unknown }, events: readonly SessionEvent[], baseSeq = 0): ToolOutcome {
  const input = SessionEventsInputSchema.safeParse(use.input ?? {});
  if (!input.success) return toolError(invalidInput(use.name, input.error));
  const start = input.data.from - baseSeq;
  const slice = events.slice(start, start + input.data.limit);
  return { output: capOutput(JSON.stringify({ events: slice, nextSeq: input.data.from + slice.length })), isError: false };
}
