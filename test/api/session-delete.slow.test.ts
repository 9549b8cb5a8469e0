// sessions.delete is permanent: after a session with a repository resource has run a few turns and handed over
// (so its log has sealed archive segments), a delete leaves nothing of it in any PostgreSQL table, in Temporal or
// on disk, and its id is a 404 on every route. A delete cut short after its first step is finished by a retry,
// and by the next API process to start. The purge also takes the child sessions (sub-agents) a session started.
import Anthropic from '@anthropic-ai/sdk';
import { WorkflowNotFoundError } from '@temporalio/client';
import fs from 'node:fs';
import path from 'node:path';
import { startApiServer } from '../../src/api/server';
import { loadConfig } from '../../src/config';
import { vaultPublicKey } from '../../src/vault/sealed';
import { startApiOn, testSessionDeps, type TestApi } from '../helpers/api';
import { TEST_CODEC_KEY } from '../helpers/test-keys';
import { BlobStore } from '../../src/storage/blobs';
import { createDataConverter } from '../../src/codec';
import { saveSessionOutput } from '../../src/storage/repos/files-repo';
import { purgeSession } from '../../src/session-purge';
import { childSessionId } from '../../src/workflows/subagents';
import { runsOf, startHarness, startSession, testArchive, waitForEvents, type Harness } from '../helpers/env';
import { resultOf, spawn, turn as scriptedTurn } from '../helpers/subagents';

const TOKEN = `ghp_delete_${process.pid}_token`;
let h: Harness;
let api: TestApi;
let client: Anthropic;
let agentId: string;
let envId: string;

beforeAll(async () => {
  // The dev server suggests continue-as-new after 40 history events, so a session hands over every few turns.
  h = await startHarness({ serverArgs: ['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=40'] });
  api = await startApiOn(h);
  client = await api.client();
  agentId = (await client.beta.agents.create({ name: 'chat', model: 'claude-test' })).id;
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

async function newSession(title: string) {
  return client.beta.sessions.create({
    agent: agentId,
    environment_id: envId,
    title,
    metadata: { team: 'infra' },
    resources: [
      {
        type: 'github_repository',
        url: 'https://git.example.com/team/app.git',
        authorization_token: TOKEN,
        checkout: { type: 'branch', name: 'main' },
      },
    ],
  });
}

/** Sends one message through the API and waits for its reply: the session's `n`th. */
async function turn(id: string, text: string, n: number): Promise<void> {
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  await waitForEvents(
    h.env.client.workflow.getHandle(id),
    (events) => events.filter((e) => e.type === 'assistant_message' && e.stopReason !== 'tool_use').length >= n,
  );
}

/** Rows of every table in the API's database whose text mentions `needle`, as `table: count`. */
async function rowsMentioning(needle: string): Promise<Record<string, number>> {
  const tables = await api.db!.query<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'",
  );
  expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['sessions', 'session_resources']));
  const found: Record<string, number> = {};
  for (const { table_name } of tables) {
    // The audit trail records who created and deleted the session, by id only (checked below).
    if (table_name === 'audit_log') continue;
    // The webhook outbox reports that the session was created and deleted, by id only (checked below).
    if (table_name === 'webhook_events') continue;
    const [{ n }] = await api.db!.query<{ n: number }>(
      `select count(*)::int as n from "${table_name}" t where strpos(t::text, $1) > 0`,
      [needle],
    );
    if (n > 0) found[table_name] = n;
  }
  return found;
}

/** Files under `dirs` whose path or content mentions `needle`. */
function filesMentioning(dirs: string[], needle: string): string[] {
  const hits: string[] = [];
  const walk = (p: string) => {
    let st;
    try {
      st = fs.lstatSync(p);
    } catch {
      return;
    }
    if (p.includes(needle)) hits.push(p);
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
    else if (st.isFile() && fs.readFileSync(p).includes(needle)) hits.push(p);
  };
  dirs.forEach(walk);
  return [...new Set(hits)];
}

