// The MCP servers' tools of one run: listed once, before the first model call (no connection is made earlier),
// offered to the model as mcp__<server>__<tool>, and called on the tools queue.
import { isCancellation } from '@temporalio/workflow';
import type { Agent, BoundTool } from '../session/agent';
import type { NewEvent } from '../session/events';
import type { SessionActivities } from './activity-options';
import { failureMessage } from './failures';
import type { Carry } from '../session/contract';
import { toolError, type ToolOutcome, type ToolSpec } from '../tools/kind';

export class McpTools {
  /** Model-facing names to the server and the tool's own name. */
  private readonly byName = new Map<string, { server: string; tool: string; spec: ToolSpec }>();
  private listed: boolean;

  constructor(
    private readonly sessionId: string,
    private readonly agent: Agent,
    private readonly mcp: SessionActivities['mcp'],
    private readonly append: (e: NewEvent) => unknown,
    /** The specs the model is offered; listed MCP tools are added to it. */
    private readonly toolSpecs: ToolSpec[],
    private readonly builtin: Map<string, BoundTool>,
    carried: Carry['mcpTools'],
  ) {
    this.listed = Object.keys(agent.mcpServers).length === 0;
    if (carried) {
      this.listed = true;
      for (const t of carried) {
        this.byName.set(t.name, { server: t.server, tool: t.tool, spec: t.spec as unknown as ToolSpec });
        toolSpecs.push(t.spec as unknown as ToolSpec);
      }
    }
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** Lists the servers' tools once per run; a server that fails is an error event, and its tools are not offered. */
  async ensureListed(): Promise<void> {
    if (this.listed) return;
    const { agent } = this;
    let listed;
    try {
      listed = await this.mcp(60, 3).listMcpTools({
        sessionId: this.sessionId,
        vault: agent.vault,
        servers: agent.mcpServers,
        reserved: [...this.builtin.keys()],
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = failureMessage(err);
      listed = {
        tools: [],
        failed: Object.keys(agent.mcpServers).map((server) => ({ server, message: `MCP server ${server}: ${reason}` })),
      };
    }
    this.listed = true;
    for (const t of listed.tools) {
      if (this.builtin.has(t.name) || this.byName.has(t.name)) continue;
      this.byName.set(t.name, { server: t.server, tool: t.tool, spec: t.spec });
      this.toolSpecs.push(t.spec);
    }
    for (const f of listed.failed)
      this.append({ type: 'error', kind: 'mcp', message: `${f.message} (its tools are not offered in this run)` });
  }

  /** Calls the MCP tool behind a model-facing name; undefined if no listed tool has that name. */
  run(use: { id: string; name: string; input: unknown }): Promise<ToolOutcome> | undefined {
    const target = this.byName.get(use.name);
    return target ? this.call(use, target) : undefined;
  }

  private async call(
    use: { id: string; input: unknown },
    target: { server: string; tool: string },
  ): Promise<ToolOutcome> {
    const server = this.agent.mcpServers[target.server];
    try {
      const r = await this.mcp(server.timeoutSeconds, 2).callMcpTool.executeWithOptions(
        { summary: `mcp ${target.server}: ${target.tool}` },
        [
          {
            sessionId: this.sessionId,
            vault: this.agent.vault,
            serverName: target.server,
            server,
            tool: target.tool,
            input: use.input,
            toolUseId: use.id,
          },
        ],
      );
      return r.isError ? { ...r, error: { kind: 'tool', message: r.output.slice(0, 500) } } : r;
    } catch (err) {
      if (isCancellation(err)) throw err;
      return toolError(failureMessage(err), 'infra');
    }
  }

  carry(): Carry['mcpTools'] {
    return this.listed && this.byName.size
      ? [...this.byName].map(([name, t]) => ({
          name,
          server: t.server,
          tool: t.tool,
          spec: t.spec as unknown as Record<string, unknown>,
        }))
      : undefined;
  }
}
