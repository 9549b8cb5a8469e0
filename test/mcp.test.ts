// MCP through a credential proxy: a session's MCP servers are reached by the tools worker with the session's
// vault credential, refreshed when it expires, and no token ever reaches the model or the log.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { AgentSchema, formatIssues, type AgentInput } from '../src/session/agent';
import { mcpToolName } from '../src/mcp/naming';
import type { SessionEvent } from '../src/session/events';
import { FileVault } from '../src/vault';
import { endSignal, sendMessageUpdate } from '../src/session/contract';
import { allEvents, startHarness, startSession, waitForEvents, type Harness } from './helpers/env';
import { callTool } from './helpers/hands';
import { startTrackerServer, type TrackerServer } from './helpers/mcp-server';
import { buildStdioServer, processesRunning } from './helpers/mcp-stdio';

let h: Harness;
let tracker: TrackerServer;
let vault: FileVault;
let vaultDir: string;
let stdio: ReturnType<typeof buildStdioServer>;
/** Every secret this suite hands out; none may appear in any event. */
const secrets: string[] = [];

beforeAll(async () => {
  tracker = await startTrackerServer();
  stdio = buildStdioServer();
  vaultDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-mcp-vault-'));
  vault = new FileVault(vaultDir, crypto.randomBytes(32).toString('base64'));
  secrets.push(tracker.clientSecret);
  h = await startHarness({ role: 'all', hostId: `test-mcp-${process.pid}`, vault });
});
afterAll(async () => {
  await h?.stop();
  await tracker?.stop();
  fs.rmSync(vaultDir, { recursive: true, force: true });
  if (stdio) fs.rmSync(stdio.dir, { recursive: true, force: true });
});

/** Stores an OAuth credential for `user` in vault `vaultName` and returns its tokens. */
async function oauthCredential(vaultName: string, user: string, extra: Record<string, unknown> = {}) {
  const t = tracker.issue(user);
  secrets.push(t.accessToken, t.refreshToken);
  await vault.put(
    vaultName,
    'tracker-oauth',
    JSON.stringify({
      access_token: t.accessToken,
      refresh_token: t.refreshToken,
      token_url: tracker.tokenUrl,
      client_id: tracker.clientId,
      client_secret: tracker.clientSecret,
      ...extra,
    }),
  );
  return t;
}

const trackerAgent = (vaultName: string, credential = 'vault:tracker-oauth'): Partial<AgentInput> => ({
  vault: vaultName,
  tools: ['session_events'],
  mcpServers: { tracker: { transport: 'http', url: tracker.url, credential } },
});

function offeredTools(sessionId: string): string[] {
  const req = h.mock.requests(sessionId).find((r) => r.path === '/v1/messages');
  return ((req?.body as { tools?: { name: string }[] } | undefined)?.tools ?? []).map((t) => t.name);
}

async function expectNoSecrets(handle: WorkflowHandle, extra: string[] = []) {
  const log = JSON.stringify(await allEvents(handle));
  for (const s of [...secrets, ...extra]) expect(log).not.toContain(s);
}

/** Like callTool, but waits past the `error` event a failed listing appends before the model is called. */
async function callToolPastErrors(handle: WorkflowHandle, tool: string, input: Record<string, unknown>) {
  h.mock.script(handle.workflowId, { steps: [{ reply: { content: [{ type: 'tool_use', name: tool, input }] } }] });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: `call ${tool}` }] });
  const events = await waitForEvents(handle, (ev) =>
    ev.some((e) => e.seq > seq && e.type === 'assistant_message' && e.stopReason === 'end_turn'),
  );
  const result = events.find((e) => e.seq > seq && e.type === 'tool_result');
  if (result?.type !== 'tool_result') throw new Error(`no tool_result after seq ${seq}`);
  return result;
}

const mcpErrors = (events: SessionEvent[]) =>
  events.filter((e) => e.type === 'error' && e.kind === 'mcp').map((e) => (e.type === 'error' ? e.message : ''));

