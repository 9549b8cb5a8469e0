// Fuzzes every route with fast-check: no input, however malformed, makes the server answer 5xx, every refusal is
// the API's error envelope with a message, and refused creates store nothing.
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import { ArchivedSessionLog, LiveSessionLog } from '../../src/log/session-log';
import { startTestApi, type TestApi } from '../helpers/api';
import { startHarness, testArchive, type Harness } from '../helpers/env';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let ids: Record<string, string>;
beforeAll(async () => {
  h = await startHarness();
  api = await startTestApi('postgres', ['default'], {
    client: h.env.client,
    archive: testArchive(),
    log: new ArchivedSessionLog(testArchive(), new LiveSessionLog(h.env.client)),
  });
  client = await api.client();
  const agent = await client.beta.agents.create({ name: 'fuzz', model: 'claude-haiku-5-5' });
  const env = await client.beta.environments.create({ name: 'fuzz' });
  const vault = await client.beta.vaults.create({ display_name: 'fuzz' });
  const cred = await client.beta.vaults.credentials.create(vault.id, {
    auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:1/mcp', token: 'fuzz-token' },
  });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  ids = { agent: agent.id, env: env.id, vault: vault.id, cred: cred.id, session: session.id };
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

type Method = 'get' | 'post' | 'delete';
const ROUTES: [Method, (id: (k: string) => string) => string][] = [
  ['post', () => '/v1/agents'],
  ['get', () => '/v1/agents'],
  ['get', (id) => `/v1/agents/${id('agent')}`],
  ['post', (id) => `/v1/agents/${id('agent')}`],
  ['post', (id) => `/v1/agents/${id('agent')}/archive`],
  ['get', (id) => `/v1/agents/${id('agent')}/versions`],
  ['post', () => '/v1/environments'],
  ['get', () => '/v1/environments'],
  ['get', (id) => `/v1/environments/${id('env')}`],
  ['post', (id) => `/v1/environments/${id('env')}`],
  ['post', () => '/v1/vaults'],
  ['get', () => '/v1/vaults'],
  ['post', (id) => `/v1/vaults/${id('vault')}`],
  ['post', (id) => `/v1/vaults/${id('vault')}/credentials`],
  ['get', (id) => `/v1/vaults/${id('vault')}/credentials`],
  ['post', (id) => `/v1/vaults/${id('vault')}/credentials/${id('cred')}`],
  ['get', (id) => `/v1/vaults/${id('vault')}/credentials/${id('cred')}`],
  ['post', () => '/v1/sessions'],
  ['get', () => '/v1/sessions'],
  ['get', (id) => `/v1/sessions/${id('session')}`],
  ['post', (id) => `/v1/sessions/${id('session')}`],
  ['get', (id) => `/v1/sessions/${id('session')}/events`],
  ['post', (id) => `/v1/sessions/${id('session')}/events`],
];

const BETA = { 'anthropic-beta': 'managed-agents-2026-04-01' };

function expectEnvelope(e: unknown): void {
  expect(e).toBeInstanceOf(Anthropic.APIError);
  const err = e as InstanceType<typeof Anthropic.APIError>;
  expect(err.status).toBeGreaterThanOrEqual(400);
  expect(err.status).toBeLessThan(500);
  expect(err.error).toMatchObject({
    type: 'error',
    error: { type: expect.any(String), message: expect.stringMatching(/\S/) },
    request_id: expect.stringMatching(/^req_/),
  });
}

// Values shaped like the real bodies, with every field sometimes wrong, so the fuzz reaches past the first check.
const field = fc.oneof(
  fc.jsonValue(),
  fc.string(),
  fc.constantFrom(
    null,
    '',
    'agent_toolset_20260401',
    'mcp_toolset',
    'custom',
    'cloud',
    'limited',
    'unrestricted',
    'static_bearer',
    'mcp_oauth',
    'user.message',
    'user.interrupt',
    'user.tool_confirmation',
    'user.custom_tool_result',
    'text',
  ),
  // Events shaped like the real ones, so sends reach the workflow.
  fc.array(
    fc.record(
      {
        type: fc.constantFrom('user.message', 'user.interrupt', 'user.tool_confirmation', 'user.custom_tool_result'),
        content: fc.constant([{ type: 'text', text: 'hi' }]),
        tool_use_id: fc.string({ maxLength: 10 }),
      },
      { requiredKeys: ['type'] },
    ),
    { maxLength: 2 },
  ),
);
const nearBody = fc.dictionary(
  fc.constantFrom(
    'name',
    'model',
    'tools',
    'mcp_servers',
    'metadata',
    'version',
    'system',
    'description',
    'config',
    'display_name',
    'auth',
    'type',
    'networking',
    'token',
    'mcp_server_url',
    'refresh',
    'skills',
    'agent',
    'environment_id',
    'initial_events',
    'events',
    'title',
    'content',
    'tool_use_id',
    'result',
  ),
  fc.oneof(
    field,
    fc.array(
      fc.dictionary(
        fc.constantFrom(
          'type',
          'name',
          'url',
          'mcp_server_name',
          'configs',
          'default_config',
          'input_schema',
          'description',
        ),
        field,
      ),
      { maxLength: 3 },
    ),
    fc.dictionary(fc.string(), field, { maxKeys: 3 }),
  ),
);
const body = fc.oneof(fc.jsonValue(), nearBody);
const idValue = (k: string) =>
  fc.oneof(fc.constant(k), fc.string({ maxLength: 40 }), fc.constantFrom('agent_x', '..', '%00', 'a'.repeat(300)));
const query = fc.dictionary(
  fc.constantFrom('limit', 'page', 'version', 'include_archived', 'created_at[gte]', 'created_at[lte]', 'x'),
  fc.oneof(fc.string(), fc.integer().map(String), fc.constantFrom('true', '-1', '0', '1e9', 'eyJwIjotMX0')),
);

it('answers any request body, id and query on every route with a 2xx or a 4xx envelope', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: ROUTES.length - 1 }),
      body,
      query,
      fc.record({
        agent: idValue('agent'),
        env: idValue('env'),
        vault: idValue('vault'),
        cred: idValue('cred'),
        session: idValue('session'),
      }),
      async (r, b, q, pick) => {
        const [method, path] = ROUTES[r];
        const url = path((k) =>
          encodeURIComponent(pick[k as keyof typeof pick] === k ? ids[k] : pick[k as keyof typeof pick]),
        );
        try {
          await client[method](url, { headers: BETA, query: q, ...(method === 'post' ? { body: b } : {}) });
        } catch (e) {
          expectEnvelope(e);
        }
      },
    ),
    { numRuns: 400 },
  );
});

