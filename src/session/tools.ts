// Tool definitions offered to the model, and the input schemas each tool's input is parsed with.
import { z } from 'zod';

export interface ToolSpec {
  name: string;
  description: string;
  input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

export const SessionEventsInputSchema = z
  .object({
    from: z.number().int().nonnegative().default(0),
    limit: z.number().int().min(1).max(200).default(50),
  })
  .strict();

export const TOOL_SPECS: Record<string, ToolSpec> = {
  session_events: {
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

/** Output sent to the model is capped; the marker says how much was cut. */
export const MAX_TOOL_OUTPUT_CHARS = 32 * 1024;

export function capOutput(output: string, max = MAX_TOOL_OUTPUT_CHARS): string {
  if (output.length <= max) return output;
  const cut = output.length - max;
  return `${output.slice(0, max)}\n[output truncated: ${cut} of ${output.length} characters omitted]`;
}
