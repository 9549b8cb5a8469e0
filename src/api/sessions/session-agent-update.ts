// `sessions.update({ agent: { tools, mcp_servers } })`: a session's agent gets new tools and MCP servers from its
// next turn on. The API checks them as an agent's create does and builds them as an agent file's tools; the
// workflow takes them only while the session is idle (a 409 otherwise) and starts its next turn with them.
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import type { AgentTools } from '../../session/agent';
import { updateSessionUpdate, type SessionUpdate } from '../../session/contract';
import { Failure } from '../../session/failure-types';
import { isSessionClosed } from '../../temporal-errors';
import type { SessionRow } from '../../storage/repos/sessions-repo';
import { agentFileFor } from '../agent-file';
import { AgentOverridesSchema, applyAgentOverrides, type ApiAgent } from '../agents';
import { badRequest, conflict } from '../api-error';
import { getEnvironment } from '../environments';
import type { ApiDeps } from '../route-context';
import { budgetRefused } from './session-budget';

/** `BetaManagedAgentsSessionAgentUpdate`: only tools and MCP servers, each a full replacement. */
export const SessionAgentUpdateSchema = AgentOverridesSchema.pick({ tools: true, mcp_servers: true });
export type SessionAgentUpdate = z.infer<typeof SessionAgentUpdateSchema>;

/** A checked replacement: the agent as the session will show it, and its tools as the workflow's agent file takes them. */
export interface PlannedAgentUpdate {
  agent: ApiAgent;
  tools: AgentTools;
}

/**
 * `current` (the session's agent) with `p`'s tools and MCP servers, checked as an agent's create checks them
 * (cross-field rules, the egress gate), built as the session's environment runs them; a 400 names what is wrong.
 */
export async function planAgentUpdate(
  deps: ApiDeps,
  workspaceId: string,
  row: SessionRow,
  current: ApiAgent,
  p: SessionAgentUpdate,
): Promise<PlannedAgentUpdate> {
  const agent = await applyAgentOverrides(deps, workspaceId, current, p, 'agent.');
  const environment = await getEnvironment(deps.db, workspaceId, row.environment_id);
  const file = agentFileFor(agent, environment, { workspaceId, vaultIds: row.vault_ids });
  return {
    agent,
    tools: {
      tools: file.tools,
      clientTools: file.clientTools,
      mcpServers: file.mcpServers,
      policies: file.policies,
      ...(file.webFetch ? { webFetch: file.webFetch } : {}),
    },
  };
}

/**
 * Hands the workflow what `sessions.update` changes in it (a budget, the agent's tools) in one update, so that a
 * refusal of either changes neither. Refusals: a session that is not idle, or has ended, cannot take new tools: a
 * 409 (the SDK's ConflictError, not retried); the budget's rules are their 400s, as before.
 */
export async function sendSessionChange(client: Client, id: string, change: SessionUpdate): Promise<void> {
  try {
    await client.workflow.getHandle(id).executeUpdate(updateSessionUpdate, { args: [change] });
  } catch (e) {
    const what = change.agent ? 'agent' : 'budget';
    if (isSessionClosed(e))
      throw change.agent
        ? conflict(`agent: session ${id} has ended; its agent can no longer change`)
        : badRequest(`budget: session ${id} has ended; its budget can no longer change`);
    if (e instanceof WorkflowUpdateFailedError) {
      const cause = e.cause as { type?: string; message?: string } | undefined;
      const why = (cause?.message ?? e.message).split('\n')[0];
      if (cause?.type === Failure.Session.BudgetNotRaised) throw budgetRefused('budget_not_raised', why);
      if (cause?.type === Failure.Session.BudgetUntracked) throw budgetRefused('model_not_budgetable', why);
      if (cause?.type === Failure.Session.NotIdle) throw conflict(`agent: session ${id} cannot change now: ${why}`);
      if (cause?.type === Failure.Session.Ended && change.agent) throw conflict(`agent: session ${id}: ${why}`);
      throw badRequest(`${what}: session ${id} refused the change: ${why}`);
    }
    throw e;
  }
}
