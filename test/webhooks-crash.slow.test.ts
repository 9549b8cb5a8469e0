// Webhooks survive crashes: the API and the brain and tools workers (child processes on PostgreSQL) are SIGKILLed
// between events and their deliveries: one event whose delivery workflow waits to try again after a 503, and one
// still unrelayed in the outbox (no tools worker was up to relay it). Once the processes are back, both are
// delivered, each verified with the SDK's `unwrap`, the first with the same webhook-id on every attempt.
// A deployment fired through the API, killed with the workers before its run's deployment_run.succeeded got through,
// delivers it once they are back.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { freshPostgresDatabase } from './helpers/api';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { ROOT, startHarness, type Harness } from './helpers/env';
import { TEST_CODEC_KEY } from './helpers/test-keys';
import { openDb, type Db } from '../src/storage/db';
import { vaultPublicKey } from '../src/vault/sealed';
import { createApiKey } from '../src/api/workspace-keys';
import { addWebhookEndpoint } from '../src/webhooks/endpoints';
import { listWebhookEvents } from '../src/storage/repos/webhooks-repo';

interface Received {
  headers: Record<string, string>;
  body: string;
  status: number;
}

let h: Harness;
let pg: Awaited<ReturnType<typeof freshPostgresDatabase>>;
let db: Db;
let server: http.Server;
const got: Received[] = [];
let answer = 503;
const vaultKey = randomBytes(32).toString('base64');
let env: Record<string, string>;
const workers: ChildWorker[] = [];
const apis: ChildProcess[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      got.push({ headers: req.headers as Record<string, string>, body, status: answer });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  h = await startHarness({ worker: false });
  pg = await freshPostgresDatabase();
  db = await openDb({ databaseUrl: pg.url, dataDir: '/tmp' });
  env = {
    TEMPORAL_ADDRESS: h.env.address,
    DATABASE_URL: pg.url,
    CODEC_KEY: TEST_CODEC_KEY,
    VAULT_KEY: vaultKey,
    VAULT_PUBLIC_KEY: await vaultPublicKey(vaultKey),
    KEY_FILES: 'off',
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    EGRESS_ALLOW: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    EGRESS_DNS: 'off',
    WEBHOOK_RETRY_DELAYS: '2,2,2,2,2,2,2,2',
    WEBHOOK_RELAY_INTERVAL_MS: '200',
    API_LISTEN: '127.0.0.1:0',
    API_RATE_LIMIT: 'off',
    MCP_STDIO_JAIL: 'off',
  };
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  for (const a of apis) a.kill('SIGKILL');
  await db?.close();
  await pg?.drop();
  await h?.stop();
  await new Promise((r) => server?.close(r));
});

async function worker(role: 'brain' | 'tools'): Promise<ChildWorker> {
  const w = await spawnWorker(env, role);
  workers.push(w);
  return w;
}

/** `agents api` as a child process, its URL once it listens. */
async function startApi(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'api', '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  apis.push(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve((JSON.parse(out.split('\n')[0]) as { url: string }).url);
    });
    child.once('exit', () => reject(new Error(`agents api exited: ${stderr}`)));
  });
  return { url, child };
}

const sigkill = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, ms = 90_000): Promise<T> {
  for (const end = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 100))) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

