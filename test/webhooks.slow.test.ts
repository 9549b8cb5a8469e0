// Webhooks end to end: endpoints registered with `agents webhooks`, events recorded by the API and by a scripted
// session's workflow, delivered by delivery workflows through a tools worker's egress gate to loopback receivers,
// and every delivery verified with the SDK's own `client.beta.webhooks.unwrap` and checked against the SDK's
// BetaWebhookEvent schema.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from './helpers/api';
import { startHarness, startTestWorker, type Harness } from './helpers/env';
import { runAgents } from './helpers/cli';
import { schemaErrors } from './helpers/conformance';
import { doneStep, eventsUntil, idles, sayTo } from './helpers/sdk-session';
import type { RunningWorker } from '../src/worker';
import { vaultPublicKey } from '../src/vault/sealed';
import {
  addWebhookEndpoint,
  recentAttempts,
  removeWebhookEndpoint,
  setEndpointEnabled,
} from '../src/webhooks/endpoints';
import { listWebhookEndpoints, listWebhookEvents, pendingAnnouncements } from '../src/storage/repos/webhooks-repo';
import { findWorkspaceId } from '../src/storage/repos/api-keys-repo';

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A loopback receiver: records every request; `answer` says the status for a path and its nth request. */
async function receiver(answer: (path: string, n: number) => number) {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const path = req.url ?? '/';
      got.push({ path, headers: req.headers as Record<string, string>, body });
      res.writeHead(answer(path, got.filter((g) => g.path === path).length)).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { got, url, close: () => new Promise((r) => server.close(r)) };
}

let h: Harness;
let api: TestApi;
let client: Anthropic;
let tools: RunningWorker | undefined;
let open: Awaited<ReturnType<typeof receiver>>;
let shut: Awaited<ReturnType<typeof receiver>>;
let cliEnv: Record<string, string>;
const saved = { ...process.env };

beforeAll(async () => {
  open = await receiver((path, n) => (path === '/flaky' && n <= 2 ? 500 : path.startsWith('/down') ? 503 : 204));
  shut = await receiver(() => 204);
  // Only the open receiver: the other is loopback, which the gate refuses unless EGRESS_ALLOW opens it.
  process.env.EGRESS_ALLOW = new URL(open.url).host;
  process.env.WEBHOOK_RETRY_DELAYS = '1,1,1';
  process.env.WEBHOOK_RELAY_INTERVAL_MS = '100';
  process.env.WEBHOOK_DISABLE_AFTER = '4';
  h = await startHarness();
  api = await startApiOn(h, ['default', 'quiet', 'failing']);
  client = await api.client();
  tools = await startTestWorker(h.env.address, h.mock.url, {
    role: 'tools',
    vaultKey: api.vaultKey,
    apiDb: () => api.db,
  });
  cliEnv = {
    DATABASE_URL: api.databaseUrl!,
    VAULT_PUBLIC_KEY: await vaultPublicKey(api.vaultKey),
    KEY_FILES: 'off',
    DATA_DIR: api.dataDir,
  };
}, 120_000);

afterAll(async () => {
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
  for (const k of ['EGRESS_ALLOW', 'WEBHOOK_RETRY_DELAYS', 'WEBHOOK_RELAY_INTERVAL_MS', 'WEBHOOK_DISABLE_AFTER'])
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  await open?.close();
  await shut?.close();
});

async function add(url: string, events?: string): Promise<{ id: string; secret: string }> {
  const r = await runAgents(
    h.env.address,
    ['webhooks', 'add', url, '--workspace', 'default', ...(events ? ['--events', events] : []), '--json'],
    cliEnv,
  );
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as { id: string; secret: string };
}

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The deliveries at `path`, each verified with `secret` by the SDK and checked against its type. */
function verified(path: string, secret: string) {
  return open.got
    .filter((g) => g.path === path)
    .map((g) => {
      const event = client.beta.webhooks.unwrap(g.body, { headers: g.headers, key: secret });
      expect(schemaErrors('$webhookEvent', event)).toBe('');
      return { event, headers: g.headers };
    });
}

