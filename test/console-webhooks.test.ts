// The web console's webhooks page in headless Chromium, on a real API server (PostgreSQL): the workspace's endpoints
// with their event types, a disabled one with its reason, and each one's recent attempts (HTTP status, or why nothing
// was sent), read again by the page as new attempts are recorded. Another workspace's endpoints are not shown, and a
// signing secret never reaches the page.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumPath } from '../src/infra/chromium';
import { createApiKey } from '../src/api/workspace-keys';
import { MANAGED_AGENTS_BETA } from '../src/api/beta';
import { vaultPublicKey } from '../src/vault/sealed';
import { addWebhookEndpoint, setEndpointEnabled } from '../src/webhooks/endpoints';
import { recordWebhookAttempt } from '../src/storage/repos/webhooks-repo';
import { startTestApi, type TestApi } from './helpers/api';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 60_000;

let api: TestApi;
let key: string;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  api = await startTestApi('postgres', ['default', 'other']);
  try {
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  } catch (e) {
    await api.stop();
    throw e;
  }
  key = (await createApiKey(api.db!, 'default')).key;
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await api?.stop();
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

it('shows the endpoints with their recent deliveries and failures, a disabled one with its reason, and no secret', async () => {
  const db = api.db!;
  const sealTo = await vaultPublicKey(api.vaultKey);
  // A key makes its workspace.
  await createApiKey(db, 'other');
  const [other] = await db.query<{ id: string }>("select id from workspaces where name = 'other'");
  const live = await addWebhookEndpoint(db, sealTo, {
    workspaceId: 'wrkspc_default',
    url: 'https://hooks.example.com/agents',
    events: 'session.status_idled,session.status_terminated',
  });
  const broken = await addWebhookEndpoint(db, sealTo, { workspaceId: 'wrkspc_default', url: 'http://127.0.0.1:9/x' });
  const hidden = await addWebhookEndpoint(db, sealTo, { workspaceId: other.id, url: 'https://other.example.com/h' });
  const attempt = (
    endpoint: string,
    n: number,
    outcome: 'delivered' | 'failed' | 'refused',
    status: number | null,
    error: string | null,
  ) =>
    recordWebhookAttempt(db, {
      endpoint_id: endpoint,
      event_id: 'wevt_01page',
      event_type: 'session.status_idled',
      attempt: n,
      status_code: status,
      outcome,
      error,
    });
  await attempt(live.id, 1, 'failed', 500, 'HTTP 500');
  await attempt(live.id, 2, 'delivered', 204, null);
  await attempt(broken.id, 1, 'refused', null, 'egress refused 127.0.0.1:9: loopback (EGRESS_ALLOW can open it)');
  await setEndpointEnabled(db, broken.id, false, '1 consecutive failed attempts; the last: egress refused 127.0.0.1:9');

  const page = await signedIn();
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  expect(page.url()).toBe(`${api.url}/console/webhooks`);
  const liveSection = page.getByRole('region', { name: /hooks\.example\.com\/agents/ });
  await liveSection.waitFor();
  expect(await liveSection.textContent()).toContain('session.status_idled, session.status_terminated');
  const rows = liveSection.locator('tbody tr');
  expect(await rows.count()).toBe(2);
  expect(await rows.nth(0).textContent()).toMatch(/delivered\s*HTTP 204/);
  expect(await rows.nth(1).textContent()).toMatch(/failed\s*HTTP 500/);
  const brokenSection = page.getByRole('region', { name: /127\.0\.0\.1:9/ });
  expect(await brokenSection.textContent()).toContain(
    'Disabled: 1 consecutive failed attempts; the last: egress refused 127.0.0.1:9',
  );
  expect(await brokenSection.textContent()).toContain('loopback (EGRESS_ALLOW can open it)');
  expect(await brokenSection.textContent()).toContain('all event types');

  // A new attempt shows up without a reload.
  await attempt(live.id, 1, 'delivered', 200, null);
  await liveSection.locator('tbody tr', { hasText: 'HTTP 200' }).waitFor();

  const html = await page.content();
  expect(html).not.toContain(hidden.id);
  for (const secret of [live.secret, broken.secret, hidden.secret]) expect(html).not.toContain(secret);
  expect(html).not.toMatch(/whsec_/);
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-webhooks.png'), fullPage: true });
});

it("answers GET /v1/platform/webhooks with the key's workspace's endpoints only", async () => {
  const otherKey = (await createApiKey(api.db!, 'other')).key;
  const headers = { 'x-api-key': otherKey, 'anthropic-beta': MANAGED_AGENTS_BETA };
  const res = await fetch(`${api.url}/v1/platform/webhooks`, { headers });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: { url: string; recent_attempts: unknown[] }[] };
  expect(body.data.map((e) => e.url)).toEqual(['https://other.example.com/h']);
  expect(JSON.stringify(body)).not.toMatch(/whsec_|secret/);
  const refused = await fetch(`${api.url}/v1/platform/webhooks`, {
    headers: { 'anthropic-beta': MANAGED_AGENTS_BETA },
  });
  expect(refused.status).toBe(401);
});
