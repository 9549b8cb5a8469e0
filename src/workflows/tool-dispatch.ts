// Tool dispatch: a tool call runs where its kind runs, through one table keyed by that place. A sandbox tool runs
// in its sandbox on a hands host; each built-in kind has its own entry; a name no agent tool has is web_fetch (when
// the agent offers it) or an MCP tool.
// A new built-in kind is one entry here (the table's type asks for it once the kind is in tools/registry.ts).
import { isCancellation } from '@temporalio/workflow';
import type { BoundTool } from '../session/agent';
import type { BuiltinToolKind } from '../tools/registry';
import { readRunEvents, readsArchive } from '../tools/session-events';
import { toolError, type ToolOutcome } from '../tools/kind';
import type { SessionActivities } from './activity-options';
import { failureMessage } from './failures';
import type { Handoff } from './handoff';
import type { McpTools } from './mcp-tools';
import type { SandboxSlots } from './sandbox-slots';
import type { SessionRun } from './session-run';
import type { Subagents } from './subagents';
import type { WebTools } from './web-tools';

export interface ToolUse {
  id: string;
  name: string;
  input: unknown;
}

/** Where a bound tool runs: in its sandbox, or in the workflow by its built-in kind. */
export type ToolPlace = 'sandbox' | BuiltinToolKind;

/** Each runner is an async function: a result settles after the same microtask steps, whatever the kind (replay is sensitive to the order of commands). */
type Runner = (use: ToolUse, bound: BoundTool) => Promise<ToolOutcome>;

export interface ToolDispatchParts {
  run: SessionRun;
  tools: ReadonlyMap<string, BoundTool>;
  slots: SandboxSlots;
  mcpTools: McpTools;
  webTools: WebTools;
  subagents: Subagents;
  handoff: Handoff;
  archive: SessionActivities['archive'];
}

export class ToolDispatch {
  private readonly runners: Record<ToolPlace, Runner>;

  constructor(private readonly p: ToolDispatchParts) {
    this.runners = {
      sandbox: async (use, bound) => p.slots.runTool(use, bound),
      spawn_agent: async (use) => {
        // A call that waited for approval starts its child only now.
        if (!p.subagents.tracks(use.id)) await p.subagents.startAll([use]);
        return p.subagents.result(use.id);
      },
      // A coordinator's thread tools: a call that waited for approval starts (or messages) its thread only now.
      delegate: async (use) => this.threadCall(use),
      message_thread: async (use) => this.threadCall(use),
      handoff_sandbox: async (use) => p.handoff.tool(use.input),
      session_events: (use) => this.sessionEvents(use),
    };
  }

  private async threadCall(use: ToolUse): Promise<ToolOutcome> {
    const { subagents } = this.p;
    if (!subagents.tracks(use.id)) await subagents.startAll([use]);
    return subagents.result(use.id);
  }

  /** Runs one tool call; an unknown name is the model's error. */
  run(use: ToolUse): Promise<ToolOutcome> {
    const bound = this.p.tools.get(use.name);
    if (!bound) return this.unbound(use);
    return this.runners[bound.sandbox !== undefined ? 'sandbox' : (bound.kind as BuiltinToolKind)](use, bound);
  }

  /** A name no agent tool has: web_fetch when the agent offers it, a listed MCP tool, or none. */
  private async unbound(use: ToolUse): Promise<ToolOutcome> {
    return this.p.webTools.run(use) ?? this.p.mcpTools.run(use) ?? toolError(`unknown tool: ${use.name}`);
  }

  /** session_events: this run's events from the run itself; an older slice from the archive. */
  private async sessionEvents(use: ToolUse): Promise<ToolOutcome> {
    const { run, archive } = this.p;
    if (readsArchive(use.input, run.baseSeq)) {
      try {
        return await archive.readSessionEvents({ sessionId: run.sessionId, input: use.input });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return toolError(`could not read the session log: ${failureMessage(err)}`, 'infra');
      }
    }
    return readRunEvents(use, run.events, run.baseSeq);
  }
}
