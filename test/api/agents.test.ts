// client.beta.agents against the API server, on PostgreSQL and on the embedded default.
import Anthropic from '@anthropic-ai/sdk';
import { STORAGES, startTestApi, type TestApi } from '../helpers/api';

// The MCP server these agents name is on loopback: the egress gate refuses it unless opened.
process.env.EGRESS_ALLOW = '127.0.0.1:9000';

describe.each(STORAGES)('agents on %s', (storage) => {
  let api: TestApi;
  let client: Anthropic;
  beforeAll(async () => {
    api = await startTestApi(storage, ['default', 'list', 'bad']);
    client = await api.client();
  });
  afterAll(async () => api?.stop());

  it('creates an agent at version 1 with its tools resolved', async () => {
    const agent = await client.beta.agents.create({
      name: 'coder',
      model: 'claude-sonnet-5-5',
      system: 'You are careful.',
      tools: [
        { type: 'agent_toolset_20260401', configs: [{ name: 'bash', permission_policy: { type: 'always_ask' } }] },
        { type: 'mcp_toolset', mcp_server_name: 'tracker' },
        {
          type: 'custom',
          name: 'ask_user',
          description: 'Ask the user',
          input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
      mcp_servers: [{ type: 'url', name: 'tracker', url: 'http://127.0.0.1:9000/mcp' }],
      metadata: { team: 'a' },
    });
    expect(agent).toMatchObject({
      type: 'agent',
      name: 'coder',
      version: 1,
      model: { id: 'claude-sonnet-5-5' },
      system: 'You are careful.',
      archived_at: null,
      metadata: { team: 'a' },
    });
    expect(agent.id).toMatch(/^agent_/);
    const toolset = agent.tools.find((t) => t.type === 'agent_toolset_20260401');
    expect(toolset).toMatchObject({ default_config: { enabled: true, permission_policy: { type: 'always_allow' } } });
    const configs = toolset && 'configs' in toolset ? toolset.configs : [];
    expect(configs.map((c) => c.name)).toEqual([
      'bash',
      'edit',
      'read',
      'write',
      'glob',
      'grep',
      'web_fetch',
      'web_search',
    ]);
    expect(configs.find((c) => c.name === 'bash')?.permission_policy).toEqual({ type: 'always_ask' });
    expect(agent.tools.find((t) => t.type === 'mcp_toolset')).toMatchObject({
      default_config: { enabled: true, permission_policy: { type: 'always_ask' } },
    });
  });

  it('keeps every version: update bumps it, retrieve reads any, versions.list pages newest first', async () => {
    const a = await client.beta.agents.create({ name: 'v', model: 'claude-haiku-5-5' });
    const b = await client.beta.agents.update(a.id, { version: 1, system: 'second' });
    const c = await client.beta.agents.update(a.id, {
      version: 2,
      model: { id: 'claude-opus-5-5', effort: 'high' },
      metadata: { k: 'v' },
    });
    expect([b.version, c.version]).toEqual([2, 3]);
    expect(c.model).toEqual({ id: 'claude-opus-5-5', effort: { type: 'high' } });
    expect((await client.beta.agents.retrieve(a.id, { version: 1 })).system).toBeNull();
    expect((await client.beta.agents.retrieve(a.id, { version: 2 })).system).toBe('second');
    expect((await client.beta.agents.retrieve(a.id)).version).toBe(3);
    const versions = [];
    for await (const v of client.beta.agents.versions.list(a.id, { limit: 2 })) versions.push(v.version);
    expect(versions).toEqual([3, 2, 1]);
  });

  it('an update that changes nothing keeps the version', async () => {
    const a = await client.beta.agents.create({ name: 'same', model: 'claude-haiku-5-5', system: 's' });
    expect((await client.beta.agents.update(a.id, { version: 1, system: 's', name: 'same' })).version).toBe(1);
  });

  it('refuses a stale version with a 409 the SDK does not retry', async () => {
    const a = await client.beta.agents.create({ name: 'race', model: 'claude-haiku-5-5' });
    await client.beta.agents.update(a.id, { version: 1, description: 'first writer' });
    const retrying = new Anthropic({ apiKey: await api.key(), baseURL: api.url, maxRetries: 2 });
    const err = await retrying.beta.agents
      .update(a.id, { version: 1, description: 'second writer' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.ConflictError);
    const conflict = err as InstanceType<typeof Anthropic.ConflictError>;
    expect(conflict.headers.get('x-should-retry')).toBe('false');
    expect(conflict.error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringContaining('version 1 is stale') },
    });
    expect((await client.beta.agents.retrieve(a.id)).description).toBe('first writer');
  });

  it('lists with cursors, hides archived agents unless asked, and archives for good', async () => {
    const ws = await api.client('list');
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push((await ws.beta.agents.create({ name: `a${i}`, model: 'claude-haiku-5-5' })).id);
    const first = await ws.beta.agents.list({ limit: 2 });
    expect(first.data.map((a) => a.name)).toEqual(['a4', 'a3']);
    const all = [];
    for await (const a of ws.beta.agents.list({ limit: 2 })) all.push(a.id);
    expect(all).toEqual([...made].reverse());
    const archived = await ws.beta.agents.archive(made[0]);
    expect(archived.archived_at).not.toBeNull();
    const live = [];
    for await (const a of ws.beta.agents.list()) live.push(a.id);
    expect(live).not.toContain(made[0]);
    const withArchived = [];
    for await (const a of ws.beta.agents.list({ include_archived: true })) withArchived.push(a.id);
    expect(withArchived).toContain(made[0]);
    await expect(ws.beta.agents.update(made[0], { name: 'again' })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('refuses bad input with a 400 naming the field, and stores nothing', async () => {
    const ws = await api.client('bad');
    const cases: [unknown, RegExp][] = [
      [{ name: '', model: 'claude-haiku-5-5' }, /name/],
      [{ name: 'x' }, /model/],
      [
        { name: 'x', model: 'm', tools: [{ type: 'mcp_toolset', mcp_server_name: 'nope' }] },
        /tools\.0\.mcp_server_name/,
      ],
      [
        { name: 'x', model: 'm', mcp_servers: [{ type: 'url', name: 's', url: 'http://h/mcp' }] },
        /mcp_servers\.0.*not used/,
      ],
      [
        {
          name: 'x',
          model: 'm',
          tools: [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'sometimes' } } }],
        },
        /permission_policy.*always_allow, always_ask or auto/,
      ],
      [
        { name: 'x', model: 'm', skills: [{ type: 'anthropic', skill_id: 'pdf' }] },
        /skills\.0: Anthropic's pre-built skills/,
      ],
      [
        { name: 'x', model: 'm', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
        /metadata/,
      ],
      [{ name: 'x', model: 'm', colour: 'blue' }, /colour/],
    ];
    for (const [body, message] of cases) {
      const err = await ws.beta.agents.create(body as Anthropic.Beta.AgentCreateParams).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      const e = err as InstanceType<typeof Anthropic.BadRequestError>;
      expect(e.error).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error' },
        request_id: expect.stringMatching(/^req_/),
      });
      expect((e.error as { error: { message: string } }).error.message).toMatch(message);
    }
    expect((await ws.beta.agents.list()).data).toEqual([]);
  });

  it('answers an unknown agent or version with a 404', async () => {
    await expect(client.beta.agents.retrieve('agent_nope')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    const a = await client.beta.agents.create({ name: 'one', model: 'claude-haiku-5-5' });
    await expect(client.beta.agents.retrieve(a.id, { version: 2 })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});
