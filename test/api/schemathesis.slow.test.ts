// Schemathesis, from the API's own OpenAPI document, over every route of a real API server on PostgreSQL whose
// sessions run on a test Temporal: hostile bodies, query strings and auth headers, huge and malformed cursors, and
// another workspace's ids. No response is a 5xx or slower than the limit, another workspace's ids are never
// answered with its data, and afterwards every stored row is one a 2xx create returned and the other workspace's
// rows are as they were.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, ROOT, type Harness } from '../helpers/env';
import { ensureSchemathesis, runSchemathesis, SCHEMATHESIS_VERSION } from '../helpers/schemathesis';

jest.setTimeout(15 * 60_000);

const BETA = 'managed-agents-2026-04-01';
// Tables a request can add to, and the columns that change when one is updated, archived or deleted.
const TABLES: Record<string, string> = {
  agents: 'id, version, updated_at, archived_at',
  environments: 'id, updated_at, archived_at',
  vaults: 'id, updated_at, archived_at',
  credentials: 'id, updated_at, archived_at',
  sessions: 'id, updated_at, archived_at, deleted_at',
  session_resources: 'id, session_id, updated_at',
};

interface Seeded {
  agent_id: string[];
  environment_id: string[];
  vault_id: string[];
  credential_id: string[];
  session_id: string[];
  resource_id: string[];
}

/** One of each resource, with a repository resource on the session. */
async function seed(client: Anthropic, tag: string, copies: number): Promise<Seeded> {
  const s: Seeded = {
    agent_id: [],
    environment_id: [],
    vault_id: [],
    credential_id: [],
    session_id: [],
    resource_id: [],
  };
  for (let i = 0; i < copies; i++) {
    const agent = await client.beta.agents.create({
      name: `${tag}-${i}`,
      model: 'claude-haiku-5-5',
      metadata: { tag },
    });
    const env = await client.beta.environments.create({ name: `${tag}-${i}` });
    const vault = await client.beta.vaults.create({ display_name: `${tag}-${i}` });
    const cred = await client.beta.vaults.credentials.create(vault.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'https://mcp.example.com/mcp', token: `${tag}-token` },
    });
    const session = await client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
      title: tag,
      resources: [
        { type: 'github_repository', url: 'https://github.com/example/repo', authorization_token: `${tag}-gh` },
      ],
    });
    const resources = await client.beta.sessions.resources.list(session.id);
    s.agent_id.push(agent.id);
    s.environment_id.push(env.id);
    s.vault_id.push(vault.id);
    s.credential_id.push(cred.id);
    s.session_id.push(session.id);
    s.resource_id.push(...resources.data.flatMap((r) => ('id' in r ? [r.id] : [])));
  }
  return s;
}

async function rows(api: TestApi, workspace: string): Promise<Record<string, Record<string, unknown>[]>> {
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const [table, cols] of Object.entries(TABLES))
    out[table] = await api.db!.query(`select ${cols} from ${table} where workspace_id = $1 order by id`, [workspace]);
  return out;
}

