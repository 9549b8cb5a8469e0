// An API agent version and environment as the project's agent file: what a session from the API will run.
import { agentFileFor } from '../../src/api/agent-file';
import type { ApiAgent } from '../../src/api/agents';
import type { ApiEnvironment } from '../../src/api/environments';

const policy = (type: 'always_allow' | 'always_ask') => ({ type });
const toolset = (over: Record<string, { enabled?: boolean; permission_policy?: ReturnType<typeof policy> }> = {}) => ({
  type: 'agent_toolset_20260401' as const,
  default_config: { enabled: true, permission_policy: policy('always_allow') },
  configs: (['bash', 'edit', 'read', 'write', 'glob', 'grep', 'web_fetch', 'web_search'] as const).map((name) => ({
    name,
    type: name,
    enabled: over[name]?.enabled ?? true,
    permission_policy: over[name]?.permission_policy ?? policy('always_allow'),
    ...(name === 'web_fetch' ? { url_sources: null } : {}),
  })) as Extract<ApiAgent['tools'][number], { type: 'agent_toolset_20260401' }>['configs'],
});
const agent = (tools: ApiAgent['tools'], mcp: ApiAgent['mcp_servers'] = []): ApiAgent => ({
  id: 'agent_1',
  type: 'agent',
  version: 3,
  name: 'coder',
  description: null,
  model: { id: 'claude-sonnet-5-5' },
  system: 'Be careful.',
  tools,
  mcp_servers: mcp,
  skills: [],
  multiagent: null,
  execution_identity: { type: 'service_account' },
  metadata: {},
  created_at: '',
  updated_at: '',
  archived_at: null,
});
const env = (networking: Extract<ApiEnvironment['config'], { type: 'cloud' }>['networking']): ApiEnvironment => ({
  id: 'env_1',
  type: 'environment',
  name: 'e',
  description: null,
  scope: 'organization',
  metadata: {},
  created_at: '',
  updated_at: '',
  archived_at: null,
  config: {
    type: 'cloud',
    networking,
    packages: { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] },
  },
});
const noNetwork = env({ type: 'limited', allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false });

const SHELL = { name: 'bash', tool: 'shell', sandbox: 'main' };

it("maps the toolset's tools onto their kinds under the toolset's names, bash onto the persistent shell, with always_ask as a policy", () => {
  const a = agentFileFor(agent([toolset({ bash: { permission_policy: policy('always_ask') } })]), noNetwork);
  expect(a).toMatchObject({
    name: 'coder',
    model: 'claude-sonnet-5-5',
    system: 'Be careful.',
    tools: [SHELL, 'edit', 'read', 'write', 'glob', 'grep'],
    policies: { bash: 'always_ask' },
  });
  expect(a.sandboxes.main.network).toBe('none');
});

it('offers only the enabled tools, each with its own policy', () => {
  const a = agentFileFor(
    agent([
      toolset({
        bash: { enabled: false },
        glob: { enabled: false },
        grep: { enabled: false },
        write: { permission_policy: policy('always_ask') },
        edit: { permission_policy: policy('always_ask') },
      }),
    ]),
    noNetwork,
  );
  expect(a.tools).toEqual(['edit', 'read', 'write']);
  expect(a.policies).toEqual({ edit: 'always_ask', write: 'always_ask' });
  const shellOnly = agentFileFor(
    agent([
      toolset({
        edit: { enabled: false },
        read: { enabled: false },
        write: { enabled: false },
        glob: { enabled: false },
        grep: { enabled: false },
      }),
    ]),
    noNetwork,
  );
  expect(shellOnly.tools).toEqual([SHELL]);
  expect(shellOnly.policies).toEqual({});
});

it('maps MCP toolsets to HTTP servers, custom tools to client tools, and unrestricted networking to bridge', () => {
  const a = agentFileFor(
    agent(
      [
        {
          type: 'mcp_toolset',
          mcp_server_name: 'tracker',
          default_config: { enabled: true, permission_policy: policy('always_ask') },
          configs: [{ name: 'list', enabled: true, permission_policy: policy('always_allow') }],
        },
        { type: 'custom', name: 'ask_user', description: 'Ask', input_schema: { type: 'object' } },
      ],
      [{ type: 'url', name: 'tracker', url: 'http://127.0.0.1:9000/mcp' }],
    ),
    env({ type: 'unrestricted' }),
  );
  expect(a.tools).toEqual([]);
  // Marked as a tenant's URL: the tools worker connects to it only through the egress gate.
  expect(a.mcpServers.tracker).toMatchObject({ transport: 'http', url: 'http://127.0.0.1:9000/mcp', tenant: true });
  // The toolset's default covers the tools the server lists later; a configured tool has its own policy.
  expect(a.policies).toEqual({ 'mcp__tracker__*': 'always_ask', mcp__tracker__list: 'always_allow' });
  expect(a.clientTools).toEqual([
    { name: 'ask_user', description: 'Ask', input_schema: { type: 'object', properties: {} } },
  ]);
  expect(a.sandboxes.main.network).toBe('bridge');
});

it("binds each MCP server to the session's vaults, by id, when the session has some", () => {
  const tools = [
    {
      type: 'mcp_toolset' as const,
      mcp_server_name: 'tracker',
      default_config: { enabled: true, permission_policy: policy('always_ask') },
      configs: [],
    },
  ];
  const servers = [{ type: 'url' as const, name: 'tracker', url: 'http://127.0.0.1:9000/mcp' }];
  const bound = agentFileFor(agent(tools, servers), noNetwork, {
    workspaceId: 'wrkspc_a',
    vaultIds: ['vlt_1', 'vlt_2'],
  });
  expect(bound.mcpServers.tracker).toMatchObject({
    url: 'http://127.0.0.1:9000/mcp',
    apiVaults: { workspaceId: 'wrkspc_a', vaultIds: ['vlt_1', 'vlt_2'] },
  });
  expect(bound.mcpServers.tracker).not.toHaveProperty('credential');
  expect(
    agentFileFor(agent(tools, servers), noNetwork, { workspaceId: 'wrkspc_a', vaultIds: [] }).mcpServers.tracker,
  ).not.toHaveProperty('apiVaults');
});

it('refuses, with a 400, what the agent file cannot hold yet', () => {
  expect(() =>
    agentFileFor(
      agent(
        [
          {
            type: 'mcp_toolset',
            mcp_server_name: 'a__b',
            default_config: { enabled: true, permission_policy: policy('always_ask') },
            configs: [],
          },
        ],
        [{ type: 'url', name: 'a__b', url: 'http://h/mcp' }],
      ),
      noNetwork,
    ),
  ).toThrow(/a__b cannot run here yet/);
});

it("offers web_fetch as the agent file's webFetch, with its domains, token cap and policy, and not when disabled", () => {
  const on = toolset({ web_fetch: { permission_policy: policy('always_ask') } });
  const wf = on.configs.find((c) => c.name === 'web_fetch')!;
  Object.assign(wf, { allowed_domains: ['docs.example.com'], max_content_tokens: 500 });
  const a = agentFileFor(agent([on]), noNetwork);
  expect(a.webFetch).toEqual({ allowedDomains: ['docs.example.com'], maxContentTokens: 500 });
  expect(a.policies.web_fetch).toBe('always_ask');
  expect(agentFileFor(agent([toolset({ web_fetch: { enabled: false } })]), noNetwork).webFetch).toBeUndefined();
});
