// The web console's Workspace snapshots panel in headless Chromium, on a real API server (PostgreSQL), Temporal dev
// server, a worker of every role whose hands write snapshots to the API's database, Docker sandboxes and the scripted
// local model: a session page opened before the session has any snapshot shows no panel; the session's bash calls
// write files, and each snapshot appears in the panel as it is taken, with no reload; the sandbox's container and
// volume are removed, the next turn's sandbox is restored from the latest snapshot, and the restore appears too.
// What the panel shows is checked against the session's own `platform.workspace_*` events.
import type Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { ensureChromium } from '../src/infra/chromium';
import { resolveDockerHost } from '../src/host/docker-host';
import type { PlatformWorkspaceRestoredEvent, PlatformWorkspaceSnapshotEvent } from '../src/api/sessions/projection';
import { bytes } from '../src/console/app/formatters';
import { startApiOn, type TestApi } from './helpers/api';
import { removeHostSandboxes, startHarness, type Harness } from './helpers/env';
import { bashStep, doneStep, eventsUntil, idles } from './helpers/sdk-session';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 90_000;
const HOST = `console-snapshots-${process.pid}`;

let h: Harness;
let api: TestApi | undefined;
let client: Anthropic;
let browser: Browser | undefined;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  if (!(await resolveDockerHost())) throw new Error('no Docker engine: run npm run setup');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  // The hands host writes snapshots to the API's database and reads its mounts there, as a worker beside the API does.
  h = await startHarness({ role: 'all', hostId: HOST, apiDb: () => api?.db });
  api = await startApiOn(h);
  try {
    browser = await chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] });
  } catch (e) {
    await api.stop();
    await h.stop();
    throw e;
  }
  client = await api.client();
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await api?.stop();
  await h?.stop();
  await removeHostSandboxes(HOST).catch(() => undefined);
});

