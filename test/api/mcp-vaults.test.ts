// MCP through a vault credential, driven only by the SDK: a vault holding an mcp_oauth credential for an MCP server
// on loopback that demands the bearer token, an agent with that server and an mcp_toolset, a session with vault_ids.
// The tools worker finds the credential by URL in the session's vaults (its own workspace, first vault first), the
// call runs once confirmed, and no token reaches the events, the model or the raw history. Ten sessions on one expired
// single-use OAuth credential through two tools workers refresh it once and never send a spent refresh token again.
import Anthropic from '@anthropic-ai/sdk';
import os from 'node:os';
import { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { openDb, type Db } from '../../src/storage/db';
import type { RunningWorker } from '../../src/worker';
import { REDACTED } from '../../src/vault';
import { NO_DATABASE, credentialForServer } from '../../src/mcp/api-credentials';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, startTestWorker, type Harness } from '../helpers/env';
import { startTrackerServer, type TrackerServer } from '../helpers/mcp-server';

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

let h: Harness;
let api: TestApi;
let client: Anthropic;
let tracker: TrackerServer;
let envId: string;
let tools: RunningWorker | undefined;

beforeAll(async () => {
  tracker = await startTrackerServer();
  // The tracker (its MCP endpoint and its token endpoint) is the one loopback server tenants may reach.
  process.env.EGRESS_ALLOW = new URL(tracker.url).host;
  h = await startHarness();
  api = await startApiOn(h, ['default', 'other']);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'mcp-env' })).id;
});
afterAll(async () => {
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
  await tracker?.stop();
});

/** Lists the session's events until `done` holds for them. */
async function eventsUntil(id: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  let events: Event[] = [];
  for (let i = 0; i < 600; i++) {
    events = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `session ${id} did not get there: ${JSON.stringify(events.map((e) => (e.type === 'session.error' ? e : e.type)))}`,
  );
}
const idle =
  (stop: string, n = 1) =>
  (events: Event[]) =>
    events.filter(
      (e) => e.type === 'session.status_idle' && (e as { stop_reason: { type: string } }).stop_reason.type === stop,
    ).length >= n;

const trackerAgent = () =>
  client.beta.agents.create({
    name: 'filer',
    model: 'claude-test',
    mcp_servers: [{ type: 'url', name: 'tracker', url: tracker.url }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'tracker' }],
  });

const say = (id: string, text: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });

describe('a tools worker without the database', () => {
  beforeAll(async () => {
    // No DATABASE_URL and no API database handed to it: what a separate tools worker has in the embedded default.
    tools = await startTestWorker(h.env.address, h.mock.url, { role: 'tools', vaultKey: api.vaultKey });
  });
  afterAll(async () => {
    await tools?.shutdown();
    tools = undefined;
  });

  it('shows the session a session.error saying why, and the turn still ends', async () => {
    const v = await client.beta.vaults.create({ display_name: 'unreachable' });
    await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', mcp_server_url: tracker.url, token: tracker.issue('nobody').accessToken },
    });
    const s = await client.beta.sessions.create({
      agent: (await trackerAgent()).id,
      environment_id: envId,
      vault_ids: [v.id],
    });
    h.mock.script(s.id, { steps: [{ reply: { content: [{ type: 'text', text: 'The tracker is out of reach.' }] } }] });
    await say(s.id, 'file a bug');
    const events = await eventsUntil(s.id, idle('end_turn'));
    const error = events.find((e) => e.type === 'session.error') as { error: { message: string } } | undefined;
    expect(error?.error.message).toContain(NO_DATABASE);
    expect(events.filter((e) => e.type === 'agent.message')).toHaveLength(1);
  });
});