it('refused creates store nothing', async () => {
  const count = async () =>
    (await client.beta.agents.list({ limit: 1000 })).data.length +
    (await client.beta.environments.list({ limit: 1000 })).data.length +
    (await client.beta.vaults.list({ limit: 1000 })).data.length;
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('/v1/agents', '/v1/environments', '/v1/vaults'), nearBody, async (path, b) => {
      const before = await count();
      let created = false;
      try {
        await client.post(path, { headers: BETA, body: b });
        created = true;
      } catch (e) {
        expectEnvelope(e);
      }
      expect(await count()).toBe(before + (created ? 1 : 0));
    }),
    { numRuns: 150 },
  );
});

it('answers malformed bytes, wrong content types and unknown routes with a 4xx envelope', async () => {
  const key = await api.key();
  const headers = { authorization: `Bearer ${key}`, ...BETA };
  await fc.assert(
    fc.asyncProperty(
      fc.string(),
      fc.constantFrom(
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/octet-stream',
        '',
      ),
      fc.constantFrom('/v1/agents', '/v1/vaults', '/v1/nope', '/v2/agents', `/v1/agents/${ids.agent}`),
      async (raw, type, path) => {
        const res = await fetch(`${api.url}${path}`, {
          method: 'POST',
          headers: { ...headers, ...(type ? { 'content-type': type } : {}) },
          body: raw,
        });
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400)
          expect(await res.json()).toMatchObject({
            type: 'error',
            error: { message: expect.stringMatching(/\S/) },
            request_id: expect.stringMatching(/^req_/),
          });
        else await res.arrayBuffer();
      },
    ),
    { numRuns: 200 },
  );
});
