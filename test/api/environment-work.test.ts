// Self-hosted environments' work queue against the API with the SDK as client: environment keys, the three
// credentials and what each reaches, poll/ack/heartbeat/stop, the lease that lapses and is reclaimed, stats, and two
// API processes on one PostgreSQL database serving one queue.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApi, type TestApi } from '../helpers/api';
import { runAgents } from '../helpers/cli';
import { TEST_CODEC_KEY } from '../helpers/test-keys';
import { watchConformance } from '../helpers/conformance';
import { startApiServer, type RunningApi } from '../../src/api/server';
import { loadConfig } from '../../src/config';
import { vaultPublicKey } from '../../src/vault/sealed';
import {
  createEnvironmentKey,
  EnvironmentKeyError,
  listEnvironmentKeys,
  revokeEnvironmentKey,
} from '../../src/api/environment-keys';
import { enqueueSessionWork, stopSessionWork } from '../../src/api/environment-work';
import { deleteSessionRows, insertSession } from '../../src/storage/repos/sessions-repo';
import { insertMount } from '../../src/storage/repos/session-mounts-repo';
import { newId } from '../../src/storage/ids';
import type { Db } from '../../src/storage/db';

type Work = Anthropic.Beta.Environments.BetaSelfHostedWork;

const LEASE_ENV = { WORK_LEASE_TTL_SECONDS: '30', WORK_LEASE_MIN_TTL_SECONDS: '1', WORK_LEASE_MAX_TTL_SECONDS: '120' };

const withToken = (url: string, token: string) =>
  new Anthropic({ apiKey: null, authToken: token, baseURL: url, maxRetries: 0 });
const failure = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e as InstanceType<typeof Anthropic.APIError>;
  }
  throw new Error('expected the call to fail');
};
const decodeSecret = (secret: string) =>
  JSON.parse(Buffer.from(secret, 'base64url').toString('utf8')) as { sessions_token: string; api_base_url?: string };

