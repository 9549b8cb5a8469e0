// The egress gate tried as a tenant would attack it, through the SDK and the API: MCP server URLs, an OAuth token
// endpoint and a repository URL aimed at a canary HTTP server on loopback (IPv4 and IPv6), in every spelling of its
// address, and an allowed server (EGRESS_ALLOW host:port) that answers with a redirect to the canary. The canary
// counts every request it gets; it must get none. The allowed MCP server still answers, and each refusal says why.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { EgressGate, makePolicy } from '../src/egress';
import { syncMirror, upstreamOf, GitError } from '../src/sandbox/host-git';
import type { RunningWorker } from '../src/worker';
import { startApiOn, type TestApi } from './helpers/api';
import { startHarness, startTestWorker, type Harness } from './helpers/env';
import { startTrackerServer, type TrackerServer } from './helpers/mcp-server';

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

interface Canary {
  port4: number;
  port6: number;
  hits: string[];
  stop(): Promise<void>;
}

async function listen(server: http.Server, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, () => resolve()));
  return (server.address() as AddressInfo).port;
}

async function startCanary(): Promise<Canary> {
  const hits: string[] = [];
  const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"canary":"internal secret"}');
  };
  const v4 = http.createServer(answer);
  const v6 = http.createServer(answer);
  const port4 = await listen(v4, '127.0.0.1');
  const port6 = await listen(v6, '::1');
  return {
    port4,
    port6,
    hits,
    stop: async () => void (await Promise.all([v4, v6].map((s) => new Promise((r) => s.close(r))))),
  };
}

/** Every way to write the canary's address. */
const spellings = (c: Canary, path = '/mcp') => [
  `http://127.0.0.1:${c.port4}${path}`,
  `http://127.1:${c.port4}${path}`,
  `http://2130706433:${c.port4}${path}`,
  `http://0x7f000001:${c.port4}${path}`,
  `http://0177.0.0.1:${c.port4}${path}`,
  `http://017700000001:${c.port4}${path}`,
  `http://[::ffff:127.0.0.1]:${c.port4}${path}`,
  `http://[::ffff:7f00:1]:${c.port4}${path}`,
  `http://0.0.0.0:${c.port4}${path}`,
  `http://localhost:${c.port4}${path}`,
  `http://localhost.:${c.port4}${path}`,
  `http://[::1]:${c.port6}${path}`,
  `http://[0:0:0:0:0:0:0:1]:${c.port6}${path}`,
];

let canary: Canary;
let tracker: TrackerServer;
let bounce: http.Server;
let bounceUrl: string;
let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;
let tools: RunningWorker | undefined;

beforeAll(async () => {
  canary = await startCanary();
  tracker = await startTrackerServer();
  // An allowed server whose every answer is a redirect to the canary.
  bounce = http.createServer((req, res) =>
    res.writeHead(req.method === 'POST' ? 307 : 302, { location: `http://127.0.0.1:${canary.port4}${req.url}` }).end(),
  );
  bounceUrl = `http://127.0.0.1:${await listen(bounce, '127.0.0.1')}`;
  process.env.EGRESS_ALLOW = `${new URL(tracker.url).host},${new URL(bounceUrl).host}`;
  h = await startHarness();
  api = await startApiOn(h);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'egress' })).id;
  tools = await startTestWorker(h.env.address, h.mock.url, {
    role: 'tools',
    vaultKey: api.vaultKey,
    apiDb: () => api.db,
  });
});
afterAll(async () => {
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
  await tracker?.stop();
  await new Promise((r) => bounce?.close(r));
  await canary?.stop();
});

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  return (err as Error).message;
}