it('delivers session.created and session.status_idled of a scripted session, and resource changes, each verified by unwrap', async () => {
  const all = await add(`${open.url}/all`);
  const env = await client.beta.environments.create({ name: 'hooks-env' });
  const agent = await client.beta.agents.create({ name: 'hooked', model: 'claude-test' });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(s.id, { steps: [doneStep] });
  await sayTo(client, s.id, 'hello');
  await eventsUntil(client, s.id, idles(1));
  const seen = (type: string, id: string) => () =>
    verified('/all', all.secret).find((d) => d.event.data.type === type && d.event.data.id === id);
  for (const [type, id] of [
    ['session.created', s.id],
    ['session.status_run_started', s.id],
    ['session.status_idled', s.id],
    ['agent.created', agent.id],
    ['environment.created', env.id],
  ])
    await until(`${type} of ${id}`, seen(type, id));
  const idled = seen('session.status_idled', s.id)()!;
  expect(idled.event).toMatchObject({
    type: 'event',
    data: {
      type: 'session.status_idled',
      id: s.id,
      workspace_id: 'wrkspc_default',
      organization_id: expect.any(String),
    },
  });
  expect(idled.headers['webhook-id']).toBe(idled.event.id);
  // Archived: an event in the same transaction as the archive.
  await client.beta.sessions.archive(s.id);
  await until('session.archived', seen('session.archived', s.id));
  // Archiving ends it: its workflow reports the end.
  await until('session.status_terminated', seen('session.status_terminated', s.id));
  // A delivery that is not signed with the secret does not verify.
  const first = open.got.find((g) => g.path === '/all')!;
  const otherKey = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
  expect(() => client.beta.webhooks.unwrap(first.body, { headers: first.headers, key: otherKey })).toThrow(
    /signature/i,
  );
});

it('tries again after two 500s, with the same webhook-id, and sends only the subscribed types', async () => {
  const flaky = await add(`${open.url}/flaky`, 'environment.created');
  const env = await client.beta.environments.create({ name: 'flaky-env' });
  await client.beta.agents.create({ name: 'not-subscribed', model: 'claude-test' });
  const three = await until('three attempts', () => {
    const got = open.got.filter((g) => g.path === '/flaky');
    return got.length >= 3 ? got : undefined;
  });
  const ids = new Set(three.map((g) => g.headers['webhook-id']));
  expect(ids.size).toBe(1);
  const events = verified('/flaky', flaky.secret).map((d) => d.event);
  expect(events.map((e) => e.data.type)).toEqual(['environment.created', 'environment.created', 'environment.created']);
  expect(events[2].data.id).toBe(env.id);
  const attempts = await until('the attempts recorded', async () => {
    const a = await recentAttempts(api.db!, flaky.id);
    return a.length >= 3 ? a : undefined;
  });
  expect(attempts.map((a) => [a.attempt, a.outcome, a.status_code])).toEqual([
    [3, 'delivered', 204],
    [2, 'failed', 500],
    [1, 'failed', 500],
  ]);
  // The CLI shows the same attempts.
  const r = await runAgents(h.env.address, ['webhooks', 'deliveries', flaky.id, '--json'], cliEnv);
  expect(r.code).toBe(0);
  expect(
    r.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { outcome: string }).outcome),
  ).toEqual(['delivered', 'failed', 'failed']);
});

it('never sends to a loopback URL EGRESS_ALLOW does not open, and records why', async () => {
  const refused = await add(`${shut.url}/hook`, 'agent.created');
  await client.beta.agents.create({ name: 'refused', model: 'claude-test' });
  const [attempt] = await until('the refusal recorded', async () => {
    const a = await recentAttempts(api.db!, refused.id);
    return a.length > 0 ? a : undefined;
  });
  expect(attempt).toMatchObject({ outcome: 'refused', status_code: null, attempt: 1 });
  expect(attempt.error).toMatch(/egress refused 127\.0\.0\.1.*loopback/);
  // A refusal is not retried: one attempt, and the receiver saw nothing.
  await new Promise((r) => setTimeout(r, 2500));
  expect(await recentAttempts(api.db!, refused.id)).toHaveLength(1);
  expect(shut.got).toEqual([]);
});

