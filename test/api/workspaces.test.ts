// Keys and workspaces: a request needs a live key (x-api-key or Authorization: Bearer), and sees only its own
// workspace, where another workspace's id is a 404 like one that does not exist. Keys come from `agents api-keys`.
import Anthropic from '@anthropic-ai/sdk';
import { runAgents } from '../helpers/cli';
import { startTestApi, type TestApi } from '../helpers/api';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('postgres');
});
afterAll(async () => api?.stop());

const cliEnv = () => ({ DATABASE_URL: api.databaseUrl!, DATA_DIR: api.dataDir, KEY_FILES: 'off' });
const NOT_FOUND = Anthropic.NotFoundError;

it('answers 401 with the error envelope without a key, with a wrong one, and with a revoked one', async () => {
  const none = new Anthropic({ apiKey: 'sk-ma-not-a-key', baseURL: api.url, maxRetries: 0 });
  const err = await none.beta.agents.list().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
  expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
    type: 'error',
    error: { type: 'authentication_error', message: 'invalid API key' },
    request_id: expect.stringMatching(/^req_/),
  });

  const made = await runAgents('localhost:7233', ['api-keys', 'create', '--workspace', 'revokers', '--json'], cliEnv());
  expect(made.code).toBe(0);
  const { key, workspace, id } = JSON.parse(made.stdout) as { key: string; workspace: string; id: string };
  expect(workspace).toBe('revokers');
  const client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });
  expect((await client.beta.agents.list()).data).toEqual([]);

  const listed = await runAgents('localhost:7233', ['api-keys', 'list', '--json'], cliEnv());
  expect(listed.stdout).toContain(id);
  expect(listed.stdout).not.toContain(key);

  expect((await runAgents('localhost:7233', ['api-keys', 'revoke', id, '--json'], cliEnv())).code).toBe(0);
  await expect(client.beta.agents.list()).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
  const again = await runAgents('localhost:7233', ['api-keys', 'revoke', id], cliEnv());
  expect(again.code).not.toBe(0);
  expect(again.stderr).toMatch(/no live key/);
});

it('takes the key as x-api-key as well as a bearer token', async () => {
  const key = await api.key();
  const viaHeader = new Anthropic({
    apiKey: null,
    authToken: null,
    baseURL: api.url,
    maxRetries: 0,
    defaultHeaders: { 'x-api-key': key },
  });
  const made = await viaHeader.beta.environments.create({ name: `via-header-${Date.now()}` });
  const listed = await viaHeader.beta.environments.list();
  expect(listed.data.map((e) => e.id)).toContain(made.id);
  // The same workspace as the bearer-token client's.
  expect((await (await api.client()).beta.environments.retrieve(made.id)).name).toBe(made.name);
});

it('refuses a request without the managed-agents beta', async () => {
  const client = await api.client();
  const err = await client
    .get('/v1/agents', { headers: { 'anthropic-beta': 'something-else' } })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  expect(String((err as Error).message)).toMatch(/managed-agents-2026-04-01/);
});

it('refuses a bad workspace name on the command line with a one-line error', async () => {
  const r = await runAgents('localhost:7233', ['api-keys', 'create', '--workspace', 'Not A Name'], cliEnv());
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/--workspace/);
});

it('keeps two workspaces from seeing or touching each other’s agents, environments and vaults', async () => {
  const a = await api.client('team-a');
  const b = await api.client('team-b');
  const agent = await a.beta.agents.create({ name: 'secret-agent', model: 'claude-haiku-5-5' });
  const env = await a.beta.environments.create({ name: 'shared-name' });
  const vault = await a.beta.vaults.create({ display_name: 'a-vault' });

  await expect(b.beta.agents.retrieve(agent.id)).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.agents.retrieve(agent.id, { version: 1 })).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.agents.update(agent.id, { version: 1, name: 'stolen' })).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.agents.archive(agent.id)).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.agents.versions.list(agent.id)).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.environments.retrieve(env.id)).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.environments.update(env.id, { description: 'x' })).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.environments.delete(env.id)).rejects.toBeInstanceOf(NOT_FOUND);
  await expect(b.beta.vaults.update(vault.id, { display_name: 'x' })).rejects.toBeInstanceOf(NOT_FOUND);

  // A 404 for another workspace's id reads exactly like one for an id that never existed.
  const foreign = (await b.beta.agents.retrieve(agent.id).catch((e: unknown) => e)) as InstanceType<
    typeof Anthropic.APIError
  >;
  const missing = (await b.beta.agents.retrieve('agent_01nothere').catch((e: unknown) => e)) as InstanceType<
    typeof Anthropic.APIError
  >;
  const shape = (e: InstanceType<typeof Anthropic.APIError>) =>
    (e.error as { error: { type: string; message: string } }).error.message.replace(/agent_\w+/, 'ID');
  expect(shape(foreign)).toBe(shape(missing));

  // Names are per workspace: b may use the same environment name.
  expect((await b.beta.environments.create({ name: 'shared-name' })).name).toBe('shared-name');
  expect((await b.beta.agents.list()).data).toEqual([]);
  expect((await a.beta.agents.retrieve(agent.id)).name).toBe('secret-agent');
});

it('serves the OpenAPI document generated from the route schemas, without a key', async () => {
  const res = await fetch(`${api.url}/v1/openapi.json`);
  expect(res.status).toBe(200);
  const doc = (await res.json()) as {
    openapi: string;
    paths: Record<
      string,
      Record<
        string,
        { requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> } }
      >
    >;
  };
  expect(doc.openapi).toBe('3.1.0');
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining([
      '/v1/agents',
      '/v1/agents/{agent_id}',
      '/v1/agents/{agent_id}/versions',
      '/v1/environments',
      '/v1/vaults/{vault_id}/credentials',
    ]),
  );
  expect(Object.keys(doc.paths['/v1/agents'].post.requestBody!.content['application/json'].schema.properties!)).toEqual(
    expect.arrayContaining(['name', 'model', 'tools', 'mcp_servers']),
  );
});