describe('self-hosted work queue on postgres', () => {
  let api: TestApi;
  let db: Db;
  let client: Anthropic;
  let workspaceId: string;
  let agentId: string;

  beforeAll(async () => {
    api = await startTestApi('postgres', ['default'], undefined, () => undefined, LEASE_ENV);
    db = api.db!;
    client = await api.client();
    agentId = (await client.beta.agents.create({ name: 'hands-elsewhere', model: 'claude-test' })).id;
    [{ id: workspaceId }] = await db.query<{ id: string }>("select id from workspaces where name = 'default'");
  });
  afterAll(async () => api?.stop());

  /** A self-hosted environment, a key for it, and its healthcheck item run through as the SDK's worker would. */
  async function queue(name: string): Promise<{ envId: string; key: string; worker: Anthropic }> {
    const env = await client.beta.environments.create({ name, config: { type: 'self_hosted' } });
    const { key } = await createEnvironmentKey(db, env.id);
    const worker = withToken(api.url, key);
    const hc = (await worker.beta.environments.work.poll(env.id))!;
    expect(hc).toMatchObject({ data: { type: 'healthcheck' }, state: 'queued', secret: null });
    await worker.beta.environments.work.ack(hc.id, { environment_id: env.id });
    await worker.beta.environments.work.heartbeat(hc.id, {
      environment_id: env.id,
      expected_last_heartbeat: 'NO_HEARTBEAT',
    });
    const stopped = await worker.beta.environments.work.stop(hc.id, { environment_id: env.id, force: true });
    expect(stopped).toMatchObject({ state: 'stopped', data: { type: 'healthcheck' } });
    expect(stopped.acknowledged_at).not.toBeNull();
    return { envId: env.id, key, worker };
  }

  async function session(envId: string): Promise<string> {
    const id = newId('sesn');
    await insertSession(db, {
      id,
      workspaceId,
      agentId,
      agentVersion: 1,
      environmentId: envId,
      title: null,
      metadata: {},
      vaultIds: [],
    });
    return id;
  }

  it('creates, updates and archives a self_hosted environment, which keeps its type', async () => {
    const env = await client.beta.environments.create({ name: 'mine', config: { type: 'self_hosted' } });
    expect(env.config).toEqual({ type: 'self_hosted' });
    const renamed = await client.beta.environments.update(env.id, { name: 'mine-2', config: { type: 'self_hosted' } });
    expect(renamed).toMatchObject({ name: 'mine-2', config: { type: 'self_hosted' } });
    const e = await failure(client.beta.environments.update(env.id, { config: { type: 'cloud' } }));
    expect(e).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await client.beta.environments.retrieve(env.id)).config).toEqual({ type: 'self_hosted' });
    expect((await client.beta.environments.archive(env.id)).archived_at).not.toBeNull();
  });

  it('mints keys only for live self_hosted environments, lists them without the key, and revokes them', async () => {
    const cloud = await client.beta.environments.create({ name: 'cloudy' });
    await expect(createEnvironmentKey(db, cloud.id)).rejects.toThrow(EnvironmentKeyError);
    await expect(createEnvironmentKey(db, 'env_nope')).rejects.toThrow(/no environment/);
    const env = await client.beta.environments.create({ name: 'keyed', config: { type: 'self_hosted' } });
    const made = await createEnvironmentKey(db, env.id);
    expect(made).toMatchObject({ environment: env.id, id: expect.stringMatching(/^envkey_/) });
    const listed = await listEnvironmentKeys(db, env.id);
    expect(listed).toEqual([expect.objectContaining({ id: made.id, environment: env.id, revoked_at: null })]);
    expect(JSON.stringify(listed)).not.toContain(made.key);
    // The key polls (the healthcheck it queued); revoked, it gets 401.
    const worker = withToken(api.url, made.key);
    expect((await worker.beta.environments.work.poll(env.id))?.data.type).toBe('healthcheck');
    expect(await revokeEnvironmentKey(db, made.id)).toBe(true);
    expect(await revokeEnvironmentKey(db, made.id)).toBe(false);
    expect(await failure(worker.beta.environments.work.poll(env.id))).toBeInstanceOf(Anthropic.AuthenticationError);
    await client.beta.environments.archive(env.id);
    await expect(createEnvironmentKey(db, env.id)).rejects.toThrow(/archived/);
  });

  it('keeps an environment key to its own queue', async () => {
    const { envId, worker } = await queue('scoped');
    const other = await client.beta.environments.create({ name: 'other-queue', config: { type: 'self_hosted' } });
    const e403 = await failure(worker.beta.agents.list());
    expect(e403).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(e403.message).toMatch(/reaches only its environment's work queue/);
    expect(await failure(worker.beta.sessions.list())).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(await failure(worker.beta.environments.work.stats(envId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(await failure(worker.beta.environments.work.poll(other.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect((await worker.beta.environments.work.list(envId)).data.length).toBe(1);
    // The console lists with an API key too.
    expect((await client.beta.environments.work.list(envId)).data[0].data.type).toBe('healthcheck');
  });

  it('runs an item through poll, ack, heartbeat and stop, and answers a stale heartbeat with 412', async () => {
    const { envId, worker } = await queue('lifecycle');
    const sessionId = await session(envId);
    await Promise.all([1, 2, 3].map(() => enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId })));
    const work = (await worker.beta.environments.work.poll(envId, { 'Anthropic-Worker-ID': 'w-1' })) as Work;
    expect(work).toMatchObject({ type: 'work', state: 'queued', data: { type: 'session', id: sessionId } });
    // One live item a session, however many enqueue at once.
    expect(await worker.beta.environments.work.poll(envId)).toBeNull();
    const secret = decodeSecret(work.secret!);
    expect(secret.api_base_url).toBe(api.url);
    expect(secret.sessions_token).toMatch(/^sk-ma-req-/);
    const hands = withToken(api.url, secret.sessions_token);
    const w = hands.beta.environments.work;
    expect(await w.ack(work.id, { environment_id: envId })).toMatchObject({ state: 'starting', secret: null });
    const first = await w.heartbeat(work.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' });
    expect(first).toMatchObject({ type: 'work_heartbeat', state: 'active', lease_extended: true, ttl_seconds: 30 });
    const second = await w.heartbeat(work.id, {
      environment_id: envId,
      expected_last_heartbeat: first.last_heartbeat,
      desired_ttl_seconds: 100_000,
    });
    expect(second).toMatchObject({ state: 'active', lease_extended: true, ttl_seconds: 120 });
    const stale = await failure(
      w.heartbeat(work.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' }),
    );
    expect(stale).toBeInstanceOf(Anthropic.Beta.Environments.Work.BetaHeartbeatPreconditionFailedError);
    const details = (stale as Anthropic.Beta.Environments.Work.BetaHeartbeatPreconditionFailedError).error as {
      error: { details: Anthropic.Beta.Environments.Work.BetaHeartbeatPreconditionFailedErrorDetails };
    };
    expect(details.error.details).toEqual({
      error_code: 'heartbeat_precondition_failed',
      current_state: {
        state: 'active',
        last_heartbeat: second.last_heartbeat,
        lease_extended: false,
        ttl_seconds: 120,
      },
    });
    const bad = await failure(w.heartbeat(work.id, { environment_id: envId, expected_last_heartbeat: 'yesterday' }));
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect(bad.message).toMatch(/expected_last_heartbeat/);
    const got = await client.beta.environments.work.retrieve(work.id, { environment_id: envId });
    expect(got).toMatchObject({ state: 'active', secret: null, latest_heartbeat_at: second.last_heartbeat });
    expect(got.started_at).not.toBeNull();
    expect(
      await client.beta.environments.work.update(work.id, { environment_id: envId, metadata: { a: '1', b: '2' } }),
    ).toMatchObject({ metadata: { a: '1', b: '2' } });
    expect(
      (await client.beta.environments.work.update(work.id, { environment_id: envId, metadata: { a: null } })).metadata,
    ).toEqual({ b: '2' });
    // A graceful stop: the heartbeat tells the worker, which then stops it for good.
    const stopping = await client.beta.environments.work.stop(work.id, { environment_id: envId });
    expect(stopping).toMatchObject({ state: 'stopping' });
    expect(stopping.stop_requested_at).not.toBeNull();
    expect(
      await w.heartbeat(work.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' }),
    ).toMatchObject({
      state: 'stopping',
      lease_extended: true,
    });
    expect(await w.stop(work.id, { environment_id: envId })).toMatchObject({ state: 'stopped' });
    expect(await failure(client.beta.environments.work.stop(work.id, { environment_id: envId }))).toBeInstanceOf(
      Anthropic.ConflictError,
    );
    // The stopped item's token is over: 401, and 412 on heartbeat.
    expect(await failure(hands.beta.sessions.retrieve(sessionId))).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(await failure(w.heartbeat(work.id, { environment_id: envId }))).toBeInstanceOf(
      Anthropic.Beta.Environments.Work.BetaHeartbeatPreconditionFailedError,
    );
    // The session's next item is a new one.
    await enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId });
    await stopSessionWork(db, sessionId);
    const items = (await client.beta.environments.work.list(envId)).data;
    expect(items.map((i) => [i.data.type, i.state])).toEqual([
      ['session', 'stopped'],
      ['session', 'stopped'],
      ['healthcheck', 'stopped'],
    ]);
    // A session removed for good takes its items and their tokens with it.
    await deleteSessionRows(db, sessionId);
    expect((await client.beta.environments.work.list(envId)).data.map((i) => i.data.type)).toEqual(['healthcheck']);
    expect(await failure(w.heartbeat(work.id, { environment_id: envId }))).toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
  });

  it('keeps a sessions token to its own session, its work item, and what is mounted for it', async () => {
    const { envId, worker } = await queue('token-scope');
    const sessionId = await session(envId);
    const otherSession = await session(envId);
    const readOnly = await client.beta.memoryStores.create({ name: 'ro' });
    const readWrite = await client.beta.memoryStores.create({ name: 'rw' });
    const unmounted = await client.beta.memoryStores.create({ name: 'not-mine' });
    for (const [store, access] of [
      [readOnly.id, 'read_only'],
      [readWrite.id, 'read_write'],
    ] as const)
      await insertMount(db, {
        id: newId('sesrsc'),
        sessionId,
        workspaceId,
        kind: 'memory_store',
        refId: store,
        mountPath: `/mnt/memory/${store}`,
        access,
      });
    await enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId });
    const work = (await worker.beta.environments.work.poll(envId))!;
    const hands = withToken(api.url, decodeSecret(work.secret!).sessions_token);
    expect(await failure(hands.beta.sessions.retrieve(otherSession))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await failure(hands.beta.sessions.events.list(otherSession))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await failure(hands.beta.agents.list())).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(await failure(hands.beta.sessions.archive(sessionId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(await failure(hands.beta.environments.work.poll(envId))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const sent = await failure(
      hands.beta.sessions.events.send(sessionId, {
        events: [{ type: 'user.message', content: [{ type: 'text', text: 'not mine to say' }] }],
      }),
    );
    expect(sent).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(sent.message).toMatch(/user.tool_result/);
    // Memory: reads of mounted stores, writes only to a read_write one; another store does not exist for it.
    expect((await hands.beta.memoryStores.memories.list(readOnly.id)).data).toEqual([]);
    expect(
      await failure(hands.beta.memoryStores.memories.create(readOnly.id, { path: '/a.md', content: 'x' })),
    ).toBeInstanceOf(Anthropic.PermissionDeniedError);
    const wrote = await hands.beta.memoryStores.memories.create(readWrite.id, { path: '/a.md', content: 'x' });
    expect(wrote.path).toBe('/a.md');
    expect(await failure(hands.beta.memoryStores.memories.list(unmounted.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await failure(hands.beta.memoryStores.archive(readWrite.id))).toBeInstanceOf(
      Anthropic.PermissionDeniedError,
    );
    expect(await failure(hands.beta.skills.retrieve('skill_notmounted'))).toBeInstanceOf(Anthropic.NotFoundError);
    // Another work item, even of the same environment, does not exist for it.
    const other = await client.beta.environments.work.list(envId);
    const hc = other.data.find((i) => i.data.type === 'healthcheck')!;
    expect(await failure(hands.beta.environments.work.heartbeat(hc.id, { environment_id: envId }))).toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  it('reclaims an item whose lease lapsed; the first claim then gets 412 on heartbeat and 401 elsewhere', async () => {
    const { envId, worker } = await queue('lapse');
    const sessionId = await session(envId);
    await enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId });
    const first = (await worker.beta.environments.work.poll(envId, { 'Anthropic-Worker-ID': 'a' }))!;
    const a = withToken(api.url, decodeSecret(first.secret!).sessions_token);
    await a.beta.environments.work.ack(first.id, { environment_id: envId });
    const beat = await a.beta.environments.work.heartbeat(first.id, {
      environment_id: envId,
      expected_last_heartbeat: 'NO_HEARTBEAT',
      desired_ttl_seconds: 1,
    });
    expect(beat.ttl_seconds).toBe(1);
    // Nothing to claim while the lease holds...
    expect(await worker.beta.environments.work.poll(envId)).toBeNull();
    // ...and the item once it has lapsed.
    let second: Work | null = null;
    for (let i = 0; i < 100 && !second; i++)
      second = await worker.beta.environments.work.poll(envId, { block_ms: 500, 'Anthropic-Worker-ID': 'b' });
    expect(second).toMatchObject({ id: first.id, state: 'queued', latest_heartbeat_at: null, acknowledged_at: null });
    const late = await failure(
      a.beta.environments.work.heartbeat(first.id, {
        environment_id: envId,
        expected_last_heartbeat: beat.last_heartbeat,
      }),
    );
    expect(late).toBeInstanceOf(Anthropic.Beta.Environments.Work.BetaHeartbeatPreconditionFailedError);
    expect(await failure(a.beta.sessions.events.list(sessionId))).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(await failure(a.beta.environments.work.stop(first.id, { environment_id: envId }))).toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
    const b = withToken(api.url, decodeSecret(second!.secret!).sessions_token);
    await b.beta.environments.work.ack(first.id, { environment_id: envId });
    expect(
      await b.beta.environments.work.heartbeat(first.id, {
        environment_id: envId,
        expected_last_heartbeat: 'NO_HEARTBEAT',
      }),
    ).toMatchObject({ state: 'active', lease_extended: true });
    const workers: { data: { worker_id: string; work_ids: string[] }[] } = await client.get(
      `/v1/environments/${envId}/work/workers`,
      { headers: { 'anthropic-beta': 'managed-agents-2026-04-01' } },
    );
    expect(workers.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ worker_id: 'b', work_ids: [first.id] }),
        expect.objectContaining({ worker_id: 'a', work_ids: [] }),
      ]),
    );
  });

  it('reports stats true to the queue: depth, pending, the oldest item and the workers polling', async () => {
    const env = await client.beta.environments.create({ name: 'stats', config: { type: 'self_hosted' } });
    expect(await client.beta.environments.work.stats(env.id)).toEqual({
      type: 'work_queue_stats',
      depth: 0,
      pending: 0,
      oldest_queued_at: null,
      workers_polling: null,
    });
    const { key } = await createEnvironmentKey(db, env.id); // queues a healthcheck
    const worker = withToken(api.url, key);
    for (let i = 0; i < 4; i++)
      await enqueueSessionWork(db, { workspaceId, environmentId: env.id, sessionId: await session(env.id) });
    const oldest = (await client.beta.environments.work.list(env.id, { limit: 10 })).data.at(-1)!;
    let stats = await client.beta.environments.work.stats(env.id);
    expect(stats).toMatchObject({ depth: 5, pending: 0, oldest_queued_at: oldest.created_at, workers_polling: null });
    const hc = (await worker.beta.environments.work.poll(env.id, { 'Anthropic-Worker-ID': 'w1' }))!;
    const s1 = (await worker.beta.environments.work.poll(env.id, { 'Anthropic-Worker-ID': 'w2' }))!;
    stats = await client.beta.environments.work.stats(env.id);
    expect(stats).toMatchObject({ depth: 3, pending: 2, oldest_queued_at: oldest.created_at, workers_polling: 2 });
    await worker.beta.environments.work.ack(s1.id, { environment_id: env.id });
    await worker.beta.environments.work.stop(hc.id, { environment_id: env.id });
    stats = await client.beta.environments.work.stats(env.id);
    expect(stats).toMatchObject({ depth: 3, pending: 0, workers_polling: 2 });
    expect(stats.oldest_queued_at).not.toBe(oldest.created_at);
    // Archiving the environment stops its live items, and polls get nothing.
    await client.beta.environments.archive(env.id);
    const states = (await client.beta.environments.work.list(env.id, { limit: 10 })).data.map((i) => i.state);
    expect(states.sort()).toEqual(['stopped', 'stopped', 'stopped', 'stopped', 'stopping']);
    expect(await worker.beta.environments.work.poll(env.id, { block_ms: 50 })).toBeNull();
    expect(await client.beta.environments.work.stats(env.id)).toMatchObject({ depth: 0, pending: 0 });
  });

  it("claims with the SDK's WorkPoller, which acks and stops the item", async () => {
    const { envId, key } = await queue('poller');
    const sessionId = await session(envId);
    await enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId });
    let claimed: Work | undefined;
    for await (const work of client.beta.environments.work.poller({ environmentId: envId, environmentKey: key })) {
      claimed = work;
      const now = await client.beta.environments.work.retrieve(work.id, { environment_id: envId });
      expect(now.state).toBe('starting');
      break;
    }
    expect(claimed?.data).toEqual({ type: 'session', id: sessionId });
    expect(decodeSecret(claimed!.secret!).sessions_token).toMatch(/^sk-ma-req-/);
    expect((await client.beta.environments.work.retrieve(claimed!.id, { environment_id: envId })).state).toBe(
      'stopping',
    );
  });

  it("passes a healthcheck through to stopped with the SDK's own EnvironmentWorker", async () => {
    const env = await client.beta.environments.create({ name: 'healthcheck', config: { type: 'self_hosted' } });
    const { key } = await createEnvironmentKey(db, env.id);
    const workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'hc-worker-'));
    const stop = new AbortController();
    const running = client.beta.environments.work
      .worker({ environmentId: env.id, environmentKey: key, workdir, workerId: 'hc-worker' })
      .run(stop.signal)
      .catch((e: unknown) => (stop.signal.aborted ? undefined : Promise.reject(e)));
    try {
      let item: Work | undefined;
      for (let i = 0; i < 200 && item?.state !== 'stopped'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        [item] = (await client.beta.environments.work.list(env.id)).data;
      }
      expect(item).toMatchObject({ state: 'stopped', data: { type: 'healthcheck' } });
      expect(item!.acknowledged_at).not.toBeNull();
      expect(await client.beta.environments.work.stats(env.id)).toMatchObject({
        depth: 0,
        pending: 0,
        workers_polling: 1,
      });
    } finally {
      stop.abort();
      await running;
      fs.rmSync(workdir, { recursive: true, force: true });
    }
  });

  it('refuses bad input by name and stores nothing', async () => {
    const { envId, worker } = await queue('inputs');
    for (const [p, re] of [
      [worker.beta.environments.work.poll(envId, { block_ms: 1000 }), /block_ms/],
      [worker.beta.environments.work.poll(envId, { block_ms: 0 }), /block_ms/],
      [worker.beta.environments.work.poll(envId, { reclaim_older_than_ms: -1 }), /reclaim_older_than_ms/],
      [worker.beta.environments.work.poll(envId, { 'Anthropic-Worker-ID': ' ' }), /Anthropic-Worker-ID/],
    ] as const) {
      const e = await failure(p);
      expect(e).toBeInstanceOf(Anthropic.BadRequestError);
      expect(e.message).toMatch(re);
    }
    expect(await client.beta.environments.work.stats(envId)).toMatchObject({ workers_polling: null });
    const cloud = await client.beta.environments.create({ name: 'no-queue' });
    expect(await failure(client.beta.environments.work.stats(cloud.id))).toBeInstanceOf(Anthropic.BadRequestError);
    const item = (await client.beta.environments.work.list(envId)).data[0];
    const e = await failure(
      client.beta.environments.work.update(item.id, {
        environment_id: envId,
        metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])),
      }),
    );
    expect(e).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await client.beta.environments.work.retrieve(item.id, { environment_id: envId })).metadata).toEqual({});
  });

  it('makes, lists and revokes keys with agents environment-keys', async () => {
    const env = await client.beta.environments.create({ name: 'cli-keys', config: { type: 'self_hosted' } });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'envkeys-'));
    const cliEnv = { DATABASE_URL: api.databaseUrl!, DATA_DIR: dataDir, KEY_FILES: 'off' };
    try {
      const made = await runAgents(
        '127.0.0.1:1',
        ['environment-keys', 'create', '--environment', env.id, '--json'],
        cliEnv,
      );
      expect(made.code).toBe(0);
      const out = JSON.parse(made.stdout) as { key: string; id: string; environment: string };
      expect(out).toEqual({ key: expect.stringMatching(/^sk-ma-env-/), id: expect.any(String), environment: env.id });
      const listed = await runAgents(
        '127.0.0.1:1',
        ['environment-keys', 'list', '--environment', env.id, '--json'],
        cliEnv,
      );
      expect(JSON.parse(listed.stdout.trim())).toMatchObject({ id: out.id, revoked_at: null });
      expect(listed.stdout).not.toContain(out.key);
      const revoked = await runAgents('127.0.0.1:1', ['environment-keys', 'revoke', out.id, '--json'], cliEnv);
      expect(JSON.parse(revoked.stdout)).toEqual({ id: out.id, revoked: true });
      const bad = await runAgents('127.0.0.1:1', ['environment-keys', 'create', '--environment', 'env_nope'], cliEnv);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/no environment env_nope/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  describe('with a second API process on the same database', () => {
    let second: RunningApi;
    let unwatch: () => void;
    let dataDir: string;
    beforeAll(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-api-2-'));
      const config = loadConfig({
        DATA_DIR: dataDir,
        KEY_FILES: 'off',
        CODEC_KEY: TEST_CODEC_KEY,
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        VAULT_PUBLIC_KEY: await vaultPublicKey(api.vaultKey),
        API_LISTEN: '127.0.0.1:0',
        DATABASE_URL: api.databaseUrl!,
        API_RATE_LIMIT: 'off',
        API_SESSION_QUOTA: 'off',
        ...LEASE_ENV,
      });
      second = await startApiServer(config, () => undefined);
      unwatch = watchConformance(second.url);
    });
    afterAll(async () => {
      unwatch?.();
      await second?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('serves one queue: concurrent polls from both never hand one item out twice', async () => {
      const { envId, key } = await queue('shared');
      const one = withToken(api.url, key);
      const two = withToken(second.url, key);
      // A long poll on the second process sees an item queued through the first.
      const waiting = two.beta.environments.work.poll(envId, { block_ms: 999 });
      const sessionId = await session(envId);
      await enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId });
      let got = await waiting;
      for (let i = 0; i < 10 && !got; i++) got = await two.beta.environments.work.poll(envId, { block_ms: 999 });
      expect(got?.data.id).toBe(sessionId);
      expect(decodeSecret(got!.secret!).api_base_url).toBe(second.url);
      // Claimed on the second, heartbeaten through the first.
      const hands = withToken(api.url, decodeSecret(got!.secret!).sessions_token);
      await hands.beta.environments.work.ack(got!.id, { environment_id: envId });
      expect(
        await hands.beta.environments.work.heartbeat(got!.id, {
          environment_id: envId,
          expected_last_heartbeat: 'NO_HEARTBEAT',
        }),
      ).toMatchObject({ state: 'active' });
      const n = 8;
      for (let i = 0; i < n; i++)
        await enqueueSessionWork(db, { workspaceId, environmentId: envId, sessionId: await session(envId) });
      const polls = await Promise.all(
        Array.from({ length: 2 * n }, (_, i) =>
          (i % 2 ? one : two).beta.environments.work.poll(envId, { block_ms: 200, 'Anthropic-Worker-ID': `w${i}` }),
        ),
      );
      const ids = polls.filter((p): p is Work => p !== null).map((p) => p.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(n);
      expect(await client.beta.environments.work.stats(envId)).toMatchObject({ depth: 0, pending: n });
    });
  });
});
