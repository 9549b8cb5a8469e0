// A coordinator session's roster: each agent version its `multiagent` names, as an agent file of its own that a
// session thread runs (src/workflows/threads.ts), and the coordinator's tools to delegate and message threads.
import type { Agent } from '../../session/agent';
import type { Queryable } from '../../storage/db';
import { getAgent, type ApiAgent } from '../agents';
import { badRequest } from '../api-error';

/**
 * The roster and tools to put on the coordinator's agent file, or a 400: an agent archived since the roster was
 * written cannot start threads, and the model names roster agents by name, so two may not share one.
 */
export async function rosterFor(
  db: Queryable,
  workspaceId: string,
  coordinator: ApiAgent,
  file: Agent,
  fileOf: (agent: ApiAgent) => Agent,
): Promise<Pick<Agent, 'roster' | 'tools'>> {
  const roster: Agent['roster'] = [];
  for (const [i, ref] of (coordinator.multiagent?.agents ?? []).entries()) {
    const field = `agent.multiagent.agents.${i}`;
    const a = ref.id === coordinator.id ? coordinator : await getAgent(db, workspaceId, ref.id, ref.version);
    if (a.archived_at) throw badRequest(`${field}: agent ${a.id} is archived; its threads cannot start`);
    if (roster.some((r) => r.name === a.name))
      throw badRequest(
        `${field}: two agents on the roster are named ${a.name}; the coordinator names the agent it delegates to by name`,
      );
    const { roster: _r, ...own } = fileOf(a);
    roster.push({
      name: a.name,
      ...(a.description ? { description: a.description } : {}),
      agentId: a.id,
      version: a.version,
      agent: own as unknown as Record<string, unknown>,
    });
  }
  return { roster, tools: [...file.tools, 'delegate', 'message_thread'] };
}