async function signedIn(where: string): Promise<Page> {
  const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.goto(`${api!.url}${where}`);
  await page.getByLabel('API key').fill(await api!.key());
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** The session's snapshot and restore events, as the API lists them. */
async function workspaceEvents(id: string) {
  const snapshots: PlatformWorkspaceSnapshotEvent[] = [];
  const restores: PlatformWorkspaceRestoredEvent[] = [];
  for await (const e of client.beta.sessions.events.list(id)) {
    const p = e as unknown as PlatformWorkspaceSnapshotEvent | PlatformWorkspaceRestoredEvent;
    if (p.type === 'platform.workspace_snapshot') snapshots.push(p);
    else if (p.type === 'platform.workspace_restored') restores.push(p);
  }
  return { snapshots, restores };
}

/** Each row of `table`: its cells' text, and the instants and exact sizes their times and sizes stand for. */
const rowsOf = (table: Locator) =>
  table.locator('tbody tr').evaluateAll((rows) =>
    rows.map((r) =>
      [...r.querySelectorAll('td')].map((td) => ({
        text: td.textContent ?? '',
        time: td.querySelector('time')?.getAttribute('datetime') ?? null,
        size: td.querySelector('span[title$=" bytes"]')?.getAttribute('title') ?? null,
        id: td.querySelector('.id')?.getAttribute('title') ?? null,
      })),
    ),
  );

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
const AGO = '\\d+ (s|min) ago';
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The panel shows, for sandbox main, exactly the session's snapshot and restore events. */
async function expectPanelMatches(page: Page, id: string): Promise<void> {
  const { snapshots, restores } = await workspaceEvents(id);
  const panel = page.getByRole('region', { name: 'Workspace snapshots' });
  const table = panel.getByRole('table', { name: 'Snapshots of main' });
  // Newest first; the latest marked.
  const latest = snapshots[snapshots.length - 1];
  expect(await rowsOf(table)).toEqual(
    [...snapshots].reverse().map((s) => [
      { text: s === latest ? `${s.seq} latest` : String(s.seq), time: null, size: null, id: null },
      { text: expect.stringMatching(new RegExp(`^${AGO}$`)), time: s.processed_at, size: null, id: null },
      { text: String(s.files), time: null, size: null, id: null },
      { text: bytes(s.size_bytes), time: null, size: `${s.size_bytes} bytes`, id: null },
      s.new_chunks === 0
        ? {
            text: `nothing new (${plural(s.chunk_count, 'chunk')}, all stored already)`,
            time: null,
            size: null,
            id: null,
          }
        : {
            text: `${bytes(s.new_bytes)} in ${plural(s.new_chunks, 'new chunk')} of ${s.chunk_count}`,
            time: null,
            size: `${s.new_bytes} bytes`,
            id: null,
          },
    ]),
  );
  // The sandbox's own region: its summary line.
  const summary = panel.getByRole('region', { name: 'Sandbox main' }).locator('p.summary');
  const added = snapshots.reduce((n, s) => n + s.new_bytes, 0);
  const restored =
    restores.length === 0 ? '' : restores.length === 1 ? '. Restored once' : `. Restored ${restores.length} times`;
  expect(await summary.textContent()).toMatch(
    new RegExp(
      `^${escape(`${plural(snapshots.length, 'snapshot')}, ${bytes(added)} added to storage in all. Latest: snapshot ${latest.seq}, ${plural(latest.files, 'file')}, ${bytes(latest.size_bytes)}, taken `)}${AGO}${escape(`${restored}.`)}$`,
    ),
  );
  expect(await summary.locator('time').getAttribute('datetime')).toBe(latest.processed_at);
  const restoreTable = panel.getByRole('table', { name: 'Restores of main' });
  if (restores.length === 0) {
    expect(await restoreTable.count()).toBe(0);
    return;
  }
  expect(await rowsOf(restoreTable)).toEqual(
    [...restores].reverse().map((r) => [
      { text: expect.stringMatching(new RegExp(`^${AGO}$`)), time: r.processed_at, size: null, id: null },
      {
        text: `${r.seq} (${plural(r.files, 'file')}, ${bytes(r.size_bytes)})`,
        time: null,
        size: `${r.size_bytes} bytes`,
        id: null,
      },
      { text: expect.stringMatching(new RegExp(`^${AGO}$`)), time: r.taken_at, size: null, id: null },
      { text: r.sandbox_id.slice(0, 12), time: null, size: null, id: r.sandbox_id },
      { text: `${(r.duration_ms / 1000).toFixed(1)} s`, time: null, size: null, id: null },
    ]),
  );
}

it("shows a session's workspace snapshots as they are taken, and a restore after its sandbox was lost", async () => {
  const agent = await client.beta.agents.create({
    name: 'writer',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const env = await client.beta.environments.create({ name: 'console-snapshots-env' });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(s.id, {
    steps: [
      // 20 notes and 300 000 random bytes (a chunk of their own): snapshot 1.
      bashStep(
        'mkdir -p notes && for i in $(seq 1 20); do echo "note $i" > notes/n$i.md; done && head -c 300000 /dev/urandom > data.bin',
      ),
      // One note changed: snapshot 2, which stores only that note.
      bashStep('echo "more" >> notes/n1.md'),
      // Nothing changed: no snapshot.
      bashStep('ls notes | wc -l'),
      doneStep,
      // After the sandbox is removed: the first call may find it lost, the next gets a new one, restored.
      bashStep('ls | wc -l'),
      bashStep('ls | wc -l'),
      // A new note in the restored workspace: snapshot 3.
      bashStep('echo "after the restore" > notes/new.md'),
      doneStep,
    ],
  });

  // Opened before the session has any snapshot: no panel.
  const page = await signedIn(`/console/sessions/${s.id}`);
  await page.locator('.link-live').waitFor();
  const panel = page.getByRole('region', { name: 'Workspace snapshots' });
  expect(await panel.count()).toBe(0);

  // Each snapshot appears as it is taken: the page is not reloaded.
  await send(page, 'write the notes');
  const snapshotRows = panel.getByRole('table', { name: 'Snapshots of main' }).locator('tbody tr');
  await snapshotRows.first().waitFor();
  await eventsUntil(client, s.id, idles(1));
  await snapshotRows.nth(1).waitFor();
  const first = await workspaceEvents(s.id);
  expect(first.snapshots.map((e) => [e.sandbox_name, e.seq, e.files, e.new_chunks])).toEqual([
    ['main', 1, 21, 21],
    ['main', 2, 21, 1],
  ]);
  expect(first.snapshots[1].new_bytes).toBe('note 1\nmore\n'.length);
  expect(first.restores).toEqual([]);
  await expectPanelMatches(page, s.id);

  // The sandbox's container and workspace volume are gone: the next turn's sandbox is restored from snapshot 2.
  await removeHostSandboxes(HOST);
  await send(page, 'carry on');
  await eventsUntil(client, s.id, idles(2));
  await panel.getByRole('table', { name: 'Restores of main' }).locator('tbody tr').first().waitFor();
  await snapshotRows.nth(2).waitFor();
  const second = await workspaceEvents(s.id);
  expect(second.restores.map((r) => [r.sandbox_name, r.seq, r.files, r.size_bytes])).toEqual([
    ['main', 2, 21, first.snapshots[1].size_bytes],
  ]);
  expect(second.snapshots.map((e) => [e.seq, e.files])).toEqual([
    [1, 21],
    [2, 21],
    [3, 22],
  ]);
  await expectPanelMatches(page, s.id);
  await panel.screenshot({ path: path.join(ARTIFACTS, 'console-session-snapshots.png') });

  // At a phone's width the panel's tables become labelled rows, with no sideways scrolling.
  await page.setViewportSize({ width: 390, height: 844 });
  expect(
    (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number,
  ).toBeLessThanOrEqual(0);
});
