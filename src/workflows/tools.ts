// Tools that run inside the workflow itself: pure functions of the session's own log, with no sandbox.
import type { Agent } from '../session/agent';
import { formatIssues } from '../session/agent';
import type { SessionEvent } from '../session/events';
import { SessionEventsInputSchema, TOOL_SPECS, capOutput, type ToolSpec } from '../session/tools';

export interface ToolOutcome {
  output: string;
  isError: boolean;
  error?: { kind: 'tool' | 'infra' | 'denied'; message: string };
}

export function buildToolSpecs(agent: Agent): ToolSpec[] {
  return agent.tools.map((name) => TOOL_SPECS[name]);
}

function toolError(message: string): ToolOutcome {
  return { output: message, isError: true, error: { kind: 'tool', message } };
}

export async function runBuiltinTool(
  agent: Agent,
  use: { id: string; name: string; input: unknown },
  events: readonly SessionEvent[],
): Promise<ToolOutcome> {
  if (!(agent.tools as string[]).includes(use.name)) return toolError(`unknown tool: ${use.name}`);
  switch (use.name) {
    case 'session_events': {
      const input = SessionEventsInputSchema.safeParse(use.input ?? {});
      if (!input.success) return toolError(`invalid input for session_events: ${formatIssues(input.error)}`);
      const slice = events.slice(input.data.from, input.data.from + input.data.limit);
      return { output: capOutput(JSON.stringify({ events: slice, nextSeq: input.data.from + slice.length })), isError: false };
    }
    default:
      return toolError(`unknown tool: ${use.name}`);
  }
}