const dataDirs = () => [loadConfig().dataDir, api.dataDir];

/** Waits until Temporal reports no execution of `id` (its delete runs asynchronously on the server). */
async function untilGoneFromTemporal(id: string): Promise<void> {
  for (;;) {
    const runs = await runsOf(h.env.client, id);
    const described = await h.env.client.workflow
      .getHandle(id)
      .describe()
      .then(
        () => true,
        (e: unknown) => {
          if (e instanceof WorkflowNotFoundError) return false;
          throw e;
        },
      );
    if (runs.length === 0 && !described) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Everything of `id` that must be gone, found or not: rows, Temporal runs, archive segments, files. */
async function remains(id: string) {
  return {
    rows: await rowsMentioning(id),
    runs: (await runsOf(h.env.client, id)).length,
    segments: (await testArchive().segments(id)).length,
    files: filesMentioning(dataDirs(), id),
  };
}

it('deletes a session that handed over with sealed segments: nothing of it is left in PostgreSQL, Temporal or on disk', async () => {
  const s = await newSession('to delete');
  for (let i = 0; ; i++) {
    await turn(s.id, `turn ${i}`, i + 1);
    const handedOver = (await runsOf(h.env.client, s.id)).some((r) => r.status.name === 'CONTINUED_AS_NEW');
    if (i >= 2 && handedOver && (await testArchive().segments(s.id)).length > 0) break;
  }
  // An output the session left, as the hands host stores it: a file scoped to the session, and its blob.
  const blobs = new BlobStore(api.db!, createDataConverter(TEST_CODEC_KEY));
  const [{ workspace_id }] = await api.db!.query<{ workspace_id: string }>(
    'select workspace_id from sessions where id = $1',
    [s.id],
  );
  const output = await saveSessionOutput(api.db!, blobs, {
    workspaceId: workspace_id,
    sessionId: s.id,
    relativePath: 'report.txt',
    content: Buffer.from('made by the session'),
  });
  // What the delete has to remove is there to begin with.
  const before = await remains(s.id);
  expect(before.rows).toEqual({ sessions: 1, session_resources: 1, files: 1 });
  expect(before.runs).toBeGreaterThanOrEqual(2);
  expect(before.segments).toBeGreaterThan(0);
  expect(before.files.some((f) => f.includes(path.join('archive', s.id)))).toBe(true);

  expect(await client.beta.sessions.delete(s.id)).toEqual({ id: s.id, type: 'session_deleted' });

  // A 404 on every route, at once.
  const NotFound = Anthropic.NotFoundError;
  await expect(client.beta.sessions.retrieve(s.id)).rejects.toBeInstanceOf(NotFound);
  await expect(client.beta.sessions.update(s.id, { title: 'x' })).rejects.toBeInstanceOf(NotFound);
  await expect(client.beta.sessions.events.list(s.id)).rejects.toBeInstanceOf(NotFound);
  await expect(
    client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    }),
  ).rejects.toBeInstanceOf(NotFound);
  await expect(client.beta.sessions.events.stream(s.id)).rejects.toBeInstanceOf(NotFound);
  await expect(client.beta.sessions.resources.list(s.id)).rejects.toBeInstanceOf(NotFound);
  await expect(client.beta.sessions.archive(s.id)).rejects.toBeInstanceOf(NotFound);
  await expect(client.beta.sessions.delete(s.id)).rejects.toBeInstanceOf(NotFound);
  const listed = [];
  for await (const x of client.beta.sessions.list({ include_archived: true })) listed.push(x.id);
  expect(listed).not.toContain(s.id);

  await untilGoneFromTemporal(s.id);
  expect(await remains(s.id)).toEqual({ rows: {}, runs: 0, segments: 0, files: [] });
  await expect(client.beta.files.retrieveMetadata(output.id)).rejects.toBeInstanceOf(NotFound);
  expect(await blobs.stat(output.blob_id!)).toBeUndefined();
  // The repository token was only ever stored sealed, and the sealed box went with its row.
  expect(await rowsMentioning(TOKEN)).toEqual({});
  // What the audit trail keeps of it: that it was created and deleted, by id alone.
  const audit = await api.db!.query<{ action: string; resource_type: string }>(
    'select action, resource_type from audit_log where resource_id = $1 or parent_id = $1 order by seq',
    [s.id],
  );
  expect(audit.filter((a) => a.resource_type === 'session' && a.action !== 'events_sent').map((a) => a.action)).toEqual(
    ['created', 'deleted'],
  );
  // What the webhook outbox keeps of it: session events naming it by id, with nothing else of it.
  const events = await api.db!.query<{ type: string; payload: { data: Record<string, unknown> } }>(
    'select type, payload from webhook_events where strpos(payload::text, $1) > 0 order by pos',
    [s.id],
  );
  expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['session.created', 'session.deleted']));
  for (const e of events) {
    expect(e.type).toMatch(/^session\./);
    expect(Object.keys(e.payload.data).sort()).toEqual(['id', 'organization_id', 'type', 'workspace_id']);
  }
});

