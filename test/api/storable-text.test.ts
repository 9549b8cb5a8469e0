// A NUL or an unpaired surrogate in any string a request carries is a 400 naming the field, on every route, and
// nothing is stored; a well-formed pair (an emoji) is stored and read back intact.
import Anthropic from '@anthropic-ai/sdk';
import { STORAGES, startTestApi, type TestApi } from '../helpers/api';

const BAD = {
  nul: 'a\u0000b',
  'lone high surrogate': 'a\ud800b',
  'lone low surrogate': 'a\udc00b',
  'reversed pair': '\udc00\ud800',
};
const BETA = { 'anthropic-beta': 'managed-agents-2026-04-01' };
const MESSAGE = 'must not contain NUL (\\u0000) or an unpaired surrogate (\\ud800-\\udfff)';

describe.each(STORAGES)('unstorable strings on %s', (storage) => {
  let api: TestApi;
  let client: Anthropic;
  let agentId: string;
  let envId: string;
  let vaultId: string;
  beforeAll(async () => {
    api = await startTestApi(storage);
    client = await api.client();
    agentId = (await client.beta.agents.create({ name: 'base', model: 'claude-haiku-5-5' })).id;
    envId = (await client.beta.environments.create({ name: 'base' })).id;
    vaultId = (await client.beta.vaults.create({ display_name: 'base' })).id;
  });
  afterAll(async () => api?.stop());

  const counts = async () => ({
    agents: (await client.beta.agents.list({ limit: 100 })).data.map((a) => [a.name, a.version, a.metadata]),
    environments: (await client.beta.environments.list({ limit: 100 })).data.map((e) => [e.name, e.metadata]),
    vaults: (await client.beta.vaults.list({ limit: 100 })).data.map((v) => [v.display_name, v.metadata]),
    sessions: (await client.beta.sessions.list({ limit: 100 })).data.length,
  });

  // The five routes that store a name, title or metadata value, each with the field that carries the string.
  const requests: [string, string, (s: string) => Record<string, unknown>, string][] = [
    ['create an agent', '/v1/agents', (s) => ({ name: s, model: 'claude-haiku-5-5' }), 'name'],
    ['update an agent', '/v1/agents/{agent}', (s) => ({ version: 1, metadata: { team: s } }), 'metadata.team'],
    ['create an environment', '/v1/environments', (s) => ({ name: s }), 'name'],
    ['create a vault', '/v1/vaults', (s) => ({ display_name: 'v', metadata: { k: s } }), 'metadata.k'],
    ['create a session', '/v1/sessions', (s) => ({ agent: agentId, environment_id: envId, title: s }), 'title'],
  ];

  it.each(requests)(
    'refuses them to %s with a 400 naming the field, and stores nothing',
    async (_what, route, body, field) => {
      const before = await counts();
      for (const [kind, s] of Object.entries(BAD)) {
        const err = await client
          .post(route.replace('{agent}', agentId), { headers: BETA, body: body(s) })
          .catch((e: unknown) => e);
        expect({ kind, err }).toMatchObject({ kind, err: expect.any(Anthropic.BadRequestError) });
        expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
          error: { type: 'invalid_request_error', message: `${field}: ${MESSAGE}` },
        });
      }
      expect(await counts()).toEqual(before);
    },
  );

  it('refuses them in a metadata key, a vault update, a query string and deep inside a body', async () => {
    const key = await client
      .post('/v1/environments', { headers: BETA, body: { name: 'k', metadata: { 'a\u0000': 'v' } } })
      .catch((e: unknown) => e);
    expect((key as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { message: `metadata: keys ${MESSAGE}` },
    });
    const update = await client.beta.vaults.update(vaultId, { display_name: 'x\ud83d' }).catch((e: unknown) => e);
    expect((update as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { message: `display_name: ${MESSAGE}` },
    });
    const query = await client.beta.agents.list({ page: 'p\u0000' }).catch((e: unknown) => e);
    expect((query as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { message: `query parameter page: ${MESSAGE}` },
    });
    const deep = await client.beta.agents
      .create({
        name: 'deep',
        model: 'claude-haiku-5-5',
        tools: [
          {
            type: 'custom',
            name: 'f',
            description: 'd',
            input_schema: { type: 'object', properties: { q: { type: 'string', description: 'q\udfff' } } },
          },
        ],
      })
      .catch((e: unknown) => e);
    expect((deep as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { message: `tools.0.input_schema.properties.q.description: ${MESSAGE}` },
    });
    expect((await client.beta.vaults.retrieve(vaultId)).display_name).toBe('base');
    expect((await client.beta.agents.list({ limit: 100 })).data.map((a) => a.name)).toEqual(['base']);
  });

  it('refuses a body nested 100,000 deep with a 400 naming where, never a 5xx', async () => {
    const res = await fetch(`${api.url}/v1/agents`, {
      method: 'POST',
      headers: {
        'x-api-key': await api.key(),
        'anthropic-beta': 'managed-agents-2026-04-01',
        'content-type': 'application/json',
      },
      body: `{"name":"n","model":"m","metadata":${'['.repeat(100_000)}"\\u0000"${']'.repeat(100_000)}}`,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /^metadata(\.0)+\.?…: nested deeper than 128 levels$/,
    );
    const deepSchema = await fetch(`${api.url}/v1/agents`, {
      method: 'POST',
      headers: {
        'x-api-key': await api.key(),
        'anthropic-beta': 'managed-agents-2026-04-01',
        'content-type': 'application/json',
      },
      body: `{"name":"n","model":"m","tools":[{"type":"custom","name":"f","description":"d","input_schema":{"type":"object","properties":{"q":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}}}]}`,
    });
    expect(deepSchema.status).toBe(400);
    expect(((await deepSchema.json()) as { error: { message: string } }).error.message).toMatch(
      /^tools\.0\.input_schema\.properties\.q(\.a)+\.?…: nested deeper than 128 levels$/,
    );
    expect((await client.beta.agents.list({ limit: 100 })).data.map((a) => a.name)).not.toContain('n');
  });

  it('stores a well-formed surrogate pair and reads it back unchanged', async () => {
    const agent = await client.beta.agents.create({
      name: 'robot \u{1F916}',
      model: 'claude-haiku-5-5',
      metadata: { mood: '\u{1F600}' },
    });
    expect(await client.beta.agents.retrieve(agent.id)).toMatchObject({
      name: 'robot \u{1F916}',
      metadata: { mood: '\u{1F600}' },
    });
  });
});