it('sends nothing to a disabled endpoint, and disables one that keeps failing, with the reason', async () => {
  const ws = 'wrkspc_default';
  const key = await vaultPublicKey(api.vaultKey);
  const off = await addWebhookEndpoint(api.db!, key, {
    workspaceId: ws,
    url: `${open.url}/off`,
    events: 'agent.created',
  });
  await setEndpointEnabled(api.db!, off.id, false);
  const down = await addWebhookEndpoint(api.db!, key, {
    workspaceId: ws,
    url: `${open.url}/down`,
    events: 'agent.created',
  });
  const witness = await addWebhookEndpoint(api.db!, key, {
    workspaceId: ws,
    url: `${open.url}/witness`,
    events: 'agent.created',
  });
  const agent = await client.beta.agents.create({ name: 'while-off', model: 'claude-test' });
  await until('the witness delivery', () =>
    verified('/witness', witness.secret).find((d) => d.event.data.id === agent.id),
  );
  const row = await until('the failing endpoint disabled', async () => {
    const r = (await listWebhookEndpoints(api.db!, ws)).find((e) => e.id === down.id);
    return r?.disabled_at ? r : undefined;
  });
  expect(row.disabled_reason).toBe('4 consecutive failed attempts; the last: HTTP 503');
  expect(open.got.filter((g) => g.path === '/down')).toHaveLength(4);
  expect(open.got.filter((g) => g.path === '/off')).toEqual([]);
  expect(await recentAttempts(api.db!, off.id)).toEqual([]);
  // `webhooks list` says why.
  const r = await runAgents(h.env.address, ['webhooks', 'list', '--json'], cliEnv);
  const listed = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; disabled: boolean; disabled_reason: string | null });
  expect(listed.find((e) => e.id === down.id)).toMatchObject({ disabled: true, disabled_reason: row.disabled_reason });
  expect(listed.find((e) => e.id === off.id)).toMatchObject({
    disabled: true,
    disabled_reason: 'disabled by the operator',
  });
});

it('signs with the new secret once rotate-secret has run', async () => {
  const ep = await add(`${open.url}/rotated`, 'agent.created');
  const r = await runAgents(h.env.address, ['webhooks', 'rotate-secret', ep.id, '--json'], cliEnv);
  expect(r.code).toBe(0);
  const { secret } = JSON.parse(r.stdout) as { id: string; secret: string };
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(secret).not.toBe(ep.secret);
  const agent = await client.beta.agents.create({ name: 'rotated', model: 'claude-test' });
  const got = await until('the delivery', () => open.got.find((g) => g.path === '/rotated'));
  expect(client.beta.webhooks.unwrap(got.body, { headers: got.headers, key: secret }).data.id).toBe(agent.id);
  expect(() => client.beta.webhooks.unwrap(got.body, { headers: got.headers, key: ep.secret })).toThrow(/signature/i);
});

it('refuses a bad URL or an unknown event type by name, and stores nothing', async () => {
  const before = (await listWebhookEndpoints(api.db!, null)).length;
  for (const [args, pattern] of [
    [['ftp://example.com/x'], /url: must be https/],
    [['http://example.com/x'], /url: must be https \(http only for a loopback host\)/],
    [
      ['https://example.com/x', '--events', 'session.created,session.exploded'],
      /--events: unknown event type session\.exploded/,
    ],
    [['https://example.com/x', '--workspace', 'nope'], /--workspace: no workspace nope/],
  ] as const) {
    const r = await runAgents(
      h.env.address,
      [
        'webhooks',
        'add',
        ...args,
        ...((args as readonly string[]).includes('--workspace') ? [] : ['--workspace', 'default']),
        '--json',
      ],
      cliEnv,
    );
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(pattern);
  }
  expect(await listWebhookEndpoints(api.db!, null)).toHaveLength(before);
  // The secret is never in the outbox or the attempts.
  const rows = await listWebhookEvents(api.db!, 'wrkspc_default', 1000);
  expect(JSON.stringify(rows)).not.toMatch(/whsec_/);
});

