// What the schemathesis run (test/api/schemathesis.slow.test.ts) found answering 500, each now a clear 4xx or a
// success: numbers past PostgreSQL's integer, time offsets past its timestamps, and deleting an environment whose
// sessions were deleted.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';

let h: Harness;
let api: TestApi;
let client: Anthropic;
beforeAll(async () => {
  h = await startHarness();
  api = await startApiOn(h);
  client = await api.client();
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const messageOf = (e: unknown) =>
  (e as InstanceType<typeof Anthropic.APIError>).error as { error: { type: string; message: string } };

it('refuses a version or cursor position past 2^31-1 with a 400 naming it', async () => {
  const agent = await client.beta.agents.create({ name: 'big', model: 'claude-haiku-5-5' });
  const env = await client.beta.environments.create({ name: 'big' });
  const update = await client.beta.agents
    .update(agent.id, { version: 9007199254740990, name: 'x' })
    .catch((e: unknown) => e);
  expect(update).toBeInstanceOf(Anthropic.BadRequestError);
  expect(messageOf(update).error.message).toMatch(/^version: /);
  const session = await client.beta.sessions
    .create({ agent: { type: 'agent', id: agent.id, version: 2 ** 31 }, environment_id: env.id })
    .catch((e: unknown) => e);
  expect(session).toBeInstanceOf(Anthropic.BadRequestError);
  expect(messageOf(session).error.message).toMatch(/^agent/);
  const page = Buffer.from(JSON.stringify({ p: 2 ** 40 })).toString('base64url');
  const list = await client.beta.agents.list({ page }).catch((e: unknown) => e);
  expect(list).toBeInstanceOf(Anthropic.BadRequestError);
  expect(messageOf(list).error.message).toBe('page is not a cursor this API returned');
  expect((await client.beta.agents.retrieve(agent.id)).name).toBe('big');
});

it('takes a created_at filter with any RFC 3339 offset, and refuses a year PostgreSQL cannot hold', async () => {
  const agent = await client.beta.agents.create({ name: 'dated', model: 'claude-haiku-5-5' });
  const later = await client.beta.agents.list({ 'created_at[lte]': '0878-05-31T18:22:17.33-21:32' } as never);
  expect(later.data.map((a) => a.id)).not.toContain(agent.id);
  const since = await client.beta.agents.list({ 'created_at[gte]': '2000-01-01T00:00:00-23:59' } as never);
  expect(since.data.map((a) => a.id)).toContain(agent.id);
  const zero = await client.beta.agents
    .list({ 'created_at[gte]': '0000-01-01T00:00:00+01:00' } as never)
    .catch((e: unknown) => e);
  expect(zero).toBeInstanceOf(Anthropic.BadRequestError);
  expect(messageOf(zero).error.message).toMatch(
    /^query parameter created_at\[gte\]: must be an RFC 3339 time between the years 1 and 9999/,
  );
});

it('deletes an environment whose sessions were all deleted', async () => {
  const agent = await client.beta.agents.create({ name: 'gone', model: 'claude-haiku-5-5' });
  const env = await client.beta.environments.create({ name: 'gone' });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  await expect(client.beta.environments.delete(env.id)).rejects.toBeInstanceOf(Anthropic.APIError);
  await client.beta.sessions.delete(session.id);
  expect(await client.beta.environments.delete(env.id)).toMatchObject({ id: env.id, type: 'environment_deleted' });
  await expect(client.beta.environments.retrieve(env.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
});

it('serves an OpenAPI document whose every $ref resolves, so a fuzzer reads every response schema', async () => {
  const text = await (await fetch(`${api.url}/v1/openapi.json`)).text();
  const doc = JSON.parse(text) as { components: { schemas: Record<string, unknown> } };
  const refs = [...new Set([...text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]))];
  expect(refs).toEqual(expect.arrayContaining(['Agent', 'Environment', 'Session', 'Vault', 'VaultCredential']));
  expect(refs.filter((r) => !(r in doc.components.schemas))).toEqual([]);
});
