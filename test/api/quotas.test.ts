// Quotas per workspace, as a tenant meets them through the SDK: a request rate per key (429 rate_limit_error with
// retry-after, which the SDK's own retry waits out), sessions open at once across two API processes on one
// PostgreSQL database, and the events one events.send may carry.
import Anthropic from '@anthropic-ai/sdk';
import { startApiServer, MANAGED_AGENTS_BETA, type RunningApi } from '../../src/api/server';
import { createApiKey } from '../../src/api/workspace-keys';
import { loadConfig } from '../../src/config';
import { endSignal } from '../../src/session/contract';
import { vaultPublicKey } from '../../src/vault/sealed';
import { freshPostgresDatabase, startTestApi, testSessionDeps, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { TEST_CODEC_KEY } from '../helpers/test-keys';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const get = (url: string, key: string) =>
  fetch(`${url}/v1/agents`, { headers: { 'x-api-key': key, 'anthropic-beta': MANAGED_AGENTS_BETA } });

describe('the request rate per key', () => {
  let api: TestApi;
  beforeAll(async () => {
    // Three requests per ten seconds: a window the burst below fits in on a loaded machine, short enough for the
    // SDK's retry to wait out.
    api = await startTestApi('postgres', ['default'], undefined, undefined, { API_RATE_LIMIT: '3/10s' });
  });
  afterAll(async () => api?.stop());

  it('answers a burst past the limit with 429 rate_limit_error and retry-after, serves another key meanwhile, and the SDK retry then succeeds', async () => {
    const hot = await api.key();
    const other = await api.key();
    const burst = await Promise.all(Array.from({ length: 8 }, () => get(api.url, hot)));
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(burst.filter((r) => r.status === 200).length).toBeLessThanOrEqual(3);
    const body = (await refused[0].json()) as {
      type: string;
      error: { type: string; message: string };
      request_id: string;
    };
    expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(body.error.message).toMatch(/rate limit of 3 requests per 10 s/);
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThan(0);

    // The other key has its own count.
    expect((await get(api.url, other)).status).toBe(200);
    expect((await get(api.url, hot)).status).toBe(429);

    // The SDK waits as retry-after says and succeeds.
    const sdk = new Anthropic({ apiKey: hot, baseURL: api.url, maxRetries: 4 });
    const page = await sdk.beta.agents.list();
    expect(page.data).toEqual([]);
  });

  it('does not count requests without a key, such as the OpenAPI document', async () => {
    for (let i = 0; i < 6; i++) expect((await fetch(`${api.url}/v1/openapi.json`)).status).toBe(200);
  });
});

describe('sessions open at once per workspace, across two API processes', () => {
  let h: Harness;
  let db: { url: string; drop(): Promise<void> };
  const servers: RunningApi[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    h = await startHarness();
    db = await freshPostgresDatabase();
    const vaultKey = randomBytes(32).toString('base64');
    for (let i = 0; i < 2; i++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-quota-'));
      dirs.push(dataDir);
      const config = loadConfig({
        DATA_DIR: dataDir,
        KEY_FILES: 'off',
        CODEC_KEY: TEST_CODEC_KEY,
        VAULT_PUBLIC_KEY: await vaultPublicKey(vaultKey),
        DATABASE_URL: db.url,
        API_LISTEN: '127.0.0.1:0',
        API_RATE_LIMIT: 'off',
        API_SESSION_QUOTA: '3',
        API_EVENTS_PER_SEND: '2',
      });
      servers.push(await startApiServer(config, () => undefined, undefined, testSessionDeps(h.env.client)));
    }
  });
  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    await db?.drop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    await h?.stop();
  });

  it('never lets concurrent creates on both processes exceed the quota, stores nothing for a refused one, and frees a slot when a session ends', async () => {
    const key = (await createApiKey(servers[0].db, 'team-q')).key;
    const [a, b] = servers.map((s) => new Anthropic({ apiKey: key, baseURL: s.url, maxRetries: 0 }));
    const agent = await a.beta.agents.create({ name: 'q', model: 'claude-test' });
    const env = await a.beta.environments.create({ name: 'q-env' });
    const create = (c: Anthropic) => c.beta.sessions.create({ agent: agent.id, environment_id: env.id });

    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => create(i % 2 ? a : b)));
    const made = results
      .filter((r) => r.status === 'fulfilled')
      .map((r) => (r as PromiseFulfilledResult<Anthropic.Beta.Sessions.BetaManagedAgentsSession>).value);
    const refused = results
      .filter((r) => r.status === 'rejected')
      .map((r) => (r as PromiseRejectedResult).reason as InstanceType<typeof Anthropic.APIError>);
    expect(made).toHaveLength(3);
    expect(refused).toHaveLength(7);
    for (const e of refused) {
      expect(e.status).toBe(429);
      expect(e.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
      expect((e.error as { error: { message: string } }).error.message).toMatch(
        /3 open sessions, its quota \(API_SESSION_QUOTA 3\)/,
      );
    }
    // Nothing stored or started for a refused create.
    const rows = await servers[1].db.query<{ id: string }>('select id from sessions');
    expect(rows.map((r) => r.id).sort()).toEqual(made.map((s) => s.id).sort());
    const started = [];
    for await (const w of h.env.client.workflow.list({ query: `AgentWorkspace = "team-q"` }))
      started.push(w.workflowId);
    expect(started.sort()).toEqual(made.map((s) => s.id).sort());

    // Archiving one frees its slot.
    await b.beta.sessions.archive(made[0].id);
    const fourth = await create(a);
    await expect(create(b)).rejects.toMatchObject({ status: 429 });

    // A session ended outside the API (the workflow closes on its own) frees its slot once the workflow has closed.
    const ended = h.env.client.workflow.getHandle(made[1].id);
    await ended.signal(endSignal, { reason: 'done' });
    await ended.result();
    const fifth = await create(b);
    expect((await a.beta.sessions.retrieve(made[1].id)).status).toBe('terminated');
    await expect(create(a)).rejects.toMatchObject({ status: 429 });
    for (const s of [made[2], fourth, fifth]) await a.beta.sessions.delete(s.id);
  });

  it('refuses an events.send with more events than API_EVENTS_PER_SEND, naming the limit, and appends nothing', async () => {
    const key = (await createApiKey(servers[0].db, 'team-e')).key;
    const c = new Anthropic({ apiKey: key, baseURL: servers[1].url, maxRetries: 0 });
    const agent = await c.beta.agents.create({ name: 'e', model: 'claude-test' });
    const env = await c.beta.environments.create({ name: 'e-env' });
    const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const message = { type: 'user.message' as const, content: [{ type: 'text' as const, text: 'hi' }] };
    const err = await c.beta.sessions.events
      .send(s.id, { events: [message, message, message] })
      .catch((e: unknown) => e as InstanceType<typeof Anthropic.APIError>);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as { error: { error: { message: string } } }).error.error.message).toBe(
      'events: at most 2 events per send (API_EVENTS_PER_SEND)',
    );
    const events = [];
    for await (const e of c.beta.sessions.events.list(s.id)) events.push(e);
    expect(events.filter((e) => e.type === 'user.message')).toEqual([]);
    await c.beta.sessions.delete(s.id);
  });
});
