// The web console's environments in headless Chromium, on a real API server (PostgreSQL), a Temporal dev server and
// a brain worker: the list with each environment's type, a self-hosted environment's page with its queue's figures,
// its work items and the workers polling it, following a real poll and ack by the SDK with an environment key
// without a reload, its empty state with the commands that start a worker, and a session's page naming its
// self-hosted environment. The work item's secret never reaches the page.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ensureChromium } from '../src/infra/chromium';
import { createApiKey } from '../src/api/workspace-keys';
import { createEnvironmentKey } from '../src/api/environment-keys';
import { startApiOn, type TestApi } from './helpers/api';
import { startHarness, type Harness } from './helpers/env';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 60_000;

let h: Harness;
let api: TestApi;
let key: string;
let client: Anthropic;
let browser: Browser;
const contexts: BrowserContext[] = [];
const requested: string[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  h = await startHarness({ role: 'brain', hostId: `console-env-test-${process.pid}` });
  api = await startApiOn(h);
  try {
    browser = await chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] });
  } catch (e) {
    await api.stop();
    await h.stop();
    throw e;
  }
  const made = await createApiKey(api.db!, 'default');
  key = made.key;
  client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await api?.stop();
  await h?.stop();
});

/** A fresh tab (session storage is per tab), signed in on /console. */
async function signedIn(viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on('request', (r) => requested.push(r.url()));
  await page.goto(`${api.url}/console`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  return page;
}

/** A figure of the Queue panel, as the page shows it. */
const figure = (page: Page, name: string) => page.locator(`dd[data-figure="${name}"]`);

/** Waits until the figure reads `value`: the page reads its queue again by itself. */
async function waitForFigure(page: Page, name: string, value: string): Promise<void> {
  await page.locator(`dd[data-figure="${name}"]`, { hasText: new RegExp(`^\\s*${value}\\s*$`) }).waitFor();
}

/** No sideways scrolling: the page fits the window's width. */
async function fitsWidth(page: Page): Promise<void> {
  expect(
    (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number,
  ).toBeLessThanOrEqual(0);
}

it("lists the environments with their types, and follows a self-hosted one's queue, work and workers live", async () => {
  const farm = await client.beta.environments.create({ name: 'build-farm', config: { type: 'self_hosted' } });
  const cloud = await client.beta.environments.create({ name: 'cloud-env' });
  const agent = await client.beta.agents.create({
    name: 'farmer',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });

  const page = await signedIn();
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Environments' }).click();
  await page.waitForURL(/\/console\/environments$/);
  const table = page.getByRole('table', { name: 'Environments, newest first' });
  const farmRow = table.getByRole('row').filter({ hasText: farm.id });
  const cloudRow = table.getByRole('row').filter({ hasText: cloud.id });
  await expect(farmRow.locator('td[data-label="Type"]').innerText()).resolves.toBe('self_hosted');
  await expect(cloudRow.locator('td[data-label="Type"]').innerText()).resolves.toBe('cloud');
  // Only a self-hosted environment has a queue, and a page for it.
  await expect(cloudRow.getByRole('link').count()).resolves.toBe(0);
  await farmRow.locator('td[data-label="Queue"]').getByText('0 queued', { exact: false }).waitFor();

  await farmRow.getByRole('link', { name: 'build-farm' }).click();
  await page.waitForURL(new RegExp(`/console/environments/${farm.id}$`));
  await page.getByRole('heading', { name: 'build-farm' }).waitFor();
  // Nothing has polled yet: the page says how to start a worker.
  const workers = page.getByRole('region', { name: 'Workers' });
  await workers.getByText('No worker has polled in the last 5 minutes.').waitFor();
  await workers.getByText(`agents environment-keys create --environment ${farm.id}`).waitFor();
  await workers.getByText('client.beta.environments.work', { exact: false }).waitFor();
  await page.getByRole('region', { name: 'Work items' }).getByText('No work yet', { exact: false }).waitFor();
  await waitForFigure(page, 'depth', '0');
  await waitForFigure(page, 'workers', '0');
  await expect(figure(page, 'oldest').innerText()).resolves.toBe('none');

  // From here on the page must follow the queue by itself: a reload would lose this mark.
  await page.evaluate('window.__sameDocument = true');

  // A session on the environment queues its work item.
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: farm.id, title: 'On the farm' });
  const queued = (await client.beta.environments.work.list(farm.id)).data;
  expect(queued.map((w) => [w.data.type, w.data.id, w.state])).toEqual([['session', session.id, 'queued']]);
  const workId = queued[0].id;
  await waitForFigure(page, 'depth', '1');
  const work = page.getByRole('region', { name: 'Work items' });
  const row = work.locator(`tr[data-work="${workId}"]`);
  await expect(row.locator('td[data-label="State"]').innerText()).resolves.toBe('queued');
  await row.getByRole('link', { name: session.id }).waitFor();
  await expect(row.locator('td[data-label="Acknowledged"]').innerText()).resolves.toBe('–');

  // A new environment key queues a healthcheck behind the session's item.
  const envKey = (await createEnvironmentKey(api.db!, farm.id)).key;
  await waitForFigure(page, 'depth', '2');
  await work.getByText('healthcheck', { exact: false }).waitFor();

  // A worker polls with the environment key: the session's item is pending, and the worker holds it.
  const worker = new Anthropic({ apiKey: null, authToken: envKey, baseURL: api.url, maxRetries: 0 });
  const claimed = await worker.beta.environments.work.poll(farm.id, { 'Anthropic-Worker-ID': 'w-1' });
  expect(claimed?.id).toBe(workId);
  expect(claimed?.secret).toBeTruthy();
  // Polled and not acknowledged is pending for 5 s only (then the item is claimable again), so this reading is
  // asked for rather than waited for.
  await page.getByRole('button', { name: 'Refresh' }).click();
  await waitForFigure(page, 'pending', '1');
  await waitForFigure(page, 'depth', '1');
  await waitForFigure(page, 'workers', '1');
  const w1 = workers.getByRole('row').filter({ hasText: 'w-1' });
  await w1.waitFor();

  // Acknowledged: no longer pending, the item starting, with when it was acknowledged.
  await worker.beta.environments.work.ack(workId, { environment_id: farm.id });
  await waitForFigure(page, 'pending', '0');
  await row.locator('td[data-label="State"]').getByText('starting', { exact: true }).waitFor();
  await row.locator('td[data-label="Acknowledged"] time').waitFor();
  // The worker holds the item it acknowledged.
  await w1.getByText(workId).waitFor();
  expect(await page.evaluate('window.__sameDocument')).toBe(true);

  // The secret (and the sessions token in it) never reaches the page.
  const html = await page.content();
  expect(html).not.toContain(claimed!.secret!);
  const token = (JSON.parse(Buffer.from(claimed!.secret!, 'base64url').toString()) as { sessions_token: string })
    .sessions_token;
  expect(html).not.toContain(token);
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-environment.png'), fullPage: true });

  // A reload (or a shared link) opens the same page.
  await page.reload();
  await page.getByRole('heading', { name: 'build-farm' }).waitFor();
  await row.locator('td[data-label="State"]').getByText('starting', { exact: true }).waitFor();

  // The session's page says where its tools run, and links to that environment's page.
  await row.getByRole('link', { name: session.id }).click();
  await page.waitForURL(new RegExp(`/console/sessions/${session.id}$`));
  const note = page.getByText('Its tools run on the self-hosted environment', { exact: false });
  await note.waitFor();
  await note.getByRole('link', { name: 'build-farm' }).click();
  await page.waitForURL(new RegExp(`/console/environments/${farm.id}$`));
  await waitForFigure(page, 'workers', '1');

  // At a phone's width the tables become labelled rows, with no sideways scrolling.
  const phone = await signedIn({ width: 390, height: 844 });
  await phone.getByRole('link', { name: 'Environments' }).click();
  await phone.getByRole('link', { name: 'build-farm' }).click();
  await phone.locator(`tr[data-work="${workId}"]`).getByText('starting').waitFor();
  await fitsWidth(phone);

  await worker.beta.environments.work.stop(workId, { environment_id: farm.id, force: true });
});

