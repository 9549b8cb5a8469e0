// The web console's files and memory in headless Chromium, on a real API server, Temporal dev server, worker (every
// role, so bash runs in a Docker sandbox) and the scripted local model: files picked in the new-session form are
// uploaded and mounted, the session's bash reads them and leaves a report in /mnt/session/outputs, which the Outputs
// panel lists and downloads byte for byte; a memory store's memories are browsed a directory at a time and its
// versions with who made each, an API key or a session writing through its mount.
import Anthropic from '@anthropic-ai/sdk';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ensureChromium } from '../src/infra/chromium';
import { resolveDockerHost } from '../src/host/docker-host';
import { ArchivedSessionLog, LiveSessionLog } from '../src/log/session-log';
import { startTestApi, type TestApi } from './helpers/api';
import { createMountData } from '../src/hands/mount-data';
import { testDataConverter } from './helpers/test-keys';
import { startHarness, testArchive, type Harness } from './helpers/env';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 60_000;

let h: Harness;
let api: TestApi;
let client: Anthropic;
let browser: Browser;
const contexts: BrowserContext[] = [];
const requested: string[] = [];

beforeAll(async () => {
  if (!(await resolveDockerHost())) throw new Error('no Docker engine: run npm run setup');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  // The hands host reads the sessions' mounts from the API's database, as a worker beside the API does.
  h = await startHarness({
    role: 'all',
    hostId: `console-files-test-${process.pid}`,
    mountData: createMountData(() => api?.db, testDataConverter()),
  });
  try {
    api = await startTestApi('postgres', ['default'], {
      client: h.env.client,
      archive: testArchive(),
      log: new ArchivedSessionLog(testArchive(), new LiveSessionLog(h.env.client)),
    });
    browser = await chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] });
  } catch (e) {
    await api?.stop();
    await h.stop();
    throw e;
  }
  client = await api.client();
  await client.beta.environments.create({ name: 'files-env' });
  await client.beta.agents.create({
    name: 'clerk',
    model: 'claude-sonnet-4-5',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await api?.stop();
  await h?.stop();
});

