// Nothing accepted and then ignored, for the lists that need no session: each filter of agents.list,
// agents.versions.list, environments.list, vaults.list and credentials.list filters (through the SDK); a parameter
// a route does not take is a 400 naming it; cursors carry their filters and refuse forgeries; unknown routes are
// 404 whatever they carry; and the web tools are refused rather than shown enabled.
import Anthropic from '@anthropic-ai/sdk';
import { startTestApi, type TestApi } from '../helpers/api';

let api: TestApi;
let client: Anthropic;
let key: string;
const BETA = { 'anthropic-beta': 'managed-agents-2026-04-01' };

beforeAll(async () => {
  api = await startTestApi('postgres', ['default', 'lists']);
  key = await api.key('lists');
  client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });
});
afterAll(async () => api?.stop());

async function all<T>(page: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of page) out.push(x);
  return out;
}
const ids = (xs: { id: string }[]) => xs.map((x) => x.id);

/** The error body a raw request gets. */
async function raw(
  path: string,
  init: RequestInit & { headers?: Record<string, string> } = {},
): Promise<{ status: number; body: { error?: { type: string; message: string } } }> {
  const res = await fetch(`${api.url}${path}`, init);
  return { status: res.status, body: (await res.json()) as { error?: { type: string; message: string } } };
}

