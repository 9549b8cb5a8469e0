// Files in, files out, memory that outlives the session and a custom skill, driven only by the SDK: a CSV uploaded
// and attached, read by the agent under /mnt/session/uploads, a sum written to /mnt/session/outputs, listed by the
// session's scope and downloaded byte for byte; a memory written by one session and read by the next through the
// same store, which a read_only mount refuses to let it change; a skill whose files are in the sandbox and whose
// description is in the request's system prompt; the outputs of a session without resources, and a file added to
// it with resources.add while it runs. Real Docker sandboxes, real PostgreSQL-compatible storage.
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import {
  bashStep,
  doneStep,
  eventsUntil as sessionEventsUntil,
  idles,
  sayTo,
  toolResultTexts,
  type ApiEvent,
} from '../helpers/sdk-session';
import { startHarness, type Harness } from '../helpers/env';
import { testDataConverter } from '../helpers/test-keys';
import { createMountData } from '../../src/hands/mount-data';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;

beforeAll(async () => {
  h = await startHarness({
    role: 'all',
    hostId: `files-${process.pid}`,
    mountData: createMountData(() => api.db, testDataConverter()),
  });
  api = await startApiOn(h);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'files-env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const eventsUntil = (id: string, done: (events: ApiEvent[]) => boolean) => sessionEventsUntil(client, id, done);
const bash = bashStep;
const done = doneStep;
const results = toolResultTexts;
const say = (id: string, text: string) => sayTo(client, id, text);
const idle = idles(1);

const CSV = 'region,amount\nnorth,12\nsouth,30\neast,18\n';
const SKILL_MD = [
  '---',
  'name: csv-report',
  'description: Sums a column of a CSV file and writes a one-line report.',
  '---',
  '',
  'Run `scripts/sum.sh FILE` to print the total of the second column.',
  '',
].join('\n');
const SUM_SH = '#!/bin/sh\nawk -F, \'NR>1{s+=$2} END{printf "total %d\\n", s}\' "$1"\n';

it('reads an uploaded CSV, leaves a report to download, remembers the total for the next session and uses a skill', async () => {
  const file = await client.beta.files.upload({
    file: await toFile(Buffer.from(CSV), 'sales.csv', { type: 'text/csv' }),
  });
  expect(file).toMatchObject({ type: 'file', filename: 'sales.csv', size_bytes: CSV.length });
  const store = await client.beta.memoryStores.create({ name: 'Team notes' });
  const skill = await client.beta.skills.create({
    display_name: 'CSV report',
    files: [
      await toFile(Buffer.from(SKILL_MD), 'csv-report/SKILL.md'),
      await toFile(Buffer.from(SUM_SH), 'csv-report/scripts/sum.sh'),
    ],
  });
  const agent = await client.beta.agents.create({
    name: 'analyst',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
    skills: [{ type: 'custom', skill_id: skill.id }],
  });

  // Session 1: the file, and the store read-write with instructions.
  const first = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
    resources: [
      { type: 'file', file_id: file.id },
      { type: 'memory_store', memory_store_id: store.id, instructions: 'Keep running totals in totals.md.' },
    ],
  });
  const memoryResource = first.resources.find((r) => r.type === 'memory_store') as { mount_path: string };
  expect(memoryResource.mount_path).toBe('/mnt/memory/team-notes');
  const upload = `/mnt/session/uploads/${file.id}`;
  h.mock.script(first.id, {
    steps: [
      bash('ls /mnt/skills/csv-report /mnt/skills/csv-report/scripts && head -2 /mnt/skills/csv-report/SKILL.md'),
      bash(`sh /mnt/skills/csv-report/scripts/sum.sh ${upload} | tee /mnt/session/outputs/report.txt`),
      bash('cp /mnt/session/outputs/report.txt /mnt/memory/team-notes/totals.md && echo saved'),
      done,
    ],
  });
  await say(first.id, 'sum the sales');
  const [listed, summed, saved] = results(await eventsUntil(first.id, idle));
  expect(listed).toContain('SKILL.md');
  expect(listed).toContain('sum.sh');
  expect(listed).toContain('name: csv-report');
  expect(summed).toBe('total 60\n[exit 0]');
  expect(saved).toBe('saved\n[exit 0]');

  // The model was told what the skill is for, and how to use the store.
  const system = JSON.stringify(h.mock.requests(first.id)[0].body.system);
  expect(system).toContain('Sums a column of a CSV file and writes a one-line report.');
  expect(system).toContain('/mnt/skills/csv-report');
  expect(system).toContain('Keep running totals in totals.md.');
  expect(system).toContain('/mnt/memory/team-notes');

  // The report is a file of the session's scope, downloadable byte for byte.
  const outputs = [];
  for await (const f of client.beta.files.list({ scope_id: first.id })) outputs.push(f);
  expect(outputs).toEqual([
    expect.objectContaining({ filename: 'report.txt', scope: { type: 'session', id: first.id }, downloadable: true }),
  ]);
  const report = Buffer.from(await (await client.beta.files.download(outputs[0].id)).arrayBuffer());
  expect(report.toString()).toBe('total 60\n');

  // The memory the agent wrote is in the store, made by session 1.
  const memories = [];
  for await (const m of client.beta.memoryStores.memories.list(store.id)) memories.push(m);
  expect(memories.map((m) => (m as { path: string }).path)).toEqual(['/totals.md']);
  const versions = [];
  for await (const v of client.beta.memoryStores.memoryVersions.list(store.id)) versions.push(v);
  expect(versions[0].created_by).toEqual({ type: 'session_actor', session_id: first.id });

  // Session 2: the same store, read-only: it reads what session 1 wrote and cannot change it.
  const second = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
    resources: [{ type: 'memory_store', memory_store_id: store.id, access: 'read_only' }],
  });
  h.mock.script(second.id, {
    steps: [bash('cat /mnt/memory/team-notes/totals.md; echo changed > /mnt/memory/team-notes/totals.md'), done],
  });
  await say(second.id, 'what was the total?');
  const [read] = results(await eventsUntil(second.id, idle));
  expect(read).toContain('total 60');
  expect(read).toMatch(/Permission denied|Read-only file system/);
  const after = [];
  for await (const v of client.beta.memoryStores.memoryVersions.list(store.id)) after.push(v);
  expect(after).toHaveLength(versions.length);
});

