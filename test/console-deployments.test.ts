// The web console's deployments in headless Chromium, on a real API server (PostgreSQL), a Temporal dev server, a
// brain worker and a tools worker on the API's database: the list with each deployment's schedule and upcoming
// runs, pause and unpause through the buttons (the Temporal Schedule follows), run-now creating a session, and the
// run linking to its session's page.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumPath } from '../src/infra/chromium';
import { createApiKey } from '../src/api/workspace-keys';
import { scheduleIdOf } from '../src/api/deployment-schedules';
import type { RunningWorker } from '../src/worker';
import { startApiOn, type TestApi } from './helpers/api';
import { startHarness, startTestWorker, type Harness } from './helpers/env';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 60_000;

let h: Harness;
let api: TestApi;
let tools: RunningWorker;
let key: string;
let client: Anthropic;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  h = await startHarness();
  api = await startApiOn(h);
  try {
    tools = await startTestWorker(h.env.address, h.mock.url, {
      role: 'tools',
      vaultKey: api.vaultKey,
      apiDb: () => api.db,
    });
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  } catch (e) {
    await tools?.shutdown().catch(() => undefined);
    await api.stop();
    await h.stop();
    throw e;
  }
  key = (await createApiKey(api.db!, 'default')).key;
  client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

async function signedIn(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.goto(`${api.url}/console`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  return page;
}

it('shows deployments with their schedules and upcoming runs, pauses, unpauses and runs one, and links the run to its session', async () => {
  const envId = (await client.beta.environments.create({ name: 'console-deploy-env' })).id;
  const agentId = (await client.beta.agents.create({ name: 'console-deployer', model: 'claude-haiku-4-5' })).id;
  const d = await client.beta.deployments.create({
    agent: agentId,
    environment_id: envId,
    name: 'Morning digest',
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'digest please' }] }],
    schedule: { type: 'cron', expression: '30 7 * * *', timezone: 'Asia/Tokyo' },
  });
  const page = await signedIn();
  await page.getByRole('link', { name: 'Deployments' }).click();
  await page.getByRole('heading', { name: 'Deployments' }).waitFor();
  const row = page.locator(`tr[data-deployment="${d.id}"]`);
  await row.getByText('30 7 * * * (Asia/Tokyo)').waitFor();
  // Its upcoming runs, the first three Temporal computed.
  const shown = await row
    .locator('td[data-label="Upcoming runs"] time')
    .evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')));
  expect(shown).toEqual(d.schedule!.upcoming_runs_at!.slice(0, 3));

  await row.getByRole('button', { name: 'Pause' }).click();
  await row.getByRole('button', { name: 'Unpause' }).waitFor();
  expect((await client.beta.deployments.retrieve(d.id)).status).toBe('paused');
  expect((await h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe()).state.paused).toBe(true);
  await row.getByRole('button', { name: 'Unpause' }).click();
  await row.getByRole('button', { name: 'Pause' }).waitFor();
  expect((await h.env.client.schedule.getHandle(scheduleIdOf(d.id)).describe()).state.paused).toBe(false);

  await row.getByRole('button', { name: 'Run now' }).click();
  const runRow = page.locator('table.deployment-runs tbody tr').first();
  const link = runRow.getByRole('link', { name: /^sesn_/ });
  await link.waitFor();
  const runs = [];
  for await (const r of client.beta.deploymentRuns.list({ deployment_id: d.id })) runs.push(r);
  expect(runs).toHaveLength(1);
  expect(await link.textContent()).toBe(runs[0].session_id);
  await runRow.getByText('manual').waitFor();
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-deployments.png'), fullPage: true });
  await link.click();
  await page.waitForURL(`**/console/sessions/${runs[0].session_id}`);
});