describe('tools workers on the API database', () => {
  let otherDb: Db;
  let second: RunningWorker | undefined;
  beforeAll(async () => {
    // Two tools workers on queue `tools`, each with its own client pool and its own connections to PostgreSQL.
    otherDb = await openDb({ databaseUrl: api.databaseUrl, dataDir: os.tmpdir() });
    tools = await startTestWorker(h.env.address, h.mock.url, {
      role: 'tools',
      vaultKey: api.vaultKey,
      apiDb: () => api.db,
    });
    second = await startTestWorker(h.env.address, h.mock.url, {
      role: 'tools',
      vaultKey: api.vaultKey,
      apiDb: () => otherDb,
    });
  });
  afterAll(async () => {
    await second?.shutdown().catch(() => undefined);
    await otherDb?.close();
  });

  it("calls the MCP tool with the first of the session's vaults that holds a credential for its URL, once confirmed", async () => {
    const alice = tracker.issue('alice');
    const bob = tracker.issue('bob');
    const first = await client.beta.vaults.create({ display_name: 'alice' });
    await client.beta.vaults.credentials.create(first.id, {
      auth: {
        type: 'mcp_oauth',
        mcp_server_url: tracker.url,
        access_token: alice.accessToken,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        refresh: {
          client_id: tracker.clientId,
          refresh_token: alice.refreshToken,
          token_endpoint: tracker.tokenUrl,
          token_endpoint_auth: { type: 'client_secret_post', client_secret: tracker.clientSecret },
        },
      },
    });
    const second = await client.beta.vaults.create({ display_name: 'bob' });
    await client.beta.vaults.credentials.create(second.id, {
      auth: { type: 'static_bearer', mcp_server_url: tracker.url, token: bob.accessToken },
    });
    // Alice's token lapses on the server: the worker refreshes it with her refresh token, then calls.
    tracker.expire(alice.accessToken);

    const s = await client.beta.sessions.create({
      agent: (await trackerAgent()).id,
      environment_id: envId,
      vault_ids: [first.id, second.id],
    });
    h.mock.script(s.id, {
      steps: [
        {
          reply: {
            content: [{ type: 'tool_use', name: 'mcp__tracker__create_issue', input: { title: 'Login is broken' } }],
          },
        },
        { reply: { content: [{ type: 'text', text: 'Filed it.' }] } },
      ],
    });
    await say(s.id, 'file a bug about the login');

    const waiting = await eventsUntil(s.id, idle('requires_action'));
    const use = waiting.find((e) => e.type === 'agent.mcp_tool_use')!;
    expect(use).toMatchObject({
      mcp_server_name: 'tracker',
      name: 'create_issue',
      input: { title: 'Login is broken' },
    });
    expect(waiting.at(-1)).toMatchObject({ stop_reason: { type: 'requires_action', event_ids: [use.id] } });
    expect(tracker.issues).toEqual([]);
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }],
    });

    const done = await eventsUntil(s.id, idle('end_turn'));
    expect(done.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
      mcp_tool_use_id: use.id,
      is_error: false,
      content: [{ type: 'text', text: 'created issue #1: Login is broken' }],
    });
    expect(done.filter((e) => e.type === 'agent.message').at(-1)).toMatchObject({
      content: [{ type: 'text', text: 'Filed it.' }],
    });
    expect(tracker.issues).toEqual([{ title: 'Login is broken', user: 'alice' }]);
    expect(tracker.reuses).toBe(0);

    // The refreshed token set is stored back (sealed) for the next session: it calls without another refresh.
    const refreshes = tracker.refreshes;
    expect(refreshes).toBeGreaterThanOrEqual(1);
    const again = await client.beta.sessions.create({
      agent: (await trackerAgent()).id,
      environment_id: envId,
      vault_ids: [first.id],
    });
    h.mock.script(again.id, {
      steps: [
        { reply: { content: [{ type: 'tool_use', name: 'mcp__tracker__whoami', input: {} }] } },
        { reply: { content: [{ type: 'text', text: 'Checked.' }] } },
      ],
    });
    await say(again.id, 'who am I?');
    const asked = await eventsUntil(again.id, idle('requires_action'));
    await client.beta.sessions.events.send(again.id, {
      events: [
        {
          type: 'user.tool_confirmation',
          tool_use_id: asked.find((e) => e.type === 'agent.mcp_tool_use')!.id,
          result: 'allow',
        },
      ],
    });
    const checked = await eventsUntil(again.id, idle('end_turn'));
    const whoami = checked.find((e) => e.type === 'agent.mcp_tool_result') as { content: { text: string }[] };
    // The server echoes its caller's token; the worker redacts it before anything leaves.
    expect(whoami.content[0].text).toBe(`you are alice\nyour token is ${REDACTED}`);
    expect(tracker.refreshes).toBe(refreshes);

    // No token in what the user reads, what the model was sent, or the raw history.
    const [{ workspace_id: workspaceId }] = await api.db!.query<{ workspace_id: string }>(
      'select workspace_id from vaults where id = $1',
      [first.id],
    );
    const now = (await credentialForServer(api.db!, api.vaultKey, workspaceId, [first.id], tracker.url))!;
    expect(tracker.accepts(now.access_token)).toBe(true);
    const raw = new Client({ connection: h.env.connection });
    for (const id of [s.id, again.id]) {
      const read = JSON.stringify([await eventsUntil(id, () => true), h.mock.requests(id)]);
      const history = historyToJSON(await raw.workflow.getHandle(id).fetchHistory());
      for (const secret of [
        alice.accessToken,
        alice.refreshToken,
        now.access_token,
        now.refresh_token!,
        bob.accessToken,
        tracker.clientSecret,
      ]) {
        expect(read).not.toContain(secret);
        expect(history).not.toContain(secret);
        expect(history).not.toContain(Buffer.from(secret).toString('base64'));
      }
    }
  });

  it("uses no other workspace's vault, and a session whose vaults hold nothing for the URL calls without a token", async () => {
    const other = await api.client('other');
    const theirs = await other.beta.vaults.create({ display_name: 'theirs' });
    await expect(
      client.beta.sessions.create({ agent: (await trackerAgent()).id, environment_id: envId, vault_ids: [theirs.id] }),
    ).rejects.toBeInstanceOf(Anthropic.NotFoundError);

    const empty = await client.beta.vaults.create({ display_name: 'empty' });
    await client.beta.vaults.credentials.create(empty.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:1/elsewhere', token: 'tok-for-another-server' },
    });
    const s = await client.beta.sessions.create({
      agent: (await trackerAgent()).id,
      environment_id: envId,
      vault_ids: [empty.id],
    });
    const sent = tracker.requests.length;
    h.mock.script(s.id, { steps: [{ reply: { content: [{ type: 'text', text: 'No tracker for me.' }] } }] });
    await say(s.id, 'file a bug');
    const events = await eventsUntil(s.id, idle('end_turn'));
    const error = events.find((e) => e.type === 'session.error') as { error: { message: string } } | undefined;
    expect(error?.error.message).toMatch(/MCP server tracker: the server refused the credential \(HTTP 401\)/);
    expect(tracker.requests.slice(sent).map((r) => r.auth)).toContain('missing');
    expect(JSON.stringify(events)).not.toContain('tok-for-another-server');
  });

  it('runs ten sessions on one expired single-use OAuth credential through two tools workers without losing the rotated token', async () => {
    const dana = tracker.issue('dana');
    const vault = await client.beta.vaults.create({ display_name: 'shared' });
    await client.beta.vaults.credentials.create(vault.id, {
      auth: {
        type: 'mcp_oauth',
        mcp_server_url: tracker.url,
        access_token: dana.accessToken,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        refresh: {
          client_id: tracker.clientId,
          refresh_token: dana.refreshToken,
          token_endpoint: tracker.tokenUrl,
          token_endpoint_auth: { type: 'client_secret_post', client_secret: tracker.clientSecret },
        },
      },
    });
    tracker.expire(dana.accessToken);
    const refreshes = tracker.refreshes;
    const agent = await client.beta.agents.create({
      name: 'filer',
      model: 'claude-test',
      mcp_servers: [{ type: 'url', name: 'tracker', url: tracker.url }],
      tools: [
        {
          type: 'mcp_toolset',
          mcp_server_name: 'tracker',
          default_config: { permission_policy: { type: 'always_allow' } },
        },
      ],
    });
    const envId = (await client.beta.environments.create({ name: 'ten' })).id;
    const sessions = await Promise.all(
      Array.from({ length: 10 }, () =>
        client.beta.sessions.create({ agent: agent.id, environment_id: envId, vault_ids: [vault.id] }),
      ),
    );
    sessions.forEach((s, i) =>
      h.mock.script(s.id, {
        steps: [
          {
            reply: {
              content: [{ type: 'tool_use', name: 'mcp__tracker__create_issue', input: { title: `bug ${i}` } }],
            },
          },
          { reply: { content: [{ type: 'text', text: 'Filed.' }] } },
        ],
      }),
    );
    await Promise.all(
      sessions.map((s) =>
        client.beta.sessions.events.send(s.id, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: 'file it' }] }],
        }),
      ),
    );

    const logs = await Promise.all(sessions.map((s) => eventsUntil(s.id, idle('end_turn'))));
    logs.forEach((events, i) => {
      expect(events.filter((e) => e.type === 'session.error')).toEqual([]);
      expect(events.find((e) => e.type === 'agent.mcp_tool_result')).toMatchObject({
        is_error: false,
        content: [{ type: 'text', text: expect.stringMatching(new RegExp(`^created issue #\\d+: bug ${i}$`)) }],
      });
    });
    expect(
      tracker.issues
        .filter((x) => x.user === 'dana')
        .map((x) => x.title)
        .sort(),
    ).toEqual(Array.from({ length: 10 }, (_, i) => `bug ${i}`).sort());
    expect(tracker.refreshes - refreshes).toBe(1);
    expect(tracker.reuses).toBe(0);
    const read = JSON.stringify(logs);
    for (const secret of [dana.accessToken, dana.refreshToken, tracker.clientSecret])
      expect(read).not.toContain(secret);
  });
});
