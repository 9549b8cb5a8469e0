// The conformance check itself (test/helpers/conformance.ts), and the shapes it holds the server to where no other
// suite reaches: the framework's own error replies, fields the SDK documents, and mcp_oauth_validate.
import Anthropic from '@anthropic-ai/sdk';
import { startTestApi, type TestApi } from '../helpers/api';
import { schemaErrors, sdkMethodFor, takeViolations } from '../helpers/conformance';

const messageOf = (e: unknown) =>
  ((e as InstanceType<typeof Anthropic.APIError>).error as { error: { message: string } }).error.message;
const SDK_ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  'timeout_error',
  'api_error',
  'overloaded_error',
];

describe('the conformance check', () => {
  it('maps requests onto SDK methods by verb and route', () => {
    expect(sdkMethodFor('GET', '/v1/agents/agent_1/versions')?.name).toBe('beta.agents.versions.list');
    expect(sdkMethodFor('POST', '/v1/vaults/vlt_1/credentials/vcrd_1/archive')?.name).toBe(
      'beta.vaults.credentials.archive',
    );
    expect(sdkMethodFor('GET', '/v1/sessions/sesn_1/events/stream')).toMatchObject({
      kind: 'stream',
      type: 'BetaManagedAgentsStreamSessionEvents',
    });
  });

  it("names the path and the rule a body breaks, checking a union's member by its type", () => {
    const toolset = {
      type: 'agent_toolset_20260401',
      default_config: { enabled: true, permission_policy: { type: 'always_allow' } },
      configs: [{ name: 'web_fetch', type: 'web_fetch', enabled: true, permission_policy: { type: 'always_allow' } }],
    };
    const agent = {
      id: 'agent_1',
      type: 'agent',
      name: 'a',
      description: null,
      model: { id: 'm' },
      system: null,
      tools: [toolset],
      mcp_servers: [],
      skills: [],
      multiagent: null,
      execution_identity: { type: 'service_account' },
      metadata: {},
      version: 1,
      created_at: 't',
      updated_at: 't',
      archived_at: null,
    };
    expect(schemaErrors('beta.agents.create', agent)).toMatch(
      /^\/tools\/0\/configs\/0: must have required property 'url_sources' got \{"name":"web_fetch",.* \[#\/required\]$/,
    );
    expect(schemaErrors('beta.agents.create', { ...agent, extra: 1 })).toContain(
      'must NOT have additional properties (extra)',
    );
    const page = {
      data: [
        { type: 'agent.message', id: 'sevt_1', processed_at: 't' },
        { type: 'agent.nonsense', id: 'sevt_2', processed_at: 't' },
      ],
      next_page: null,
    };
    const errors = schemaErrors('beta.sessions.events.list', page);
    expect(errors).toContain("/data/0: must have required property 'content'");
    expect(errors).toContain('/data/1: value of tag "type" must be in oneOf');
    expect(
      schemaErrors('$error', {
        type: 'error',
        error: { type: 'request_too_large', message: 'x' },
        request_id: 'req_1',
      }),
    ).toContain('/error: value of tag "type" must be in oneOf');
  });
});

describe('shapes the SDK documents', () => {
  let api: TestApi;
  let client: Anthropic;
  beforeAll(async () => {
    api = await startTestApi('postgres');
    client = await api.client();
  });
  afterAll(async () => api?.stop());

  it('answers the framework’s own errors (too large, malformed, bad URL, unknown route) with the envelope, a type the SDK knows and a request-id', async () => {
    const headers = {
      authorization: `Bearer ${await api.key()}`,
      'anthropic-beta': 'managed-agents-2026-04-01',
      'content-type': 'application/json',
    };
    const replies = [
      await fetch(`${api.url}/v1/agents`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'x'.repeat(9 * 1024 * 1024), model: 'm' }),
      }),
      await fetch(`${api.url}/v1/agents`, { method: 'POST', headers, body: '{"name":' }),
      await fetch(`${api.url}/v1/agents/%E0%A4%A`, { headers }),
      await fetch(`${api.url}/v1/nothing-here`, { headers }),
    ];
    expect(replies.map((r) => r.status)).toEqual([413, 400, 400, 404]);
    for (const r of replies) {
      const body = (await r.json()) as { error: { type: string }; request_id: string };
      expect(SDK_ERROR_TYPES).toContain(body.error.type);
      expect(r.headers.get('request-id')).toBe(body.request_id);
      expect(schemaErrors('$error', body)).toBe('');
    }
    expect(takeViolations()).toEqual([]);
  });

  it('keeps an empty environment description as given, and takes effort null as the model default', async () => {
    const env = await client.beta.environments.create({ name: 'described', description: '' });
    expect(env.description).toBe('');
    expect((await client.beta.environments.update(env.id, { description: '' })).description).toBe('');
    expect((await client.beta.environments.update(env.id, { description: null })).description).toBeNull();
    const agent = await client.beta.agents.create({
      name: 'effortless',
      model: { id: 'claude-sonnet-4-5', effort: null },
    });
    expect(agent.model).toEqual({ id: 'claude-sonnet-4-5' });
    const updated = await client.beta.agents.update(agent.id, {
      version: agent.version,
      model: { id: 'claude-sonnet-4-5', effort: 'high' },
    });
    expect(updated.model).toEqual({ id: 'claude-sonnet-4-5', effort: { type: 'high' } });
  });

  it("resolves the toolset's web_fetch with url_sources in the object form, null when not set", async () => {
    const plain = await client.beta.agents.create({
      name: 'tools',
      model: 'claude-sonnet-4-5',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const configs = (plain.tools[0] as Anthropic.Beta.BetaManagedAgentsAgentToolset20260401).configs;
    expect(configs.find((c) => c.name === 'web_fetch')).toMatchObject({ url_sources: null });
  });

  it('refuses mcp_oauth_validate with a 400 that says why, after the 404 of an unknown credential and the 400 of a bearer token', async () => {
    const vault = await client.beta.vaults.create({ display_name: 'validate' });
    await expect(
      client.beta.vaults.credentials.mcpOAuthValidate('vcrd_01nothing', { vault_id: vault.id }),
    ).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    const bearer = await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'https://mcp.example/a', token: 'tok-1' },
    });
    const e1 = await client.beta.vaults.credentials
      .mcpOAuthValidate(bearer.id, { vault_id: vault.id })
      .catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(Anthropic.BadRequestError);
    expect(messageOf(e1)).toBe(
      `credential ${bearer.id} is a static_bearer credential; only mcp_oauth credentials can be validated`,
    );
    const oauth = await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'mcp_oauth', mcp_server_url: 'https://mcp.example/b', access_token: 'acc-1' },
    });
    const e2 = await client.beta.vaults.credentials
      .mcpOAuthValidate(oauth.id, { vault_id: vault.id })
      .catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(Anthropic.BadRequestError);
    expect(messageOf(e2)).toMatch(
      /^mcp_oauth_validate is not supported: the probe needs the access token, which only tools workers can open/,
    );
  });
});