describe('MCP servers through the tools worker', () => {
  it('offers the server tools as mcp__tracker__* and returns the server answer in the tool_result', async () => {
    const alice = await oauthCredential('alice', 'alice');
    const handle = await startSession(h, { agent: trackerAgent('alice') });

    const created = await callTool(h, handle, 'mcp__tracker__create_issue', { title: 'Flaky login test' });
    expect(created).toMatchObject({ isError: false, output: 'created issue #1: Flaky login test' });
    expect(tracker.issues).toEqual([{ title: 'Flaky login test', user: 'alice' }]);

    expect(offeredTools(handle.workflowId).sort()).toEqual([
      'mcp__tracker__create_issue',
      'mcp__tracker__fail',
      'mcp__tracker__whoami',
      'session_events',
    ]);
    const spec = (
      h.mock.requests(handle.workflowId)[0].body as { tools: { name: string; input_schema: Record<string, unknown> }[] }
    ).tools.find((t) => t.name === 'mcp__tracker__create_issue');
    expect(spec?.input_schema).toMatchObject({
      type: 'object',
      properties: { title: { type: 'string' } },
      required: ['title'],
    });

    // The server echoes the caller's token; the model gets it redacted.
    const who = await callTool(h, handle, 'mcp__tracker__whoami', {});
    expect(who).toMatchObject({ isError: false, output: 'you are alice\nyour token is ***' });

    const failed = await callTool(h, handle, 'mcp__tracker__fail', {});
    expect(failed).toMatchObject({ isError: true, output: 'the tracker is read-only today', error: { kind: 'tool' } });

    // One connection per (session, server): three calls, one initialize.
    expect(tracker.requests.filter((r) => r.user === 'alice' && r.method === 'initialize')).toHaveLength(1);
    await expectNoSecrets(handle, [alice.accessToken]);
    await handle.signal(endSignal, {});
  });

  it('refreshes an access token the server rejects, retries once, and stores the new token in the vault', async () => {
    const carol = await oauthCredential('carol', 'carol');
    const handle = await startSession(h, { agent: trackerAgent('carol') });
    expect((await callTool(h, handle, 'mcp__tracker__create_issue', { title: 'first' })).isError).toBe(false);

    tracker.expire(carol.accessToken);
    const refreshesBefore = tracker.refreshes;
    const rejectedBefore = tracker.requests.filter((r) => r.auth === 'rejected').length;
    const result = await callTool(h, handle, 'mcp__tracker__create_issue', { title: 'after expiry' });
    expect(result).toMatchObject({
      isError: false,
      output: expect.stringMatching(/^created issue #\d+: after expiry$/),
    });
    expect(tracker.refreshes).toBe(refreshesBefore + 1);
    expect(tracker.requests.filter((r) => r.auth === 'rejected').length).toBe(rejectedBefore + 1);
    // The renewed token is redacted too when the server echoes it.
    expect(await callTool(h, handle, 'mcp__tracker__whoami', {})).toMatchObject({
      isError: false,
      output: 'you are carol\nyour token is ***',
    });

    const stored = JSON.parse(await vault.get('carol', 'tracker-oauth')) as {
      access_token: string;
      refresh_token: string;
      expires_at: number;
      client_id: string;
    };
    expect(stored.access_token).not.toBe(carol.accessToken);
    expect(tracker.accepts(stored.access_token)).toBe(true);
    expect(stored.refresh_token).not.toBe(carol.refreshToken);
    expect(stored.client_id).toBe(tracker.clientId);
    expect(stored.expires_at).toBeGreaterThan(Date.now() / 1000);
    secrets.push(stored.access_token, stored.refresh_token);
    await expectNoSecrets(handle);
    await handle.signal(endSignal, {});
  });

  it('refreshes a token past its expires_at before using it, without a rejected request', async () => {
    const dave = await oauthCredential('dave', 'dave', { expires_at: Math.floor(Date.now() / 1000) - 60 });
    tracker.expire(dave.accessToken);
    const rejectedBefore = tracker.requests.filter((r) => r.auth === 'rejected').length;
    const handle = await startSession(h, { agent: trackerAgent('dave') });
    expect(await callTool(h, handle, 'mcp__tracker__whoami', {})).toMatchObject({
      isError: false,
      output: 'you are dave\nyour token is ***',
    });
    expect(tracker.requests.filter((r) => r.auth === 'rejected').length).toBe(rejectedBefore);
    const stored = JSON.parse(await vault.get('dave', 'tracker-oauth')) as {
      access_token: string;
      refresh_token: string;
    };
    expect(tracker.accepts(stored.access_token)).toBe(true);
    secrets.push(stored.access_token, stored.refresh_token);
    await expectNoSecrets(handle);
    await handle.signal(endSignal, {});
  });

  it('turns a refresh the token endpoint refuses into an infra error that names the server and holds no token', async () => {
    const frank = await oauthCredential('frank', 'frank', {
      client_secret: `cs_wrong_${crypto.randomBytes(8).toString('hex')}`,
    });
    const handle = await startSession(h, { agent: trackerAgent('frank') });
    expect((await callTool(h, handle, 'mcp__tracker__whoami', {})).isError).toBe(false);
    tracker.expire(frank.accessToken);
    const result = await callTool(h, handle, 'mcp__tracker__create_issue', { title: 'never' });
    expect(result).toMatchObject({ isError: true, error: { kind: 'infra' } });
    expect(result.output).toBe(
      'McpError.Credential: MCP server tracker: token endpoint for vault:tracker-oauth refused the refresh (HTTP 401 invalid_client)',
    );
    expect(JSON.parse(await vault.get('frank', 'tracker-oauth')).access_token).toBe(frank.accessToken);
    const stored = JSON.parse(await vault.get('frank', 'tracker-oauth')) as { client_secret: string };
    await expectNoSecrets(handle, [stored.client_secret]);
    await handle.signal(endSignal, {});
  });

  it("keeps another user's session from using the first user's credential", async () => {
    const owner = await oauthCredential('owner', 'owner');
    const issuesBefore = tracker.issues.length;

    // Bob's vault lacks the credential: the server's tools are not offered, and the log says why.
    const bob = await startSession(h, { agent: trackerAgent('bob') });
    const bobResult = await callToolPastErrors(bob, 'mcp__tracker__create_issue', { title: 'as owner?' });
    expect(bobResult).toMatchObject({ isError: true, output: 'unknown tool: mcp__tracker__create_issue' });
    const bobErrors = mcpErrors(await allEvents(bob));
    expect(bobErrors).toHaveLength(1);
    expect(bobErrors[0]).toMatch(
      /^MCP server tracker: credential vault:tracker-oauth is not available in vault bob: no secret tracker-oauth in vault bob \(its tools are not offered in this run\)$/,
    );
    expect(offeredTools(bob.workflowId)).toEqual(['session_events']);

    // Mallory's vault holds a credential of its own, which the server refuses.
    const mallory = `at_mallory_${crypto.randomBytes(8).toString('hex')}`;
    await vault.put('mallory', 'tracker-oauth', mallory);
    const mal = await startSession(h, { agent: trackerAgent('mallory') });
    expect(await callToolPastErrors(mal, 'mcp__tracker__create_issue', { title: 'as owner?' })).toMatchObject({
      isError: true,
      output: 'unknown tool: mcp__tracker__create_issue',
    });
    const malErrors = mcpErrors(await allEvents(mal));
    expect(malErrors).toHaveLength(1);
    expect(malErrors[0]).toMatch(/^MCP server tracker: the server refused the credential \(HTTP 401\): /);

    expect(tracker.issues.length).toBe(issuesBefore);
    expect(tracker.requests.some((r) => r.user === 'owner')).toBe(false);
    await expectNoSecrets(bob, [owner.accessToken, mallory]);
    await expectNoSecrets(mal, [owner.accessToken, mallory]);
    await bob.signal(endSignal, {});
    await mal.signal(endSignal, {});
  });

  it('connects to no MCP server before the model is called, and accepts a static bearer token', async () => {
    const erin = tracker.issue('erin');
    secrets.push(erin.accessToken, erin.refreshToken);
    await vault.put('erin', 'tracker-static', erin.accessToken);
    const requestsBefore = tracker.requests.length;

    const handle = await startSession(h, { agent: trackerAgent('erin', 'vault:tracker-static') });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'session_started'));
    await new Promise((r) => setTimeout(r, 1500));
    expect(tracker.requests.length).toBe(requestsBefore);
    expect(h.mock.requests(handle.workflowId)).toHaveLength(0);

    expect(await callTool(h, handle, 'mcp__tracker__whoami', {})).toMatchObject({
      isError: false,
      output: 'you are erin\nyour token is ***',
    });
    expect(tracker.requests.slice(requestsBefore).every((r) => r.user === 'erin')).toBe(true);
    expect(await vault.get('erin', 'tracker-static')).toBe(erin.accessToken);
    await expectNoSecrets(handle);
    await handle.signal(endSignal, {});
  });

  it('runs a stdio MCP server on the tools worker with the token in its environment', async () => {
    const token = `stdio_${crypto.randomBytes(16).toString('hex')}`;
    secrets.push(token);
    await vault.put('gina', 'local-token', token);
    const handle = await startSession(h, {
      agent: {
        vault: 'gina',
        tools: [],
        mcpServers: {
          local: {
            transport: 'stdio',
            command: process.execPath,
            args: [stdio.script],
            env: {
              NODE_PATH: stdio.nodePath,
              EXPECTED_TOKEN_SHA256: crypto.createHash('sha256').update(token).digest('hex'),
            },
            credential: 'vault:local-token',
          },
        },
      },
    });
    const who = await callTool(h, handle, 'mcp__local__whoami', {});
    expect(who).toMatchObject({
      isError: false,
      output: expect.stringMatching(/^authorized with \*\*\* \(pid \d+, instance [0-9a-f]+\)$/),
    });
    expect(offeredTools(handle.workflowId).sort()).toEqual(['mcp__local__add', 'mcp__local__whoami']);
    expect(await callTool(h, handle, 'mcp__local__add', { a: 2, b: 3 })).toMatchObject({ isError: false, output: '5' });
    // The process is kept for the session: a second call reaches the same one.
    const again = await callTool(h, handle, 'mcp__local__whoami', {});
    expect(again.output).toBe(who.output);

    // A server process that dies is started again on the next call. Its pid is its jail's, so it is found
    // on the host by its command line.
    const running = processesRunning(stdio.script);
    expect(running.length).toBeGreaterThan(0);
    // Killing the jail's outer process takes the inner one with it (--die-with-parent): one already gone is fine.
    for (const pid of running) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
    const revived = await callTool(h, handle, 'mcp__local__whoami', {});
    expect(revived).toMatchObject({
      isError: false,
      output: expect.stringMatching(/^authorized with \*\*\* \(pid \d+, instance [0-9a-f]+\)$/),
    });
    expect(revived.output).not.toBe(who.output);
    await expectNoSecrets(handle);
    await handle.signal(endSignal, {});
  });
});

