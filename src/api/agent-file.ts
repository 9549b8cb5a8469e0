// An API agent version plus an environment, as the project's agent file (src/session/agent.ts): what a session
// created through the API will run. The built-in toolset's tools are tool kinds of their own, under their names.
import {
  AgentSchema,
  formatIssues,
  type Agent,
  type ClientTool,
  type SandboxRecipe,
  type ToolEntry,
} from '../session/agent';
import type { ToolPolicy } from '../session/policy';
import { betaAgentToolset20260401 } from '@anthropic-ai/sdk/tools/agent-toolset/node';
import type { ApiAgent, TOOLSET_TOOLS } from './agents';
import { recipeNetwork, type ApiEnvironment } from './environments';
import { badRequest } from './api-error';

type Policy = { type: 'always_allow' | 'always_ask' | 'auto' };

/**
 * The tool entry each toolset tool runs as, under the toolset's name: `bash` is the persistent shell, the others
 * their own kinds. web_fetch is the agent file's `webFetch`, run on a tools worker; web_search is never enabled.
 */
const TOOLSET_ENTRIES: Partial<Record<(typeof TOOLSET_TOOLS)[number], ToolEntry>> = {
  bash: { name: 'bash', tool: 'shell', sandbox: 'main' },
  read: 'read',
  write: 'write',
  edit: 'edit',
  glob: 'glob',
  grep: 'grep',
};

/**
 * The toolset as the SDK's own runner serves it (`EnvironmentWorker` runs `betaAgentToolset20260401`): the names,
 * descriptions and input schemas a self-hosted environment's model is offered are the ones its worker executes.
 * Building the tools starts nothing (the shell starts on the first call), and the workdir is never touched.
 */
const SELF_HOSTED_TOOLS: ReadonlyMap<string, Pick<ClientTool, 'description' | 'input_schema'>> = new Map(
  betaAgentToolset20260401({ workdir: '/nonexistent' }).map((t) => {
    const tool = t as unknown as { name: string; description?: string; input_schema: ClientTool['input_schema'] };
    return [tool.name, { description: tool.description || tool.name, input_schema: tool.input_schema }];
  }),
);

/** How long a self-hosted session waits for its worker's answer to a toolset call, as the hosted product does. */
export const DEFAULT_SELF_HOSTED_TOOL_TIMEOUT_SECONDS = 120;

const policyOf = (p: Policy): ToolPolicy => p.type;

/** A session's vaults: its MCP servers' credentials are looked up there by URL, on the tools worker. */
export interface VaultBinding {
  workspaceId: string;
  vaultIds: string[];
}

/**
 * The agent file for `agent` in `environment`, or a 400 naming what the platform cannot run yet. With `vaults`, each
 * MCP server carries the binding (ids only), which reaches the tools worker inside the activity's input. A session's
 * repository (its github_repository resource) is the sandbox's repo, with git_push and git_pull to exchange commits.
 */
export function agentFileFor(
  agent: ApiAgent,
  environment: ApiEnvironment,
  vaults?: VaultBinding,
  repo?: SandboxRecipe['repo'],
  selfHostedTimeoutSeconds = DEFAULT_SELF_HOSTED_TOOL_TIMEOUT_SECONDS,
): Agent {
  const selfHosted = environment.config.type === 'self_hosted';
  if (selfHosted && repo)
    throw badRequest(
      `resources: a github_repository cannot be cloned for a session of the self-hosted environment ${environment.id}: its worker runs in the operator's own working directory`,
    );
  const tools: Agent['tools'] = [];
  const policies: Record<string, ToolPolicy> = {};
  const clientTools: ClientTool[] = [];
  let webFetch: Agent['webFetch'];
  const apiVaults =
    vaults && vaults.vaultIds.length > 0
      ? { apiVaults: { workspaceId: vaults.workspaceId, vaultIds: vaults.vaultIds } }
      : {};
  const mcpServers: Record<string, { transport: 'http'; url: string; apiVaults?: VaultBinding; tenant: true }> = {};
  const servers = new Map(agent.mcp_servers.map((s) => [s.name, s.url]));

  for (const t of agent.tools) {
    if (t.type === 'agent_toolset_20260401') {
      for (const c of t.configs) {
        if (c.name === 'web_fetch' && c.enabled) {
          webFetch = {
            ...(c.allowed_domains ? { allowedDomains: c.allowed_domains } : {}),
            ...(c.blocked_domains ? { blockedDomains: c.blocked_domains } : {}),
            ...(typeof c.max_content_tokens === 'number' ? { maxContentTokens: c.max_content_tokens } : {}),
          };
          policies[c.name] = policyOf(c.permission_policy as Policy);
          continue;
        }
        const entry = TOOLSET_ENTRIES[c.name];
        if (!c.enabled || !entry) continue;
        const served = SELF_HOSTED_TOOLS.get(c.name);
        if (selfHosted && served)
          clientTools.push({
            name: c.name,
            ...served,
            runsIn: 'environment',
            timeoutSeconds: selfHostedTimeoutSeconds,
          });
        else tools.push(entry);
        policies[c.name] = policyOf(c.permission_policy as Policy);
      }
    } else if (t.type === 'mcp_toolset') {
      if (!/^(?!.*__)[a-zA-Z0-9_-]{1,40}$/.test(t.mcp_server_name)) {
        throw badRequest(
          `agent.mcp_servers: server name ${t.mcp_server_name} cannot run here yet: names are 1-40 letters, digits, _ or -, without __`,
        );
      }
      // A tenant's URL: every connection to it passes the egress gate on the tools worker.
      mcpServers[t.mcp_server_name] = {
        transport: 'http',
        url: servers.get(t.mcp_server_name)!,
        ...apiVaults,
        tenant: true,
      };
      // The toolset's default (always_ask unless the agent says otherwise) covers the tools the server lists later.
      const d = t.default_config;
      policies[`mcp__${t.mcp_server_name}__*`] = d.enabled ? policyOf(d.permission_policy as Policy) : 'always_ask';
      for (const c of t.configs)
        policies[`mcp__${t.mcp_server_name}__${c.name}`] = c.enabled
          ? policyOf(c.permission_policy as Policy)
          : 'always_ask';
    } else {
      if (t.name.length > 64)
        throw badRequest(`agent.tools: custom tool ${t.name} cannot run here yet: names are at most 64 characters`);
      clientTools.push({
        name: t.name,
        description: t.description || t.name,
        input_schema: { ...t.input_schema, properties: t.input_schema.properties ?? {} } as ClientTool['input_schema'],
      });
    }
  }
  for (const [name, p] of Object.entries(policies))
    if (p === 'always_allow' && !name.startsWith('mcp__')) delete policies[name];
  if (repo) tools.push('git_push', 'git_pull');

  const parsed = AgentSchema.safeParse({
    name: agent.name.slice(0, 100),
    model: agent.model.id,
    ...(agent.system ? { system: agent.system } : {}),
    tools,
    clientTools,
    mcpServers,
    policies,
    ...(webFetch ? { webFetch } : {}),
    sandboxes: { main: { network: recipeNetwork(environment.config), ...(repo ? { repo } : {}) } },
  });
  if (!parsed.success)
    throw badRequest(`agent ${agent.id} version ${agent.version} cannot run here yet: ${formatIssues(parsed.error)}`);
  return parsed.data;
}