/** A fresh tab (session storage is per tab), signed in with `key` on `where`. */
async function signedIn(key: string, where = '/console', viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on('request', (r) => requested.push(r.url()));
  await page.goto(`${api.url}${where}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

const bash = (command: string) => ({
  reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
});
const text = (t: string) => ({ reply: { content: [{ type: 'text' as const, text: t }] } });
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** No sideways scrolling: the page fits the window's width. */
async function fitsWidth(page: Page): Promise<void> {
  expect(
    (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number,
  ).toBeLessThanOrEqual(0);
}

/** The session of the upload test, which the outputs test goes on with. */
let reporting: { id: string; upload: string; data: Buffer } | undefined;

it('uploads the files picked in the new-session form and shows where each is mounted', async () => {
  // Every byte value, and text: what goes in must come back out unchanged.
  const data = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from('\nend of data\n')]);
  const readme = Buffer.from('Read me first.\n');
  const page = await signedIn(await api.key(), '/console/new');
  await page.getByLabel('Agent').selectOption({ label: 'clerk (v1)' });
  await page.getByLabel('Title (optional)').fill('Make a report');
  await page.getByLabel('Files (optional)').setInputFiles([
    { name: 'data.bin', mimeType: 'application/octet-stream', buffer: data },
    { name: 'readme.txt', mimeType: 'text/plain', buffer: readme },
  ]);
  const picked = page.getByRole('list', { name: 'Files to upload' });
  await picked.getByText('data.bin').waitFor();
  await picked.getByText('readme.txt').waitFor();
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/\/console\/sessions\/sesn_/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);

  // The session was created with one file resource per upload, each mounted at its default path.
  const session = await client.beta.sessions.retrieve(id);
  const mounts = session.resources.filter((r) => r.type === 'file');
  expect(mounts).toHaveLength(2);
  const names: Record<string, string> = {};
  for (const r of mounts) names[(await client.beta.files.retrieveMetadata(r.file_id)).filename] = r.file_id;
  expect(Object.keys(names).sort()).toEqual(['data.bin', 'readme.txt']);
  const upload = `/mnt/session/uploads/${names['data.bin']}`;
  expect(mounts.map((r) => r.mount_path).sort()).toEqual(
    Object.values(names)
      .map((f) => `/mnt/session/uploads/${f}`)
      .sort(),
  );
  const mounted = page.getByRole('region', { name: 'Mounted' });
  for (const r of mounts) await mounted.getByText(r.mount_path, { exact: true }).waitFor();
  await mounted.getByText('data.bin', { exact: false }).waitFor();
  const outputs = page.getByRole('region', { name: 'Outputs' });
  await outputs.getByText('None yet', { exact: false }).waitFor();
  reporting = { id, upload, data };
});

it('lists what the session leaves in /mnt/session/outputs once it is idle, and downloads it byte for byte', async () => {
  const { id, upload, data } = reporting!;
  const page = await signedIn(await api.key(), `/console/sessions/${id}`);
  const outputs = page.getByRole('region', { name: 'Outputs' });
  await outputs.getByText('None yet', { exact: false }).waitFor();
  h.mock.script(id, {
    steps: [
      bash(`sha256sum ${upload} && cp ${upload} /mnt/session/outputs/report.txt`),
      text('The report is in your outputs.'),
    ],
  });
  await send(page, 'copy the data into a report');
  await page
    .getByRole('listitem', { name: 'Agent message' })
    .filter({ hasText: 'The report is in your outputs.' })
    .waitFor();
  // The sandbox read the uploaded bytes.
  await page
    .getByRole('listitem', { name: 'Tool call bash' })
    .getByText(sha256(data), { exact: false })
    .first()
    .waitFor();

  // Listed again once the session went idle: the report, with its size.
  const row = outputs.getByRole('row').filter({ hasText: 'report.txt' });
  await row.waitFor();
  await expect(row.locator('td[data-label="Size"]').innerText()).resolves.toBe(`${data.length} B`);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    row.getByRole('button', { name: 'Download report.txt' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe('report.txt');
  const saved = await download.path();
  expect(sha256(fs.readFileSync(saved))).toBe(sha256(data));
  // The same file as the API's list scoped to the session.
  const scoped = (await client.beta.files.list({ scope_id: id })).data;
  expect(scoped.map((f) => f.filename)).toEqual(['report.txt']);
  expect(Buffer.from(await (await client.beta.files.download(scoped[0].id)).arrayBuffer())).toEqual(data);
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-session-files.png') });

  const phone = await signedIn(await api.key(), `/console/sessions/${id}`, { width: 390, height: 844 });
  await phone.getByRole('region', { name: 'Outputs' }).getByText('report.txt').waitFor();
  await fitsWidth(phone);
});

it('deletes the files it uploaded when the session cannot be created', async () => {
  const doomed = await client.beta.environments.create({ name: 'short-lived' });
  const before = (await client.beta.files.list({ limit: 100 })).data.map((f) => f.id);
  const page = await signedIn(await api.key(), '/console/new');
  await page.getByLabel('Agent').selectOption({ label: 'clerk (v1)' });
  await page.getByLabel('Environment').selectOption({ label: 'short-lived' });
  await page
    .getByLabel('Files (optional)')
    .setInputFiles([{ name: 'orphan.txt', mimeType: 'text/plain', buffer: Buffer.from('left behind?') }]);
  // Archived after the form listed it: the upload succeeds, then the create is refused.
  await client.beta.environments.archive(doomed.id);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.getByRole('alert').filter({ hasText: 'archived' }).waitFor();
  expect(new URL(page.url()).pathname).toBe('/console/new');
  expect((await client.beta.files.list({ limit: 100 })).data.map((f) => f.id)).toEqual(before);
});

it("browses a memory store's memories a directory at a time, and its versions with who made each", async () => {
  const store = await client.beta.memoryStores.create({
    name: 'Project memory',
    description: 'What the team decided',
  });
  const memories = client.beta.memoryStores.memories;
  await memories.create(store.id, { path: '/README.md', content: '# Project\nStart here.\n' });
  const todo = await memories.create(store.id, { path: '/notes/todo.md', content: '- ship it\n' });
  await memories.create(store.id, { path: '/notes/2026/december.md', content: 'Cold.\n' });
  await memories.update(todo.id, { memory_store_id: store.id, content: '- ship it\n- celebrate\n' });
  const old = await client.beta.memoryStores.create({ name: 'Old memory' });
  await client.beta.memoryStores.archive(old.id);

  const page = await signedIn(await api.key());
  await page.getByRole('link', { name: 'Memory stores' }).click();
  await page.getByRole('heading', { name: 'Memory stores' }).waitFor();
  const row = page.getByRole('row').filter({ hasText: 'Project memory' });
  await row.getByText('What the team decided').waitFor();
  // Archived stores only when asked for, and marked.
  expect(await page.getByRole('row').filter({ hasText: 'Old memory' }).count()).toBe(0);
  await page.getByLabel('Show archived stores').check();
  await page.getByRole('row').filter({ hasText: 'Old memory' }).getByText('archived').waitFor();
  await row.getByRole('link', { name: 'Project memory' }).click();
  await page.getByRole('heading', { name: 'Project memory' }).waitFor();

  // The top directory: one directory and one memory, the deeper ones rolled up.
  const root = page.getByRole('list', { name: 'Memories in /' });
  await root.getByRole('link', { name: 'Directory notes/' }).waitFor();
  await expect(root.getByRole('listitem').allInnerTexts()).resolves.toEqual([
    'notes/',
    expect.stringMatching(/^README\.md /),
  ]);
  await root.getByRole('link', { name: 'README.md' }).click();
  await page.getByRole('region', { name: 'Memory /README.md' }).getByText('Start here.').waitFor();

  await root.getByRole('link', { name: 'Directory notes/' }).click();
  const notes = page.getByRole('list', { name: 'Memories in /notes/' });
  await notes.getByRole('link', { name: 'Directory 2026/' }).waitFor();
  await notes.getByRole('link', { name: 'todo.md' }).click();
  const viewer = page.getByRole('region', { name: 'Memory /notes/todo.md' });
  await viewer.getByText('- celebrate', { exact: false }).waitFor();
  // The path links back up.
  await page.getByRole('navigation', { name: 'Directory' }).getByRole('link', { name: '/', exact: true }).waitFor();

  // Its history: created, then modified, each by the API key that wrote it.
  await viewer.getByRole('link', { name: 'History' }).click();
  const versions = page.locator('table.versions tbody tr');
  await versions.nth(1).waitFor();
  await expect(versions.count()).resolves.toBe(2);
  const ops = await versions.locator('td[data-label="Change"] a').allInnerTexts();
  expect(ops.sort()).toEqual(['created', 'modified']);
  for (const by of await versions.locator('td[data-label="By"]').allInnerTexts()) expect(by).toMatch(/^API key /);
  await versions.getByRole('link', { name: /^created / }).click();
  const first = page.getByRole('region', { name: /^Version memver_/ });
  await first.getByText('- ship it', { exact: false }).waitFor();
  expect(await first.locator('pre').textContent()).toBe('- ship it\n');
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-memory.png') });

  // Every version of the store.
  await page.getByRole('link', { name: 'All versions' }).click();
  await versions.nth(3).waitFor();
  await expect(versions.count()).resolves.toBe(4);

  const phone = await signedIn(await api.key(), `/console/memory_stores/${store.id}?prefix=/notes/`, {
    width: 390,
    height: 844,
  });
  await phone.getByRole('link', { name: 'todo.md' }).click();
  await phone
    .getByRole('region', { name: 'Memory /notes/todo.md' })
    .getByText('- celebrate', { exact: false })
    .waitFor();
  await fitsWidth(phone);
  await phone.getByRole('link', { name: 'Versions', exact: true }).click();
  await phone.locator('table.versions tbody tr').first().waitFor();
  await fitsWidth(phone);
});

/** The session of the memory attach test, which the mount-write test goes on with. */
let remembering: { id: string; mountPath: string } | undefined;

it('attaches a memory store from the form with its access, and links the mount to the store', async () => {
  const store = await client.beta.memoryStores.create({ name: 'Shared notes' });
  await client.beta.memoryStores.memories.create(store.id, { path: '/seed.md', content: 'seeded\n' });
  const page = await signedIn(await api.key(), '/console/new');
  await page.getByLabel('Agent').selectOption({ label: 'clerk (v1)' });
  await page.getByLabel('Environment').selectOption({ label: 'files-env' });
  await page.getByLabel('Title (optional)').fill('Remember this');
  await page.getByLabel('Memory store (optional)').selectOption({ label: 'Shared notes' });
  await page.getByLabel('Memory access').selectOption({ label: 'Read and write' });
  await page.getByLabel('How the agent should use it (optional)').fill('Keep what you learn here.');
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/\/console\/sessions\/sesn_/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  const resource = (await client.beta.sessions.retrieve(id)).resources.find((r) => r.type === 'memory_store');
  expect(resource).toMatchObject({
    memory_store_id: store.id,
    access: 'read_write',
    instructions: 'Keep what you learn here.',
  });
  const mountPath = (resource as Anthropic.Beta.Sessions.BetaManagedAgentsMemoryStoreResource).mount_path!;
  const mounted = page.getByRole('region', { name: 'Mounted' });
  await mounted.getByText(mountPath, { exact: true }).waitFor();
  await mounted.getByText('read and write', { exact: false }).waitFor();
  // The mount's link opens the store.
  await mounted.getByRole('link', { name: 'Shared notes' }).click();
  await page.getByRole('heading', { name: 'Shared notes' }).waitFor();
  await page.getByRole('list', { name: 'Memories in /' }).getByRole('link', { name: 'seed.md' }).waitFor();
  remembering = { id, mountPath };
});

it('names the session that wrote a memory through its mount in the version, linked to the session', async () => {
  const { id, mountPath } = remembering!;
  const page = await signedIn(await api.key(), `/console/sessions/${id}`);
  const mounted = page.getByRole('region', { name: 'Mounted' });
  h.mock.script(id, {
    steps: [bash(`cat ${mountPath}/seed.md && echo 'learned today' > ${mountPath}/learned.md`), text('Noted.')],
  });
  await send(page, 'remember what you learned');
  await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Noted.' }).waitFor();
  await page.getByRole('listitem', { name: 'Tool call bash' }).getByText('seeded').first().waitFor();

  // The new memory's version names this session, which links back.
  await mounted.getByRole('link', { name: 'Shared notes' }).click();
  await page.getByRole('heading', { name: 'Shared notes' }).waitFor();
  await page.getByRole('link', { name: 'learned.md' }).click();
  await page.getByRole('region', { name: 'Memory /learned.md' }).getByText('learned today').waitFor();
  await page.getByRole('link', { name: 'History' }).click();
  const by = page.locator('table.versions tbody tr td[data-label="By"]');
  await by.getByText(`session ${id}`).waitFor();
  await by.getByRole('link', { name: id }).click();
  await page.waitForURL(new RegExp(`/console/sessions/${id}$`));
  await page.getByRole('heading', { name: 'Remember this' }).waitFor();
});

it('makes every request to its own origin, the key in no URL', async () => {
  const origin = new URL(api.url).origin;
  expect(requested.length).toBeGreaterThan(0);
  expect(requested.filter((u) => !u.startsWith('blob:') && new URL(u).origin !== origin)).toEqual([]);
  expect(requested.filter((u) => /key|sk-/i.test(u.startsWith('blob:') ? '' : new URL(u).search))).toEqual([]);
  for (const p of ['/console/memory_stores', '/console/memory_stores/memstore_x'])
    expect((await fetch(`${api.url}${p}`)).status).toBe(200);
});