describe('MCP servers in the agent file', () => {
  const parse = (mcpServers: unknown) => AgentSchema.safeParse({ model: 'm', mcpServers });

  it('takes http and stdio servers with vault references, and refuses secrets written into the file', () => {
    expect(
      parse({
        tracker: { transport: 'http', url: 'https://mcp.example/mcp', credential: 'vault:tracker-oauth' },
        local: { transport: 'stdio', command: 'node', args: ['s.js'] },
      }).success,
    ).toBe(true);
    const problems = (servers: unknown) => {
      const r = parse(servers);
      return r.success ? '' : formatIssues(r.error);
    };
    expect(
      problems({ t: { transport: 'http', url: 'https://mcp.example/mcp', headers: { Authorization: 'Bearer x' } } }),
    ).toMatch(/credentials go in credential: vault:<name>/);
    expect(problems({ t: { transport: 'http', url: 'https://mcp.example/mcp', credential: 'sk-live-123' } })).toMatch(
      /references of the form vault:<name>/,
    );
    expect(problems({ t: { transport: 'http', url: 'https://user:pw@mcp.example/mcp' } })).toMatch(
      /must not carry credentials/,
    );
    expect(problems({ t: { transport: 'stdio', command: 'node', env: { MCP_ACCESS_TOKEN: 'x' } } })).toMatch(
      /MCP_ACCESS_TOKEN is set from credential/,
    );
    expect(problems({ a__b: { transport: 'stdio', command: 'node' } })).toMatch(
      /^mcpServers\.a__b: MCP server names are 1-40 letters, digits, _ or -, without __$/,
    );
    expect(problems({ t: { transport: 'ws', url: 'ws://x' } })).not.toBe('');
  });

  it('names every tool within the API limit and keeps names unique', () => {
    expect(mcpToolName('tracker', 'create_issue')).toBe('mcp__tracker__create_issue');
    const odd = mcpToolName('tracker', 'issues.create/v2');
    expect(odd).toMatch(/^mcp__tracker__issues_create_v2_[0-9a-z]{7}$/);
    const long = mcpToolName('s'.repeat(40), 'x'.repeat(300));
    expect(long).toMatch(/^[a-zA-Z0-9_-]{1,128}$/);
    expect(long).toHaveLength(128);
    const taken = new Set(['mcp__tracker__a_b']);
    expect(mcpToolName('tracker', 'a.b', taken)).not.toBe('mcp__tracker__a_b');
    expect(mcpToolName('tracker', 'a_b', taken)).toMatch(/^mcp__tracker__a_b_[0-9a-z]{7}$/);
  });
});