describe('agents.list', () => {
  it('filters by created_at[gte] and created_at[lte], inclusive at the times it returned', async () => {
    const made = [];
    for (const name of ['t1', 't2', 't3', 't4'])
      made.push(await client.beta.agents.create({ name, model: 'claude-test' }));
    const [a1, a2, a3, a4] = made;
    const mine = new Set(ids(made));
    const listed = async (q: Anthropic.Beta.AgentListParams) =>
      ids(await all(client.beta.agents.list(q))).filter((id) => mine.has(id));
    expect(await listed({})).toEqual([a4.id, a3.id, a2.id, a1.id]);
    expect(await listed({ 'created_at[gte]': a2.created_at })).toEqual([a4.id, a3.id, a2.id]);
    expect(await listed({ 'created_at[lte]': a3.created_at })).toEqual([a3.id, a2.id, a1.id]);
    expect(await listed({ 'created_at[gte]': a2.created_at, 'created_at[lte]': a3.created_at, limit: 1 })).toEqual([
      a3.id,
      a2.id,
    ]);
  });

  it('hides archived agents unless include_archived is true', async () => {
    const kept = await client.beta.agents.create({ name: 'kept', model: 'claude-test' });
    const gone = await client.beta.agents.create({ name: 'gone', model: 'claude-test' });
    await client.beta.agents.archive(gone.id);
    expect(ids(await all(client.beta.agents.list()))).toContain(kept.id);
    expect(ids(await all(client.beta.agents.list()))).not.toContain(gone.id);
    expect(ids(await all(client.beta.agents.list({ include_archived: false })))).not.toContain(gone.id);
    expect(ids(await all(client.beta.agents.list({ include_archived: true })))).toEqual(
      expect.arrayContaining([kept.id, gone.id]),
    );
  });

  it('pages with limit, each agent once, even when agents are created between pages', async () => {
    const before = ids(await all(client.beta.agents.list()));
    const first = await client.beta.agents.list({ limit: 2 });
    expect(first.data).toHaveLength(2);
    const added = await client.beta.agents.create({ name: 'late', model: 'claude-test' });
    const rest: string[] = [];
    for (let p = first; p.hasNextPage();) {
      p = await p.getNextPage();
      rest.push(...ids(p.data));
    }
    expect([...ids(first.data), ...rest]).toEqual(before);
    expect(rest).not.toContain(added.id);
  });

  it('refuses a parameter it does not take, by name, and a cursor sent with other filters', async () => {
    await expect(client.beta.agents.list({ order: 'asc' } as Anthropic.Beta.AgentListParams)).rejects.toThrow(
      /order is not a parameter this endpoint takes/,
    );
    await expect(
      client.beta.agents.list({ 'created_at[gt]': '2026-01-01T00:00:00Z' } as Anthropic.Beta.AgentListParams),
    ).rejects.toThrow(/created_at\[gt\]/);
    await expect(client.beta.agents.list({ 'created_at[gte]': 'yesterday' })).rejects.toThrow(
      /created_at\[gte\].*RFC 3339/,
    );
    const first = await client.beta.agents.list({ limit: 1, include_archived: true });
    expect(first.next_page).toBeTruthy();
    await expect(client.beta.agents.list({ limit: 1, page: first.next_page })).rejects.toThrow(/other filters/);
    // The same filter spelled out or left to its default is the same filter.
    const def = await client.beta.agents.list({ limit: 1 });
    expect(
      (await client.beta.agents.list({ limit: 1, include_archived: false, page: def.next_page })).data,
    ).toHaveLength(1);
  });

  it('refuses a forged, malformed or huge cursor with a 400', async () => {
    const forged = Buffer.from(JSON.stringify({ k: 5, o: 'asc' })).toString('base64url');
    for (const page of ['not a cursor', 'e30', Buffer.from('[1,2]').toString('base64url'), forged, 'A'.repeat(5000)]) {
      await expect(client.beta.agents.list({ page })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    }
    await expect(client.beta.agents.list({ page: forged })).rejects.toThrow(/order=asc/);
  });
});

describe('agents.versions.list', () => {
  it('pages versions newest first, and refuses include_archived, which it does not take', async () => {
    const a = await client.beta.agents.create({ name: 'v', model: 'claude-test' });
    await client.beta.agents.update(a.id, { version: 1, system: 'two' });
    await client.beta.agents.update(a.id, { version: 2, system: 'three' });
    const first = await client.beta.agents.versions.list(a.id, { limit: 2 });
    expect(first.data.map((v) => v.version)).toEqual([3, 2]);
    expect((await first.getNextPage()).data.map((v) => v.version)).toEqual([1]);
    await expect(
      client.beta.agents.versions.list(a.id, { include_archived: true } as Anthropic.Beta.Agents.VersionListParams),
    ).rejects.toThrow(/include_archived is not a parameter/);
  });
});

describe('environments, vaults and credentials', () => {
  it('environments.list hides archived environments unless include_archived is true, and pages with limit', async () => {
    const kept = await client.beta.environments.create({ name: 'kept-env' });
    const gone = await client.beta.environments.create({ name: 'gone-env' });
    await client.beta.environments.archive(gone.id);
    expect(ids(await all(client.beta.environments.list()))).toEqual([kept.id]);
    expect(ids(await all(client.beta.environments.list({ include_archived: true, limit: 1 })))).toEqual([
      gone.id,
      kept.id,
    ]);
  });

  it('vaults.list and credentials.list hide archived ones unless include_archived is true', async () => {
    const kept = await client.beta.vaults.create({ display_name: 'kept-vault' });
    const gone = await client.beta.vaults.create({ display_name: 'gone-vault' });
    await client.beta.vaults.archive(gone.id);
    expect(ids(await all(client.beta.vaults.list()))).toEqual([kept.id]);
    expect(ids(await all(client.beta.vaults.list({ include_archived: true, limit: 1 })))).toEqual([gone.id, kept.id]);

    const c1 = await client.beta.vaults.credentials.create(kept.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9101/mcp', token: 'x' },
    });
    const c2 = await client.beta.vaults.credentials.create(kept.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9102/mcp', token: 'y' },
    });
    await client.beta.vaults.credentials.archive(c2.id, { vault_id: kept.id });
    expect(ids(await all(client.beta.vaults.credentials.list(kept.id)))).toEqual([c1.id]);
    expect(ids(await all(client.beta.vaults.credentials.list(kept.id, { include_archived: true, limit: 1 })))).toEqual([
      c2.id,
      c1.id,
    ]);
  });

  it('refuses query parameters on a route that takes none, and a body on one that takes none', async () => {
    const env = await client.beta.environments.create({ name: 'q' });
    const got = await raw(`/v1/environments/${env.id}?expand=config`, { headers: { 'x-api-key': key, ...BETA } });
    expect(got.status).toBe(400);
    expect(got.body.error?.message).toMatch(/expand is not a parameter this endpoint takes/);
    const archived = await raw(`/v1/environments/${env.id}/archive`, {
      method: 'POST',
      headers: { 'x-api-key': key, ...BETA, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'x' }),
    });
    expect(archived.status).toBe(400);
    expect((await client.beta.environments.retrieve(env.id)).archived_at).toBeNull();
  });
});