it("says a cloud environment's sessions run on the platform's hosts, and a session on it names no environment page", async () => {
  const cloud = await client.beta.environments.create({ name: 'plain-cloud' });
  const agent = await client.beta.agents.create({ name: 'plain', model: 'claude-test' });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: cloud.id });
  const page = await signedIn();
  await page.getByRole('link', { name: 'Environments' }).click();
  const row = page.getByRole('row').filter({ hasText: cloud.id });
  await row.getByText("runs on the platform's hands hosts").waitFor();

  await page.getByRole('link', { name: 'Sessions' }).click();
  // The session's page reads its environment, and finds it is not self-hosted.
  const read = page.waitForResponse((r) => r.url().endsWith(`/v1/environments/${cloud.id}`));
  await page.getByRole('link', { name: session.id }).click();
  await page.waitForURL(new RegExp(`/console/sessions/${session.id}$`));
  const response = await read;
  expect(response.status()).toBe(200);
  await response.finished();
  // One frame after the answer, the page has rendered what it makes of it.
  await page.evaluate('new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))');
  await page.getByText(agent.name, { exact: false }).first().waitFor();
  await expect(page.getByText('self-hosted environment', { exact: false }).count()).resolves.toBe(0);
});

it('answers an unknown environment with a page that says so', async () => {
  const page = await signedIn();
  // Opened as a link inside the console would open it.
  await page.evaluate(
    "history.pushState(null, '', '/console/environments/env_nope'); dispatchEvent(new PopStateEvent('popstate'))",
  );
  await page.getByRole('heading', { name: 'Environment not found' }).waitFor();
});

it('makes no request to another origin', () => {
  const origin = new URL(api.url).origin;
  expect(requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
});