it('gives a session without resources its outputs, and mounts a file added while it runs before its next tool call', async () => {
  const agent = await client.beta.agents.create({
    name: 'reader',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  const later = await client.beta.files.upload({
    file: await toFile(Buffer.from('north,12\nsouth,30\n'), 'later.csv', { type: 'text/csv' }),
  });
  h.mock.script(s.id, {
    steps: [
      bash('ls -A /mnt/session && echo hello > /mnt/session/outputs/hello.txt && echo wrote'),
      done,
      bash(`cat /mnt/session/uploads/${later.id}`),
      { reply: { content: [{ type: 'tool_use', name: 'read', input: { file_path: '/workspace/data/later.csv' } }] } },
      done,
    ],
  });
  await say(s.id, 'anything there?');
  expect(results(await eventsUntil(s.id, idles(1)))).toEqual(['outputs\nwrote\n[exit 0]']);
  const outputs = [];
  for await (const f of client.beta.files.list({ scope_id: s.id })) outputs.push(f);
  expect(outputs.map((f) => f.filename)).toEqual(['hello.txt']);
  expect(Buffer.from(await (await client.beta.files.download(outputs[0].id)).arrayBuffer()).toString()).toBe('hello\n');

  // The sandbox is running; the file comes in at its default path and at a mount_path of its own.
  await client.beta.sessions.resources.add(s.id, { type: 'file', file_id: later.id });
  await client.beta.sessions.resources.add(s.id, {
    type: 'file',
    file_id: later.id,
    mount_path: '/workspace/data/later.csv',
  });
  await say(s.id, 'and now?');
  const [viaBash, viaRead] = results(await eventsUntil(s.id, idles(2))).slice(1);
  expect(viaBash).toBe('north,12\nsouth,30\n[exit 0]');
  expect(viaRead).toBe('north,12\nsouth,30\n');
});