describe('routing before the beta check', () => {
  it('answers an unknown route 404 not_found_error whatever headers it carries', async () => {
    const headerSets: Record<string, string>[] = [
      {},
      { 'x-api-key': key },
      { 'x-api-key': key, ...BETA },
      { 'x-api-key': 'wrong', 'anthropic-beta': 'other' },
    ];
    for (const path of ['/v1/files/file_x/nothing', '/v1/skills', '/v1/memory_stores', '/v1/agents/agent_x/nothing']) {
      for (const headers of headerSets) {
        const got = await raw(path, { headers });
        expect({ path, headers, status: got.status, type: got.body.error?.type }).toEqual({
          path,
          headers,
          status: 404,
          type: 'not_found_error',
        });
      }
    }
  });

  it('keeps 401 for a known route without a key, and 400 for one without the managed-agents beta', async () => {
    expect((await raw('/v1/agents', { headers: BETA })).status).toBe(401);
    const noBeta = await raw('/v1/agents', { headers: { 'x-api-key': key } });
    expect(noBeta.status).toBe(400);
    expect(noBeta.body.error?.message).toMatch(/managed-agents-2026-04-01/);
  });
});

describe('web tools', () => {
  it('resolves the default toolset with web_fetch enabled and web_search disabled, web_fetch in the SDK shape', async () => {
    const agent = await client.beta.agents.create({
      name: 'w',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const toolset = agent.tools[0] as Anthropic.Beta.BetaManagedAgentsAgentToolset20260401;
    expect(toolset.default_config.enabled).toBe(true);
    const byName = Object.fromEntries(toolset.configs.map((c) => [c.name, c]));
    expect(byName.bash.enabled).toBe(true);
    expect(byName.web_fetch).toEqual({
      name: 'web_fetch',
      type: 'web_fetch',
      enabled: true,
      permission_policy: { type: 'always_allow' },
      url_sources: null,
    });
    expect(byName.web_search).toEqual({
      name: 'web_search',
      type: 'web_search',
      enabled: false,
      permission_policy: { type: 'always_allow' },
    });
  });

  it('keeps a disabled web tool’s settings in the object form responses use', async () => {
    const agent = await client.beta.agents.create({
      name: 'w2',
      model: 'claude-test',
      tools: [
        {
          type: 'agent_toolset_20260401',
          configs: [
            {
              name: 'web_fetch',
              enabled: false,
              allowed_domains: ['docs.example.com'],
              url_sources: { user_input: 'none' },
            },
          ],
        },
      ],
    });
    const fetchConfig = (agent.tools[0] as Anthropic.Beta.BetaManagedAgentsAgentToolset20260401).configs.find(
      (c) => c.name === 'web_fetch',
    );
    expect(fetchConfig).toMatchObject({
      enabled: false,
      allowed_domains: ['docs.example.com'],
      url_sources: { user_input: { type: 'none' }, client_tool_results: null, server_tool_results: null },
    });
  });

  it('refuses enabling web_search, and web_fetch settings it cannot honour, with a 400 naming the config, on create and on update', async () => {
    const a = await client.beta.agents.create({ name: 'w4', model: 'claude-test' });
    await expect(
      client.beta.agents.update(a.id, {
        version: 1,
        tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'web_search', enabled: true }] }],
      }),
    ).rejects.toThrow(
      /tools\.0\.configs\.0\.enabled: web_search is not offered to the model on this platform \(no search backend exists\)/,
    );
    await expect(
      client.beta.agents.create({
        name: 'w3',
        model: 'claude-test',
        tools: [
          {
            type: 'agent_toolset_20260401',
            configs: [{ name: 'bash' }, { name: 'web_fetch', url_sources: { user_input: 'none' } }],
          },
        ],
      }),
    ).rejects.toThrow(/tools\.0\.configs\.1\.url_sources: .*cannot be honoured/);
    await expect(
      client.beta.agents.create({
        name: 'w3',
        model: 'claude-test',
        tools: [
          {
            type: 'agent_toolset_20260401',
            configs: [{ name: 'web_fetch', allowed_domains: ['a.example'], blocked_domains: ['b.example'] }],
          },
        ],
      }),
    ).rejects.toThrow(/tools\.0\.configs\.0\.blocked_domains: allowed_domains and blocked_domains cannot be combined/);
    await expect(
      client.beta.agents.create({
        name: 'w3',
        model: 'claude-test',
        tools: [
          {
            type: 'agent_toolset_20260401',
            configs: [{ name: 'web_fetch', allowed_domains: ['https://a.example/x'] }],
          },
        ],
      }),
    ).rejects.toThrow(/allowed_domains.*plain hostname/);
    await expect(
      client.beta.agents.create({
        name: 'w5',
        model: 'claude-test',
        tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'web_fetch', colour: 'red' } as never] }],
      }),
    ).rejects.toThrow(/colour is not a field/);
    expect((await client.beta.agents.retrieve(a.id)).version).toBe(1);
  });
});