it('finishes a delete cut short after its first step: by a retried delete, and by the next API process to start', async () => {
  const retried = await newSession('retried');
  const resumed = await newSession('resumed');
  for (const s of [retried, resumed]) await turn(s.id, 'hello', 1);
  // As a process that died right after marking the rows leaves them: each id already a 404, nothing else removed.
  await api.db!.query('update sessions set deleted_at = now() where id = any($1)', [[retried.id, resumed.id]]);
  await expect(client.beta.sessions.retrieve(retried.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  expect((await remains(resumed.id)).runs).toBe(1);

  // The SDK's retry of the delete finds the marked row and finishes the job.
  expect(await client.beta.sessions.delete(retried.id)).toEqual({ id: retried.id, type: 'session_deleted' });
  await untilGoneFromTemporal(retried.id);
  expect(await remains(retried.id)).toEqual({ rows: {}, runs: 0, segments: 0, files: [] });

  // Another API process on the same database finishes the other at start, unasked.
  const env = {
    DATA_DIR: api.dataDir,
    KEY_FILES: 'off',
    CODEC_KEY: TEST_CODEC_KEY,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    VAULT_PUBLIC_KEY: await vaultPublicKey(api.vaultKey),
    API_LISTEN: '127.0.0.1:0',
    DATABASE_URL: api.databaseUrl!,
  };
  const second = await startApiServer(loadConfig(env), () => undefined, undefined, testSessionDeps(h.env.client));
  try {
    for (;;) {
      const rows = await rowsMentioning(resumed.id);
      if (Object.keys(rows).length === 0) break;
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await second.stop();
  }
  await untilGoneFromTemporal(resumed.id);
  expect(await remains(resumed.id)).toEqual({ rows: {}, runs: 0, segments: 0, files: [] });
});

it("purges the child sessions a session started: their runs and sealed logs go with the parent's", async () => {
  const parent = await startSession(h, { agent: { tools: ['spawn_agent'], sandboxes: {} } });
  const events = await scriptedTurn(h, parent, [spawn('toolu_kid', { task: 'count the files' })]);
  expect(resultOf(events, 'toolu_kid')).toMatchObject({ isError: false });
  const kid = childSessionId(parent.workflowId, 'toolu_kid');
  // The child answered and ended, so its log is sealed.
  expect((await runsOf(h.env.client, kid)).length).toBe(1);
  expect((await testArchive().segments(kid)).length).toBeGreaterThan(0);

  await purgeSession(h.env.client, testArchive(), parent.workflowId);
  for (const id of [parent.workflowId, kid]) {
    await untilGoneFromTemporal(id);
    expect(await testArchive().segments(id)).toEqual([]);
    expect(filesMentioning([loadConfig().dataDir], id)).toEqual([]);
  }
});
