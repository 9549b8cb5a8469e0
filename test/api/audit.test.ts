// The audit trail on PostgreSQL: a series of SDK calls leaves one record per change (which key, which workspace,
// what, when), refused requests leave none, no record holds a secret, and `agents audit` shows them to the operator.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { listAudit, type AuditRecord } from '../../src/api/audit';
import { createApiKey } from '../../src/api/workspace-keys';
import { startApiOn, type TestApi } from '../helpers/api';
import { runAgents } from '../helpers/cli';
import { startHarness, type Harness } from '../helpers/env';

const TOKEN = 'audit-secret-token-3f9c1e';

let h: Harness;
let api: TestApi;
let dataDir: string;

beforeAll(async () => {
  h = await startHarness();
  api = await startApiOn(h, ['team-a', 'team-b']);
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-audit-'));
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const cli = (args: string[]) =>
  runAgents(h.env.address, args, { DATABASE_URL: api.databaseUrl!, DATA_DIR: dataDir, KEY_FILES: 'off' });

it('records who created, updated, archived and deleted what, for every resource, and never a secret', async () => {
  const { key, id: keyId, workspace_id } = await createApiKey(api.db!, 'team-a');
  const client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });

  const agent = await client.beta.agents.create({ name: 'audited', model: 'claude-test' });
  await client.beta.agents.update(agent.id, { version: agent.version, system: 'Be brief.' });
  const env = await client.beta.environments.create({ name: 'audit-env' });
  await client.beta.environments.update(env.id, { description: 'd' });
  const vault = await client.beta.vaults.create({ display_name: 'v' });
  const cred = await client.beta.vaults.credentials.create(vault.id, {
    auth: { type: 'static_bearer', mcp_server_url: 'https://mcp.example.com/mcp', token: TOKEN },
  });
  await client.beta.vaults.credentials.update(cred.id, {
    vault_id: vault.id,
    auth: { type: 'static_bearer', token: `${TOKEN}-2` },
  });
  await client.beta.vaults.credentials.archive(cred.id, { vault_id: vault.id });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, title: 'audited' });
  await client.beta.sessions.update(session.id, { title: 'renamed' });
  await client.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
  await client.beta.sessions.archive(session.id);
  await client.beta.sessions.delete(session.id);
  await client.beta.agents.archive(agent.id);
  await client.beta.vaults.delete(vault.id);
  // Refused requests change nothing and leave no record.
  await expect(client.beta.agents.update(agent.id, { version: agent.version, system: 'x' })).rejects.toBeInstanceOf(
    Anthropic.APIError,
  );
  await expect(client.beta.environments.create({ name: 'audit-env' })).rejects.toBeInstanceOf(Anthropic.APIError);
  // Another workspace's changes are its own.
  const other = new Anthropic({ apiKey: await api.key('team-b'), baseURL: api.url, maxRetries: 0 });
  await other.beta.agents.create({ name: 'elsewhere', model: 'claude-test' });

  const records = await listAudit(api.db!, { workspace: 'team-a', limit: 100 });
  const what = (r: AuditRecord) => [r.action, r.resource_type, r.resource_id, r.parent_id];
  expect(records.map(what)).toEqual([
    ['created', 'api_key', keyId, null],
    ['created', 'agent', agent.id, null],
    ['updated', 'agent', agent.id, null],
    ['created', 'environment', env.id, null],
    ['updated', 'environment', env.id, null],
    ['created', 'vault', vault.id, null],
    ['created', 'credential', cred.id, vault.id],
    ['updated', 'credential', cred.id, vault.id],
    ['archived', 'credential', cred.id, vault.id],
    ['created', 'session', session.id, null],
    ['updated', 'session', session.id, null],
    ['events_sent', 'session', session.id, null],
    ['archived', 'session', session.id, null],
    ['deleted', 'session', session.id, null],
    ['archived', 'agent', agent.id, null],
    ['deleted', 'vault', vault.id, null],
  ]);
  for (const r of records) {
    expect(r).toMatchObject({ workspace: 'team-a', workspace_id });
    expect(r.api_key_id).toBe(r.resource_type === 'api_key' ? null : keyId);
    expect(r.request_id === null || r.request_id.startsWith('req_')).toBe(true);
    expect(Number.isNaN(Date.parse(r.at))).toBe(false);
  }
  const all = JSON.stringify(await api.db!.query('select * from audit_log'));
  expect(all).not.toContain(TOKEN);
  expect(all).not.toContain(key);
  expect((await listAudit(api.db!, { workspace: 'team-b', limit: 100 })).map((r) => r.resource_type)).toEqual([
    'api_key',
    'agent',
  ]);
});

it('shows the trail with agents audit: tab-separated lines, or one JSON object per line with --json, per workspace and limited', async () => {
  const json = await cli(['audit', '--workspace', 'team-a', '--json']);
  expect(json.code).toBe(0);
  const lines = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditRecord);
  expect(lines).toEqual(await listAudit(api.db!, { workspace: 'team-a', limit: 100 }));
  expect(lines.every((l) => l.workspace === 'team-a')).toBe(true);

  const two = await cli(['audit', '--workspace', 'team-a', '--limit', '2']);
  expect(two.code).toBe(0);
  const rows = two.stdout.trim().split('\n');
  expect(rows).toHaveLength(2);
  expect(rows[1].split('\t').slice(1, 6)).toEqual([
    'team-a',
    lines[lines.length - 1].api_key_id,
    'deleted',
    'vault',
    lines[lines.length - 1].resource_id,
  ]);

  // The operator's own key commands are on the trail too, with no key id.
  const made = await cli(['api-keys', 'create', '--workspace', 'team-b', '--json']);
  const { id } = JSON.parse(made.stdout) as { id: string };
  expect((await cli(['api-keys', 'revoke', id])).code).toBe(0);
  const b = (await cli(['audit', '--workspace', 'team-b', '--json'])).stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditRecord);
  expect(b.slice(-2).map((r) => [r.action, r.resource_type, r.resource_id, r.api_key_id])).toEqual([
    ['created', 'api_key', id, null],
    ['revoked', 'api_key', id, null],
  ]);

  const bad = await cli(['audit', '--workspace', 'Not A Name']);
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toMatch(/--workspace: workspace names are/);
});