async function eventsUntil(id: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  let events: Event[] = [];
  for (let i = 0; i < 600; i++) {
    events = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${id} did not get there: ${JSON.stringify(events.map((e) => e.type))}`);
}
const idle = (events: Event[]) =>
  events.some(
    (e) => e.type === 'session.status_idle' && (e as { stop_reason: { type: string } }).stop_reason.type === 'end_turn',
  );

describe('at the door', () => {
  it('refuses an MCP server at the canary in every spelling, naming the field and the rule', async () => {
    for (const url of spellings(canary)) {
      const message = await refusal(
        client.beta.agents.create({
          name: 'x',
          model: 'claude-test',
          mcp_servers: [{ type: 'url', name: 'inside', url }],
          tools: [{ type: 'mcp_toolset', mcp_server_name: 'inside' }],
        }),
      );
      expect({ url, message }).toEqual({
        url,
        message: expect.stringMatching(
          /mcp_servers\.0\.url: egress refused .*(loopback|unspecified).*EGRESS_ALLOW can open it/,
        ),
      });
    }
    // An update is refused the same way, and leaves the agent as it was.
    const agent = await client.beta.agents.create({ name: 'x', model: 'claude-test' });
    const message = await refusal(
      client.beta.agents.update(agent.id, {
        version: agent.version,
        mcp_servers: [{ type: 'url', name: 'inside', url: spellings(canary)[1] }],
        tools: [{ type: 'mcp_toolset', mcp_server_name: 'inside' }],
      }),
    );
    expect(message).toMatch(
      /mcp_servers\.0\.url: egress refused 127\.0\.0\.1:\d+: 127\.0\.0\.1 is a loopback address \(127\.0\.0\.0\/8\)/,
    );
    expect((await client.beta.agents.retrieve(agent.id)).version).toBe(agent.version);
  });

  it('refuses a token endpoint at the canary in every spelling', async () => {
    const vault = await client.beta.vaults.create({ display_name: 'attack' });
    for (const url of spellings(canary, '/token')) {
      const message = await refusal(
        client.beta.vaults.credentials.create(vault.id, {
          auth: {
            type: 'mcp_oauth',
            mcp_server_url: tracker.url,
            access_token: 'at',
            refresh: {
              client_id: 'c',
              refresh_token: 'rt',
              token_endpoint: url,
              token_endpoint_auth: { type: 'none' },
            },
          },
        }),
      );
      expect({ url, message }).toEqual({
        url,
        message: expect.stringMatching(/auth\.refresh\.token_endpoint: egress refused .*(loopback|unspecified)/),
      });
    }
    expect((await client.beta.vaults.credentials.list(vault.id)).data).toEqual([]);
  });

  it('refuses a repository at the canary in every spelling and creates no session', async () => {
    const agent = await client.beta.agents.create({ name: 'coder', model: 'claude-test' });
    const before = (await client.beta.sessions.list()).data.length;
    for (const url of spellings(canary, '/app.git')) {
      const message = await refusal(
        client.beta.sessions.create({
          agent: agent.id,
          environment_id: envId,
          resources: [{ type: 'github_repository', url }],
        }),
      );
      expect({ url, message }).toEqual({
        url,
        message: expect.stringMatching(/resources\.0\.url: egress refused .*(loopback|unspecified)/),
      });
    }
    expect((await client.beta.sessions.list()).data.length).toBe(before);
    expect(canary.hits).toEqual([]);
  });
});

describe('at run time', () => {
  it('answers through the allowed MCP server and refuses the redirect of the other, without its response text', async () => {
    const alice = tracker.issue('alice');
    const vault = await client.beta.vaults.create({ display_name: 'alice' });
    await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'static_bearer', mcp_server_url: tracker.url, token: alice.accessToken },
    });
    const always = { permission_policy: { type: 'always_allow' as const } };
    const agent = await client.beta.agents.create({
      name: 'filer',
      model: 'claude-test',
      mcp_servers: [
        { type: 'url', name: 'tracker', url: tracker.url },
        { type: 'url', name: 'bounce', url: `${bounceUrl}/mcp` },
      ],
      tools: [
        { type: 'mcp_toolset', mcp_server_name: 'tracker', default_config: always },
        { type: 'mcp_toolset', mcp_server_name: 'bounce', default_config: always },
      ],
    });
    const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId, vault_ids: [vault.id] });
    h.mock.script(s.id, {
      steps: [
        { reply: { content: [{ type: 'tool_use', name: 'mcp__tracker__whoami', input: {} }] } },
        { reply: { content: [{ type: 'text', text: 'Checked.' }] } },
      ],
    });
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'who am I?' }] }],
    });
    const events = await eventsUntil(s.id, idle);

    const result = events.find((e) => e.type === 'agent.mcp_tool_result') as
      { is_error: boolean; content: { text: string }[] } | undefined;
    expect(result?.is_error).toBe(false);
    expect(result?.content[0].text).toMatch(/^you are alice/);
    const errors = events
      .filter((e) => e.type === 'session.error')
      .map((e) => (e as { error: { message: string } }).error.message);
    expect(errors.join('\n')).toMatch(
      new RegExp(
        `bounce.*egress refused a redirect to 127\\.0\\.0\\.1:${canary.port4}: 127\\.0\\.0\\.1 is a loopback address`,
      ),
    );
    expect(JSON.stringify(events)).not.toContain('internal secret');
    expect(canary.hits).toEqual([]);
  });

  it('refuses a token refresh redirected to the canary, as a session.error', async () => {
    const bob = tracker.issue('bob');
    tracker.expire(bob.accessToken);
    const vault = await client.beta.vaults.create({ display_name: 'bob' });
    await client.beta.vaults.credentials.create(vault.id, {
      auth: {
        type: 'mcp_oauth',
        mcp_server_url: tracker.url,
        access_token: bob.accessToken,
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        refresh: {
          client_id: tracker.clientId,
          refresh_token: bob.refreshToken,
          token_endpoint: `${bounceUrl}/token`,
          token_endpoint_auth: { type: 'client_secret_post', client_secret: tracker.clientSecret },
        },
      },
    });
    const agent = await client.beta.agents.create({
      name: 'filer',
      model: 'claude-test',
      mcp_servers: [{ type: 'url', name: 'tracker', url: tracker.url }],
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'tracker' }],
    });
    const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId, vault_ids: [vault.id] });
    h.mock.script(s.id, { steps: [{ reply: { content: [{ type: 'text', text: 'No tracker.' }] } }] });
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'file a bug' }] }],
    });
    const events = await eventsUntil(s.id, idle);
    const errors = events
      .filter((e) => e.type === 'session.error')
      .map((e) => (e as { error: { message: string } }).error.message);
    expect(errors.join('\n')).toMatch(
      /token endpoint for vcrd_\w+: egress refused a redirect to 127\.0\.0\.1:\d+: 127\.0\.0\.1 is a loopback address/,
    );
    expect(tracker.refreshes).toBe(0);
    expect(canary.hits).toEqual([]);
  });

  it('lets host git neither reach the canary nor follow the allowed server’s redirect to it', async () => {
    const gate = new EgressGate(makePolicy(new URL(bounceUrl).host));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-git-'));
    try {
      for (const url of [...spellings(canary, '/app.git'), `${bounceUrl}/app.git`]) {
        const err = await upstreamOf({ url, tenant: true }, gate)
          .then((upstream) => syncMirror(path.join(dir, String(Math.random()).slice(2)), upstream))
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect({ url, err }).toEqual({ url, err: expect.any(GitError) });
        if (url.startsWith(bounceUrl)) expect((err as Error).message).toMatch(/git fetch from .* failed/);
        else expect((err as Error).message).toMatch(/egress refused .*(loopback|unspecified)/);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(canary.hits).toEqual([]);
  });
});