it('delivers an event waiting to be tried again and an unrelayed one after the API and the workers were killed', async () => {
  const endpoint = await addWebhookEndpoint(db, env.VAULT_PUBLIC_KEY, {
    workspaceId: 'wrkspc_default',
    url: `http://${env.EGRESS_ALLOW}/hook`,
    events: 'agent.created',
  });
  const key = (await createApiKey(db, 'default')).key;
  const api = await startApi();
  const client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });
  await worker('brain');
  const tools = await worker('tools');

  // Event 1: relayed, its first attempt answered 503; its workflow now waits to try again.
  const first = await client.beta.agents.create({ name: 'first', model: 'claude-test' });
  await until('the first attempt', () => (got.length > 0 ? true : undefined));
  // Event 2: no tools worker, so no relay; it waits in the outbox.
  await tools.kill('SIGKILL');
  const second = await client.beta.agents.create({ name: 'second', model: 'claude-test' });
  const events = await listWebhookEvents(db, 'wrkspc_default', 10);
  const idOf = (agentId: string) => events.find((e) => (e.payload as { data: { id: string } }).data.id === agentId)!.id;
  const [firstEvent, secondEvent] = [idOf(first.id), idOf(second.id)];
  // Everything else goes down hard.
  await sigkill(api.child);
  await Promise.all(workers.map((w) => w.kill('SIGKILL')));
  const attemptsBefore = got.length;
  answer = 204;

  // Back up: a new API process, brain and tools workers.
  await startApi();
  await worker('brain');
  await worker('tools');
  const delivered = (eventId: string) => () =>
    got.find((g) => g.status === 204 && g.headers['webhook-id'] === eventId) ?? undefined;
  const d1 = await until('event 1 delivered', delivered(firstEvent));
  const d2 = await until('event 2 delivered', delivered(secondEvent));
  const verify = (d: Received) => client.beta.webhooks.unwrap(d.body, { headers: d.headers, key: endpoint.secret });
  expect(verify(d1).data).toMatchObject({ type: 'agent.created', id: first.id });
  expect(verify(d2).data).toMatchObject({ type: 'agent.created', id: second.id });
  // Every attempt of event 1 carried the same webhook-id; nothing reached the receiver while everything was down.
  expect(attemptsBefore).toBeGreaterThan(0);
  expect(got.slice(0, attemptsBefore).every((g) => g.headers['webhook-id'] === firstEvent)).toBe(true);
  expect(new Set(got.map((g) => g.headers['webhook-id']))).toEqual(new Set([firstEvent, secondEvent]));
});

it("delivers a deployment run's deployment_run.succeeded after the API and the workers were killed between the firing and its delivery", async () => {
  answer = 503;
  const endpoint = await addWebhookEndpoint(db, env.VAULT_PUBLIC_KEY, {
    workspaceId: 'wrkspc_default',
    url: `http://${env.EGRESS_ALLOW}/deployments`,
    events: 'deployment_run.started,deployment_run.succeeded',
  });
  const key = (await createApiKey(db, 'default')).key;
  const client = new Anthropic({ apiKey: key, baseURL: (await startApi()).url, maxRetries: 0 });
  await worker('brain');
  await worker('tools');
  const environment = await client.beta.environments.create({ name: 'deploy-hooks' });
  const agent = await client.beta.agents.create({ name: 'fired', model: 'claude-test' });
  const deployment = await client.beta.deployments.create({
    agent: agent.id,
    environment_id: environment.id,
    name: 'fired once',
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'Hello from a deployment.' }] }],
  });
  // The firing: its run creates the session and writes deployment_run.succeeded, whose first attempt gets a 503.
  const run = await client.beta.deployments.run(deployment.id);
  expect(run.session_id).toEqual(expect.stringMatching(/^sesn_/));
  const payloadOf = (g: Received) => JSON.parse(g.body) as { type: string; data: { type: string; id: string } };
  const succeeded = (g: Received) =>
    payloadOf(g).data.type === 'deployment_run.succeeded' && payloadOf(g).data.id === run.id;
  await until('the first attempt of deployment_run.succeeded', () => (got.some(succeeded) ? true : undefined));
  // Everything but Temporal goes down hard between the firing and the delivery.
  await Promise.all(apis.map(sigkill));
  await Promise.all(workers.map((w) => w.kill('SIGKILL')));
  answer = 204;

  const again = new Anthropic({ apiKey: key, baseURL: (await startApi()).url, maxRetries: 0 });
  await worker('brain');
  await worker('tools');
  const delivered = await until('deployment_run.succeeded delivered', () =>
    got.find((g) => g.status === 204 && succeeded(g)),
  );
  const event = client.beta.webhooks.unwrap(delivered.body, { headers: delivered.headers, key: endpoint.secret });
  expect(event.data).toMatchObject({ type: 'deployment_run.succeeded', id: run.id, workspace_id: 'wrkspc_default' });
  // One webhook-id across its attempts; deployment_run.started came too, verified with the same key.
  const ids = new Set(got.filter(succeeded).map((g) => g.headers['webhook-id']));
  expect(ids.size).toBe(1);
  const started = await until('deployment_run.started delivered', () =>
    got.find((g) => g.status === 204 && payloadOf(g).data.type === 'deployment_run.started'),
  );
  expect(
    client.beta.webhooks.unwrap(started.body, { headers: started.headers, key: endpoint.secret }).data,
  ).toMatchObject({
    id: run.id,
  });
  // The session the run created is the deployment's.
  expect((await again.beta.sessions.retrieve(run.session_id!)).deployment_id).toBe(deployment.id);
});