it('a session starts no outbox child while no endpoint takes its status events, reports once one is added, and stops once it is removed', async () => {
  const quiet = await api.client('quiet');
  const ws = (await findWorkspaceId(api.db!, 'quiet'))!;
  const key = await vaultPublicKey(api.vaultKey);
  // An endpoint for other events only: the workspace's sessions have nothing to report.
  await addWebhookEndpoint(api.db!, key, { workspaceId: ws, url: `${open.url}/quiet-agents`, events: 'agent.created' });
  const env = await quiet.beta.environments.create({ name: 'quiet-env' });
  const agent = await quiet.beta.agents.create({ name: 'quiet', model: 'claude-test' });
  const s = await quiet.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(s.id, { steps: [doneStep, doneStep, doneStep] });
  const history = async () => (await h.env.client.workflow.getHandle(s.id).fetchHistory()).events ?? [];
  const children = async () =>
    (await history())
      .filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)
      .map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId!);
  const told = async () =>
    (await history()).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'statusWebhooks').length;

  await sayTo(quiet, s.id, 'one');
  await eventsUntil(quiet, s.id, idles(1));
  expect(await children()).toEqual([]);
  // The first endpoint's change may have been announced to this session too (it still says: nothing to report).
  const settled = () =>
    until('no change left to announce', async () => (await pendingAnnouncements(api.db!, 10)).length === 0);
  await settled();
  const base = await told();

  // The endpoint's workspace is marked in the same transaction; the relay tells the session by signal.
  const status = await addWebhookEndpoint(api.db!, key, {
    workspaceId: ws,
    url: `${open.url}/quiet-status`,
    events: 'session.status_idled',
  });
  await until('the announcement of the new endpoint', async () => (await told()) === base + 1);
  // Announced once: the change is marked done only after every session was told.
  await settled();
  expect(await told()).toBe(base + 1);
  await sayTo(quiet, s.id, 'two');
  await eventsUntil(quiet, s.id, idles(2));
  const delivered = () => verified('/quiet-status', status.secret).filter((d) => d.event.data.id === s.id);
  await until('session.status_idled of the second turn', () => delivered().length === 1);
  expect(delivered()[0].event.data.type).toBe('session.status_idled');
  // The turn's two changes, each a child; the first turn's none.
  expect(await children()).toEqual([
    expect.stringMatching(new RegExp(`^webhook-status-${s.id}-\\d+-session.status_run_started$`)),
    expect.stringMatching(new RegExp(`^webhook-status-${s.id}-\\d+-session.status_idled$`)),
  ]);

  // Removed: told again, and the next turn starts no child.
  expect(await removeWebhookEndpoint(api.db!, status.id)).toBe(true);
  await until('the announcement of the removal', async () => (await told()) === base + 2);
  await settled();
  expect(await told()).toBe(base + 2);
  await sayTo(quiet, s.id, 'three');
  await eventsUntil(quiet, s.id, idles(3));
  expect(await children()).toHaveLength(2);

  // A session created while an endpoint takes its events reports from its first turn.
  const again = await addWebhookEndpoint(api.db!, key, { workspaceId: ws, url: `${open.url}/quiet-again` });
  const s2 = await quiet.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(s2.id, { steps: [doneStep] });
  await sayTo(quiet, s2.id, 'hello');
  await eventsUntil(quiet, s2.id, idles(1));
  await until('session.status_idled of the new session', () =>
    verified('/quiet-again', again.secret).find(
      (d) => d.event.data.type === 'session.status_idled' && d.event.data.id === s2.id,
    ),
  );
});

