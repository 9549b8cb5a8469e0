// The web console's session page for a coordinator with a budget and an outcome, in headless Chromium on a real API
// server, Temporal dev server and brain worker: the spending against the budget, the outcome's two evaluations
// with their grades, and the threads as tabs, each thread's own events and status.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumPath } from '../src/infra/chromium';
import { createApiKey } from '../src/api/workspace-keys';
import { graderScriptKey } from '../src/dev/model-replies';
import type { MockBlock } from '../src/dev/model-script';
import { startApiOn, type TestApi } from './helpers/api';
import { startHarness, type Harness } from './helpers/env';
import { eventsUntil, sayTo, type ApiEvent } from './helpers/sdk-session';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 60_000;
const MODEL = 'claude-haiku-4-5';
// $1 per million input tokens and $5 per million output tokens: 10 000 in and 400 out cost 1.2 cents a call.
const usage = { input_tokens: 10_000, output_tokens: 400, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };

let h: Harness;
let api: TestApi;
let key: string;
let client: Anthropic;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  h = await startHarness();
  api = await startApiOn(h);
  try {
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  } catch (e) {
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
  await api?.stop();
  await h?.stop();
});

async function signedIn(where: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.goto(`${api.url}${where}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return page;
}

const text = (t: string) => ({ reply: { content: [{ type: 'text' as const, text: t }], usage } });
const calls = (...blocks: MockBlock[]) => ({ reply: { content: blocks, usage } });
const verdict = (v: string, explanation: string) => text(`VERDICT: ${v}\nEXPLANATION: ${explanation}`);
const ends = (events: ApiEvent[]) => events.filter((e) => e.type === 'span.outcome_evaluation_end').length;

it("shows a coordinator session's spending against its budget, its outcome's evaluations, and its threads as tabs", async () => {
  const envId = (await client.beta.environments.create({ name: 'console-panels-env' })).id;
  const helperId = (await client.beta.agents.create({ name: 'helper', model: MODEL })).id;
  const leadId = (
    await client.beta.agents.create({
      name: 'lead',
      model: MODEL,
      multiagent: { type: 'coordinator', agents: [helperId] },
    })
  ).id;
  const s = await client.beta.sessions.create({
    agent: leadId,
    environment_id: envId,
    budget: { type: 'limit', max_list_cost: { amount: '50', currency: 'USD' } },
  });
  h.mock.script(`${s.id}.toolu_d1`, { steps: [text('helper wrote the notes')] });
  h.mock.script(s.id, {
    steps: [
      calls({ type: 'tool_use', id: 'toolu_d1', name: 'delegate', input: { agent: 'helper', message: 'take notes' } }),
      text('delegated'),
      text('Waves'),
      text('Waves\nsalt wind on the shore\nthe tide returns'),
    ],
  });
  h.mock.script(graderScriptKey(s.id), {
    steps: [verdict('NEEDS_REVISION', 'one line is not a haiku'), verdict('SATISFIED', 'three lines about the sea')],
  });
  await sayTo(client, s.id, 'go');
  await eventsUntil(client, s.id, (ev) => ev.filter((e) => e.type === 'session.status_idle').length >= 1);
  await client.beta.sessions.events.send(s.id, {
    events: [
      {
        type: 'user.define_outcome',
        description: 'Write a haiku about the sea.',
        rubric: { type: 'text', content: 'Three lines about the sea.' },
      },
    ],
  });
  await eventsUntil(client, s.id, (ev) => ends(ev) >= 2);
  const session = await client.beta.sessions.retrieve(s.id);
  expect(session.outcome_evaluations[0]).toMatchObject({ result: 'satisfied', iteration: 1 });
  const spent = session.usage.list_cost!.amount;

  const page = await signedIn(`/console/sessions/${s.id}`);
  // The spending against the budget, as the session reports it.
  const spending = page.getByLabel('Spending against the budget');
  // 7 model calls of 1.2 cents: the coordinator's 4, the thread's, the grader's 2.
  expect(spent).toBe('8');
  await spending.waitFor();
  expect(await spending.textContent()).toBe('Spent $0.08 of a $0.50 budget');
  expect(Number(await spending.locator('meter').getAttribute('value'))).toBeCloseTo(Number(spent), 6);
  // The outcome with its two evaluations, in order, each with its grade and explanation.
  const outcomes = page.getByRole('region', { name: 'Outcomes' });
  await outcomes.getByText('Outcome: Write a haiku about the sea.').waitFor();
  await expect(outcomes.locator('.status').first().textContent()).resolves.toBe('satisfied');
  const grades = outcomes.locator('li.grade');
  await grades.nth(1).waitFor();
  expect(await grades.allTextContents()).toEqual([
    'Evaluation 1: needs revision — one line is not a haiku',
    'Evaluation 2: satisfied — three lines about the sea',
  ]);
  // The threads as tabs: the primary one shows the session's log, the helper's tab its own events and status.
  const tabs = page.getByRole('tablist', { name: 'Threads' }).getByRole('tab');
  await tabs.nth(1).waitFor();
  expect(await tabs.allTextContents()).toEqual(['lead (primary) idle', 'helper idle']);
  await page.getByLabel('Session events').getByText('delegated', { exact: true }).waitFor();
  await tabs.nth(1).click();
  expect(await tabs.nth(1).getAttribute('aria-selected')).toBe('true');
  const own = page.getByLabel('Events of thread helper');
  await own.getByText('helper wrote the notes').waitFor();
  expect(await own.getByText('Waves').count()).toBe(0);
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-session-threads.png'), fullPage: true });
  await tabs.nth(0).click();
  await page.getByLabel('Session events').getByText('delegated', { exact: true }).waitFor();
});