let h: Harness;
let api: TestApi;
let work: string;
let python: string;
beforeAll(async () => {
  // Installed first (about 20 s on a fresh machine), before anything that would need stopping if it failed.
  python = await ensureSchemathesis((m) => process.stderr.write(`${m}\n`));
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-schemathesis-'));
  h = await startHarness();
  api = await startApiOn(h, ['default', 'other']);
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

it('finds no 5xx, hang or cross-workspace read on any route, and refused requests store nothing', async () => {
  const mine = await seed(await api.client(), 'mine', 1);
  // What deletes and archives act on, so the ones above stay usable for every other operation.
  const doomed = await seed(await api.client(), 'doomed', 1);
  const theirs = await seed(await api.client('other'), 'theirs', 1);
  const foreignIds = Object.values(theirs).flat();
  const theirsBefore = await rows(api, 'other');

  // Each path parameter and body reference is drawn from the key's own ids and the other workspace's half the
  // time; otherwise schemathesis makes one up (malformed, huge, or simply unknown).
  const names = Object.keys(mine) as (keyof Seeded)[];
  const dictionaries = names.flatMap((name) => [
    `[dictionaries.${name}]\nvalues = ${JSON.stringify([...mine[name], ...theirs[name]])}\n`,
    `[dictionaries.doomed_${name}]\nvalues = ${JSON.stringify([...doomed[name], ...theirs[name]])}\n`,
  ]);
  const bindings = names.map((name) => `"path.${name}" = { dictionary = "${name}", probability = 0.8 }`);
  const doomedBindings = names.map((name) => `"path.${name}" = { dictionary = "doomed_${name}", probability = 0.8 }`);
  bindings.push(
    '"body.agent" = { dictionary = "agent_id", probability = 0.5 }',
    '"body.environment_id" = { dictionary = "environment_id", probability = 0.5 }',
    '"body.vault_ids[*]" = { dictionary = "vault_id", probability = 0.5 }',
  );
  const record = path.join(work, 'responses.jsonl');
  const report = path.join(work, 'report.json');
  const config = [
    `hooks = ${JSON.stringify(path.join(ROOT, 'test/api/schemathesis/hooks.py'))}`,
    // One worker: Hypothesis describes its filters with ast.parse, which CPython 3.11 cannot run in two threads at once.
    'workers = 1',
    'seed = 31',
    'request-timeout = 20',
    'max-stream-events = 3',
    '[headers]',
    `anthropic-beta = "${BETA}"`,
    '[auth.openapi.apiKey]',
    `api_key = "${await api.key()}"`,
    '[generation]',
    'max-examples = 12',
    '[checks]',
    'enabled = false',
    'not_a_server_error.enabled = true',
    'max_response_time = 10',
    'ignored_auth.enabled = true',
    'use_after_free.enabled = true',
    'ensure_resource_availability.enabled = true',
    'no_cross_workspace_read.enabled = true',
    'RecordResponses.enabled = true',
    '[parameters]',
    ...bindings,
    ...dictionaries,
    // A stream stays open while the session lives: read what comes in 2 s, then move on.
    '[[operations]]',
    'include-operation-id = ["streamSessionEvents", "streamSessionPreviews"]',
    'request-timeout = 2',
    '[[operations]]',
    'include-operation-id-regex = "^(delete|archive)"',
    '[operations.parameters]',
    ...doomedBindings,
  ].join('\n');
  fs.writeFileSync(path.join(work, 'schemathesis.toml'), config);

  const started = Date.now();
  const st = await runSchemathesis(
    python,
    [
      '--config-file',
      path.join(work, 'schemathesis.toml'),
      'run',
      `${api.url}/v1/openapi.json`,
      '--report',
      'json',
      '--report-json-path',
      report,
    ],
    { FUZZ_FOREIGN_IDS: JSON.stringify(foreignIds), FUZZ_RECORD: record },
    work,
  );
  const seconds = (Date.now() - started) / 1000;
  const figures = JSON.parse(fs.readFileSync(report, 'utf8')) as {
    operations: { tested: number };
    test_cases: { generated: number; with_failures: number };
  };
  process.stderr.write(
    `operations tested: ${figures.operations.tested}, cases: ${figures.test_cases.generated}, with failures: ${figures.test_cases.with_failures}\n`,
  );
  // Schemathesis closes its summary as pytest closes a run (`==== 2 warnings in 113.08s ====`, `No issues found in
  // 35.12s`), which a log reader takes for a test run's closing line counting no test. The summary is printed
  // indented, without the banners, and with that line reworded.
  const summary = st.stdout
    .slice(st.stdout.indexOf('SUMMARY'))
    .replace(/^=+ (.*?) =+$/gm, '$1')
    .replace(/^(SUMMARY) =+$/m, '$1')
    .replace(/^(.*\S) in (\d+(?:\.\d+)?)s$/gm, 'result: $1 (after $2 seconds)')
    .replace(/^(?=.)/gm, '  ');
  process.stderr.write(`schemathesis ${SCHEMATHESIS_VERSION} in ${seconds.toFixed(0)} s:\n${summary}\n`);
  expect({ code: st.code, out: st.code === 0 ? '' : st.stdout.slice(-20_000) + st.stderr.slice(-5000) }).toEqual({
    code: 0,
    out: '',
  });

  // Every route was reached, and every row in the key's workspace came from the seed or a 2xx create.
  const responses = fs
    .readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { method: string; path: string; status: number; id: string | null; foreign: boolean });
  expect(responses.filter((r) => r.status >= 500)).toEqual([]);
  const foreign = responses.filter((r) => r.foreign);
  const statuses = (rs: typeof responses) =>
    Object.entries(rs.reduce<Record<number, number>>((m, r) => ({ ...m, [r.status]: (m[r.status] ?? 0) + 1 }), {}))
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ');
  process.stderr.write(
    `${responses.length} responses (${statuses(responses)}); ${foreign.length} named another workspace's id in the path (${statuses(foreign)})\n`,
  );
  expect(foreign.length).toBeGreaterThan(0);
  expect(foreign.filter((r) => r.status < 400)).toEqual([]);
  const created = new Set(responses.filter((r) => r.status < 300 && r.method === 'POST' && r.id).map((r) => r.id!));
  const seededIds = new Set([...Object.values(mine), ...Object.values(doomed)].flat());
  const known = (id: unknown) => seededIds.has(String(id)) || created.has(String(id));
  const stored = await rows(api, 'default');
  // A repository resource is made by the session create that names it, whose response carries the session's id.
  const strays = Object.entries(stored).flatMap(([table, rs]) =>
    rs
      .filter((r) => !known(table === 'session_resources' ? r.session_id : r.id))
      .map((r) => `${table} ${String(r.id)}`),
  );
  expect(strays).toEqual([]);
  // Nothing in the other workspace was changed, archived or deleted.
  expect(await rows(api, 'other')).toEqual(theirsBefore);
});
