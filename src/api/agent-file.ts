// An API agent version plus an environment, as the project's agent file (src/session/agent.ts): what a session
// created through the API will run. Until the built-in toolset has tools of its own, its tools map onto today's.
import { AgentSchema, formatIssues, type Agent, type ClientTool } from '../session/agent';
import type { ToolPolicy } from '../session/policy';
import type { ApiAgent } from './agents';
import { recipeNetwork, type ApiEnvironment } from './environments';
import { badRequest } from './errors';

type Policy = { type: 'always_allow' | 'always_ask' | 'auto' };

const policyOf = (p: Policy): ToolPolicy => (p.type === 'always_ask' ? 'always_ask' : 'always_allow');

/** The agent file for `agent` in `environment`, or a 400 naming what the platform cannot run yet. */
export function agentFileFor(agent: ApiAgent, environment: ApiEnvironment): Agent {
  const tools: Agent['tools'] = [];
  const policies: Record<string, ToolPolicy> = {};
  const clientTools: ClientTool[] = [];
  const mcpServers: Record<string, { transport: 'http'; url: string }> = {};
  const servers = new Map(agent.mcp_servers.map((s) => [s.name, s.url]));

  for (const t of agent.tools) {
    if (t.type === 'agent_toolset_20260401') {
      const on = new Map(t.configs.filter((c) => c.enabled).map((c) => [c.name, c.permission_policy as Policy]));
      // bash runs glob and grep too, until they are tools of their own.
      const bash = on.get('bash') ?? on.get('glob') ?? on.get('grep');
      if (bash) {
        tools.push('bash');
        policies.bash = policyOf(bash);
      }
      const editing = (['read', 'write', 'edit'] as const).map((n) => on.get(n)).filter((p): p is Policy => p !== undefined);
      if (editing.length > 0) {
        tools.push('str_replace_based_edit_tool');
        // One tool does all three today, so it asks when any of them would.
        policies.str_replace_based_edit_tool = editing.some((p) => p.type === 'always_ask') ? 'always_ask' : 'always_allow';
      }
    } else if (t.type === 'mcp_toolset') {
      if (!/^(?!.*__)[a-zA-Z0-9_-]{1,40}$/.test(t.mcp_server_name)) {
        throw badRequest(`agent.mcp_servers: server name ${t.mcp_server_name} cannot run here yet: names are 1-40 letters, digits, _ or -, without __`);
      }
      mcpServers[t.mcp_server_name] = { transport: 'http', url: servers.get(t.mcp_server_name)! };
      for (const c of t.configs) policies[`mcp__${t.mcp_server_name}__${c.name}`] = c.enabled ? policyOf(c.permission_policy as Policy) : 'always_ask';
    } else {
      if (t.name.length > 64) throw badRequest(`agent.tools: custom tool ${t.name} cannot run here yet: names are at most 64 characters`);
      clientTools.push({ name: t.name, description: t.description || t.name, input_schema: { ...t.input_schema, properties: t.input_schema.properties ?? {} } as ClientTool['input_schema'] });
    }
  }
  for (const [name, p] of Object.entries(policies)) if (p === 'always_allow' && !name.startsWith('mcp__')) delete policies[name];

  const parsed = AgentSchema.safeParse({
    name: agent.name.slice(0, 100),
    model: agent.model.id,
    ...(agent.system ? { system: agent.system } : {}),
    tools,
    clientTools,
    mcpServers,
    policies,
    sandboxes: { main: { network: recipeNetwork(environment.config) } },
  });
  if (!parsed.success) throw badRequest(`agent ${agent.id} version ${agent.version} cannot run here yet: ${formatIssues(parsed.error)}`);
  return parsed.data;
}