it('tells only open sessions of an endpoint change, and marks ended those whose workflow has closed', async () => {
  const quiet = await api.client('quiet');
  const ws = (await findWorkspaceId(api.db!, 'quiet'))!;
  const key = await vaultPublicKey(api.vaultKey);
  const env = await quiet.beta.environments.create({ name: 'closing-env' });
  const agent = await quiet.beta.agents.create({ name: 'closing', model: 'claude-test' });
  const [live, closed, young] = await Promise.all(
    [0, 1, 2].map(() => quiet.beta.sessions.create({ agent: agent.id, environment_id: env.id })),
  );
  const told = async (id: string) =>
    ((await h.env.client.workflow.getHandle(id).fetchHistory()).events ?? []).filter(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'statusWebhooks',
    ).length;
  const endedAt = async (id: string) =>
    (await api.db!.query<{ ended_at: Date | null }>('select ended_at from sessions where id = $1', [id]))[0].ended_at;
  const settled = () =>
    until('no change left to announce', async () => (await pendingAnnouncements(api.db!, 10)).length === 0);
  await settled();
  // Two workflows close; one session is past the start's grace, the other could still be starting.
  await h.env.client.workflow.getHandle(closed.id).terminate('closed for the test');
  await h.env.client.workflow.getHandle(young.id).terminate('closed for the test');
  await api.db!.query("update sessions set created_at = now() - interval '10 minutes' where id = any($1::text[])", [
    [live.id, closed.id],
  ]);
  const before = await told(live.id);

  const added = await addWebhookEndpoint(api.db!, key, { workspaceId: ws, url: `${open.url}/closing` });
  await until('the announcement to the open session', async () => (await told(live.id)) === before + 1);
  await settled();
  expect(await endedAt(closed.id)).toBeInstanceOf(Date);
  expect(await endedAt(young.id)).toBeNull();
  expect(await endedAt(live.id)).toBeNull();
  // The quota's count agrees: the closed session no longer holds a place.
  const counted = await api.db!.query<{ id: string }>(
    'select id from sessions where workspace_id = $1 and ended_at is null and archived_at is null and deleted_at is null',
    [ws],
  );
  expect(counted.map((r) => r.id)).toEqual(expect.arrayContaining([live.id, young.id]));
  expect(counted.map((r) => r.id)).not.toContain(closed.id);
  expect(await removeWebhookEndpoint(api.db!, added.id)).toBe(true);
  await until('the announcement of the removal', async () => (await told(live.id)) === before + 2);
});

it('tells the sessions when an endpoint that keeps failing is disabled, and they stop reporting', async () => {
  const failing = await api.client('failing');
  const ws = (await findWorkspaceId(api.db!, 'failing'))!;
  const key = await vaultPublicKey(api.vaultKey);
  const down = await addWebhookEndpoint(api.db!, key, {
    workspaceId: ws,
    url: `${open.url}/down/status`,
    events: 'session.status_idled',
  });
  const env = await failing.beta.environments.create({ name: 'failing-env' });
  const agent = await failing.beta.agents.create({ name: 'failing', model: 'claude-test' });
  const s = await failing.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(s.id, { steps: [doneStep, doneStep] });
  const history = async () => (await h.env.client.workflow.getHandle(s.id).fetchHistory()).events ?? [];
  const children = async () => (await history()).filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
  const told = async () =>
    (await history()).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'statusWebhooks').length;
  await until('no change left to announce', async () => (await pendingAnnouncements(api.db!, 10)).length === 0);
  const base = await told();

  await sayTo(failing, s.id, 'one');
  await eventsUntil(failing, s.id, idles(1));
  const row = await until('the failing endpoint disabled', async () => {
    const r = (await listWebhookEndpoints(api.db!, ws)).find((e) => e.id === down.id);
    return r?.disabled_at ? r : undefined;
  });
  expect(row.disabled_reason).toBe('4 consecutive failed attempts; the last: HTTP 503');
  expect(open.got.filter((g) => g.path === '/down/status')).toHaveLength(4);
  // Announced as an operator's change is: no enabled endpoint of the workspace takes status events now.
  await until('the announcement of the disable', async () => (await told()) === base + 1);
  const reported = (await children()).length;
  expect(reported).toBeGreaterThan(0);
  await sayTo(failing, s.id, 'two');
  await eventsUntil(failing, s.id, idles(2));
  expect(await children()).toHaveLength(reported);
});
