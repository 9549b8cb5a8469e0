// Tool specs offered to the model, and the tools that run inside the workflow itself (no sandbox).
import { resolveTool, type Agent, type BoundTool } from '../session/agent';
import { formatIssues } from '../session/agent';
import type { SessionEvent } from '../session/events';
import { SessionEventsInputSchema, TOOL_SPECS, capOutput, type ToolSpec } from '../session/tools';

export interface ToolOutcome {
  output: string;
  isError: boolean;
  error?: { kind: 'tool' | 'infra' | 'denied'; message: string };
  outputRef?: { sandbox: string; path: string; bytes: number };
}

export function boundTools(agent: Agent): Map<string, BoundTool> {
  return new Map(agent.tools.map((t) => resolveTool(t)).map((b) => [b.name, b]));
}

export function buildToolSpecs(agent: Agent): ToolSpec[] {
  const own = [...boundTools(agent).values()].map((b) => {
    const spec = TOOL_SPECS[b.kind];
    const where = b.sandbox !== undefined && Object.keys(agent.sandboxes).length > 1 ? ` Runs in the sandbox "${b.sandbox}".` : '';
    return { ...spec, name: b.name, description: spec.description + where };
  });
  // Client tools are offered as declared; the calling application runs them.
  return [...own, ...agent.clientTools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema as ToolSpec['input_schema'] }))];
}

export function toolError(message: string, kind: 'tool' | 'infra' | 'denied' = 'tool'): ToolOutcome {
  return { output: message, isError: true, error: { kind, message } };
}

/** session_events over this run's events, the first of which is `baseSeq`. */
export function runBuiltinTool(use: { id: string; name: string; input: unknown }, events: readonly SessionEvent[], baseSeq = 0): ToolOutcome {
  const input = SessionEventsInputSchema.safeParse(use.input ?? {});
  if (!input.success) return toolError(`invalid input for ${use.name}: ${formatIssues(input.error)}`);
  const start = input.data.from - baseSeq;
  const slice = events.slice(start, start + input.data.limit);
  return { output: capOutput(JSON.stringify({ events: slice, nextSeq: input.data.from + slice.length })), isError: false };
}
