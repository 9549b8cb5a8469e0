// The web console at /console in headless Chromium, on a real API server, Temporal dev server, worker (every role,
// so bash runs in a Docker sandbox) and the local model: sign in with a key, start a session, follow its reply and a
// bash call's output live, allow and deny always_ask calls, answer a custom tool, interrupt a slow turn, and see
// nothing of another workspace. Every request the pages make goes to the API's own origin.
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ensureChromium } from '../src/infra/chromium';
import { resolveDockerHost } from '../src/host/docker-host';
import { ArchivedSessionLog, LiveSessionLog } from '../src/log/session-log';
import { startTestApi, type TestApi } from './helpers/api';
import { startHarness, testArchive, type Harness } from './helpers/env';
import { docker, sessionContainers } from './helpers/hands';

const ARTIFACTS = path.join(__dirname, 'artifacts');
const TIMEOUT = 60_000;

let h: Harness;
let api: TestApi;
let client: Anthropic;
let browser: Browser;
let envId: string;
const agents: Record<string, string> = {};
const contexts: BrowserContext[] = [];
const requested: string[] = [];

beforeAll(async () => {
  if (!(await resolveDockerHost())) throw new Error('no Docker engine: run npm run setup');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  h = await startHarness({ role: 'all', hostId: `console-test-${process.pid}` });
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
  envId = (await client.beta.environments.create({ name: 'console-env' })).id;
  agents.chat = (
    await client.beta.agents.create({
      name: 'chat',
      model: 'claude-sonnet-4-5',
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
  agents.careful = (
    await client.beta.agents.create({
      name: 'careful',
      model: 'claude-test',
      tools: [
        { type: 'agent_toolset_20260401', configs: [{ name: 'bash', permission_policy: { type: 'always_ask' } }] },
      ],
    })
  ).id;
  agents.form = (
    await client.beta.agents.create({
      name: 'form',
      model: 'claude-test',
      tools: [
        {
          type: 'custom',
          name: 'ask_user_form',
          description: 'Ask the user a question',
          input_schema: { type: 'object', properties: { question: { type: 'string' } } },
        },
      ],
    })
  ).id;
});

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await api?.stop();
  await h?.stop();
});

/** A fresh tab (session storage is per tab), signed in with `key` on `where`. */
async function signedIn(key: string, where = '/console', viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
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

const calls = (page: Page, name: string) => page.getByRole('listitem', { name: `Tool call ${name}` });

async function events(id: string): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> {
  const out = [];
  for await (const e of client.beta.sessions.events.list(id)) out.push(e);
  return out;
}

it('refuses a wrong key, then starts a session from an agent and environment and follows its reply and a bash call live', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on('request', (r) => requested.push(r.url()));
  await page.goto(`${api.url}/console`);
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'That key was refused' }).waitFor();

  const key = await api.key();
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
  // The key lives in the tab's session storage and in no URL.
  expect((await page.evaluate('Object.values(sessionStorage)')) as string[]).toContain(key);

  await page.getByRole('link', { name: 'New session' }).first().click();
  await page.getByLabel('Agent').selectOption({ label: 'chat (v1)' });
  await page.getByLabel('Environment').selectOption({ label: 'console-env' });
  await page.getByLabel('Title (optional)').fill('Tidy the notes');
  await page.getByLabel('First message').fill('hello console');
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/\/console\/sessions\/sesn_/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  await page.getByRole('heading', { name: 'Tidy the notes' }).waitFor();
  await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'You said: hello console' }).waitFor();

  // A reply that arrives after the page loaded: the page follows the stream.
  await send(page, 'and a second time');
  await page
    .getByRole('listitem', { name: 'Agent message' })
    .filter({ hasText: 'You said: and a second time' })
    .waitFor();
  // The box empties when the send's response comes, which on a busy machine can be after the reply streamed in.
  const box = page.getByLabel('Message', { exact: true });
  for (let i = 0; i < 100 && (await box.inputValue()) !== ''; i++) await page.waitForTimeout(100);
  expect(await box.inputValue()).toBe('');

  // A bash call with long output: folded to its head, the whole a click away.
  await send(page, 'please run `seq 1 60 | sed s/^/row-/`');
  const call = calls(page, 'bash').last();
  await call.getByText('row-1', { exact: false }).first().waitFor();
  await expect(call.textContent()).resolves.toContain('$ seq 1 60 | sed s/^/row-/');
  await expect(call.textContent()).resolves.not.toContain('row-60');
  await call.getByRole('button', { name: /^Show all \d+ lines of the output$/ }).click();
  await call.getByText('row-60', { exact: false }).waitFor();
  await call.getByRole('button', { name: 'Fold the output' }).click();
  await call.getByRole('button', { name: /^Show all \d+ lines of the output$/ }).waitFor();

  // The same events as any other client's.
  const log = await events(id);
  expect(
    log.filter((e) => e.type === 'user.message').map((e) => (e as { content: { text: string }[] }).content[0].text),
  ).toEqual(['hello console', 'and a second time', 'please run `seq 1 60 | sed s/^/row-/`']);
  expect(log.some((e) => e.type === 'agent.tool_result' && JSON.stringify(e).includes('row-60'))).toBe(true);
});

it('allows one always_ask bash call and denies the next with a reason, each through events.send', async () => {
  const s = await client.beta.sessions.create({
    agent: agents.careful,
    environment_id: envId,
    title: 'Careful pushes',
  });
  const bash = (command: string) => ({
    reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
  });
  h.mock.script(s.id, {
    steps: [
      bash('echo allowed-run'),
      bash('echo denied-run'),
      { reply: { content: [{ type: 'text', text: 'Both settled.' }] } },
    ],
  });
  const page = await signedIn(await api.key(), `/console/sessions/${s.id}`);
  await page.getByRole('heading', { name: 'Careful pushes' }).waitFor();
  await send(page, 'run them');

  const first = calls(page, 'bash').nth(0);
  await first.getByText('Waiting for your approval.').waitFor();
  await page.getByText('waiting for your action on 1 call').waitFor();
  await first.getByRole('button', { name: 'Allow' }).click();
  await first.getByText('allowed-run').last().waitFor();
  await first.getByText('allowed', { exact: true }).waitFor();

  const second = calls(page, 'bash').nth(1);
  await second.getByText('Waiting for your approval.').waitFor();
  await second.getByLabel('Reason (optional)').fill('not on a Friday');
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-session.png') });
  await second.getByRole('button', { name: 'Deny' }).click();
  await second.getByText('denied: not on a Friday').waitFor();
  await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Both settled.' }).waitFor();
  expect(await second.getByRole('button', { name: 'Allow' }).count()).toBe(0);

  const log = await events(s.id);
  const uses = log.filter((e) => e.type === 'agent.tool_use').map((e) => e.id);
  expect(log.filter((e) => e.type === 'user.tool_confirmation')).toMatchObject([
    { tool_use_id: uses[0], result: 'allow' },
    { tool_use_id: uses[1], result: 'deny', deny_message: 'not on a Friday' },
  ]);
  expect(log.some((e) => e.type === 'agent.tool_result' && JSON.stringify(e).includes('allowed-run'))).toBe(true);
  expect(JSON.stringify(log)).not.toContain('denied-run\\n');
});

it('answers a custom tool call from its form', async () => {
  const s = await client.beta.sessions.create({ agent: agents.form, environment_id: envId, title: 'Pick a colour' });
  h.mock.script(s.id, {
    steps: [
      {
        reply: {
          content: [
            { type: 'text', text: 'Asking.' },
            { type: 'tool_use', name: 'ask_user_form', input: { question: 'Which colour?' } },
          ],
        },
      },
      { reply: { content: [{ type: 'text', text: 'Teal it is.' }] } },
    ],
  });
  const page = await signedIn(await api.key(), `/console/sessions/${s.id}`);
  await send(page, 'pick a colour');
  const call = page.getByRole('listitem', { name: 'Custom tool call ask_user_form' });
  await call.getByText('Which colour?').waitFor();
  await call.getByLabel('Result').fill('teal');
  await call.getByRole('button', { name: 'Send result' }).click();
  await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Teal it is.' }).waitFor();
  await call.locator('.result').getByText('teal').waitFor();
  const log = await events(s.id);
  const use = log.find((e) => e.type === 'agent.custom_tool_use')!;
  expect(log.find((e) => e.type === 'user.custom_tool_result')).toMatchObject({
    custom_tool_use_id: use.id,
    content: [{ type: 'text', text: 'teal' }],
    is_error: false,
  });
});

it('interrupts a slow turn with the Interrupt button', async () => {
  const s = await client.beta.sessions.create({ agent: agents.chat, environment_id: envId, title: 'Slow thinker' });
  const gate = `console-slow-${s.id}`;
  h.mock.script(s.id, { steps: [{ gate, reply: { content: [{ type: 'text', text: 'Finally done.' }] } }] });
  const page = await signedIn(await api.key(), `/console/sessions/${s.id}`);
  try {
    await send(page, 'take your time');
    await page.getByText('running', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Interrupt' }).click();
    await page.getByRole('listitem', { name: 'Interrupted' }).waitFor();
    await page.getByText('waiting for a message').waitFor();
    expect(await page.getByRole('button', { name: 'Interrupt' }).count()).toBe(0);
  } finally {
    h.mock.release(gate);
  }
  expect((await events(s.id)).map((e) => e.type)).toContain('user.interrupt');
});

it('shows a failed model call as an error with its retry status, and the session stopped after it', async () => {
  const s = await client.beta.sessions.create({ agent: agents.form, environment_id: envId, title: 'Refused request' });
  h.mock.script(s.id, { steps: [{ status: 400, message: 'the request was refused by the model' }] });
  const page = await signedIn(await api.key(), `/console/sessions/${s.id}`);
  await send(page, 'this will fail');
  const error = page.getByRole('listitem', { name: 'Session error' });
  await error.getByText('the request was refused by the model').waitFor();
  await error.getByText('model_request_failed_error').waitFor();
  await error.getByText('retry: exhausted').waitFor();
  await page.getByText('stopped after an error').waitFor();
});

it('shows an ended session read-only, its stream marked ended', async () => {
  const s = await client.beta.sessions.create({
    agent: agents.form,
    environment_id: envId,
    title: 'Done and dusted',
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'one last thing' }] }],
  });
  await client.beta.sessions.archive(s.id);
  const page = await signedIn(await api.key(), `/console/sessions/${s.id}`);
  await page.getByRole('listitem', { name: 'Session ended' }).waitFor();
  await page.getByText('ended', { exact: true }).waitFor();
  await page.getByRole('listitem', { name: 'User message' }).filter({ hasText: 'one last thing' }).waitFor();
  expect(await page.getByLabel('Message', { exact: true }).isDisabled()).toBe(true);
  expect(await page.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
});

it("shows another workspace's sessions nowhere: not in its list, not by id", async () => {
  const ours = await client.beta.sessions.create({ agent: agents.chat, environment_id: envId, title: 'Ours alone' });
  const page = await signedIn(await api.key('intruder'));
  await page.getByText('No sessions yet').waitFor();
  expect(await page.locator('body').innerText()).not.toContain('Ours alone');
  await page.getByRole('link', { name: 'New session' }).first().click();
  await page.getByText('This workspace needs an agent and an environment first').waitFor();
  expect(await page.getByLabel('Agent').locator('option').count()).toBe(0);
  await page.goto(`${api.url}/console/sessions/${ours.id}`);
  await page.getByRole('heading', { name: 'Session not found' }).waitFor();
  expect(await page.locator('body').innerText()).not.toContain('Ours alone');
});

it('lists the sessions newest first with agent, status and usage, filters them, and stays usable on a phone', async () => {
  // One session left waiting on a confirmation, as the list names it.
  const pending = await client.beta.sessions.create({
    agent: agents.careful,
    environment_id: envId,
    title: 'Deploy to staging',
  });
  h.mock.script(pending.id, {
    steps: [{ reply: { content: [{ type: 'tool_use', name: 'bash', input: { command: 'make deploy' } }] } }],
  });
  await client.beta.sessions.events.send(pending.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'deploy it' }] }],
  });
  const page = await signedIn(await api.key());
  const rows = page.locator('table.sessions tbody tr');
  await rows.filter({ hasText: 'Deploy to staging' }).getByText('waiting for your action on 1 call').waitFor();
  const titles = await rows.locator('td[data-label="Title"] a').allTextContents();
  expect(titles.slice(0, 7)).toEqual([
    'Deploy to staging',
    'Ours alone',
    'Refused request',
    'Slow thinker',
    'Pick a colour',
    'Careful pushes',
    'Tidy the notes',
  ]);
  const tidy = rows.filter({ hasText: 'Tidy the notes' });
  await expect(tidy.locator('td[data-label="Agent"]').innerText()).resolves.toBe('chat v1');
  await tidy.getByText('waiting for a message').waitFor();
  // claude-sonnet-4-5 has a list price: the cost column is filled.
  await expect(tidy.locator('td[data-label="Cost"]').innerText()).resolves.toMatch(/^\$\d/);
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-sessions.png') });

  await page.getByLabel('Agent').selectOption({ label: 'careful' });
  await page.getByRole('link', { name: 'Ours alone' }).waitFor({ state: 'detached' });
  await page.getByRole('link', { name: 'Deploy to staging' }).waitFor();
  await expect(rows.locator('td[data-label="Title"] a').allTextContents()).resolves.toEqual([
    'Deploy to staging',
    'Careful pushes',
  ]);
  await page.getByLabel('Agent').selectOption({ label: 'All agents' });
  await page.getByLabel('Status').selectOption({ label: 'Terminated' });
  await page.getByText('No sessions match these filters').waitFor();

  const careful = (await client.beta.sessions.list({ agent_id: agents.careful })).data.find(
    (x) => x.title === 'Careful pushes',
  )!;
  const phone = await signedIn(await api.key(), `/console/sessions/${careful.id}`, { width: 390, height: 844 });
  await phone.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Both settled.' }).waitFor();
  const overflow = (await phone.evaluate(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  )) as number;
  expect(overflow).toBeLessThanOrEqual(0);
  await phone.getByLabel('Message', { exact: true }).waitFor();
  await phone.screenshot({ path: path.join(ARTIFACTS, 'console-session-phone.png') });
});

it('pages through more sessions than fit a page, newest first', async () => {
  for (let i = 1; i <= 14; i++)
    await client.beta.sessions.create({ agent: agents.chat, environment_id: envId, title: `Filler ${i}` });
  const page = await signedIn(await api.key());
  const titles = page.locator('table.sessions tbody tr td[data-label="Title"] a');
  await page.getByRole('link', { name: 'Filler 14' }).waitFor();
  await expect(titles.count()).resolves.toBe(20);
  expect(await page.getByRole('link', { name: 'Tidy the notes' }).count()).toBe(0);
  await page.getByRole('button', { name: 'Older' }).click();
  await page.getByRole('link', { name: 'Tidy the notes' }).waitFor();
  await expect(titles.allTextContents()).resolves.toEqual(['Tidy the notes']);
  expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
  await page.getByRole('button', { name: 'Newer' }).click();
  await page.getByRole('link', { name: 'Filler 14' }).waitFor();
});

/** True once the centre of `button` is inside the window and a click there would reach it, not what covers it. */
async function clearInView(page: Page, button: ReturnType<Page['getByRole']>): Promise<void> {
  const handle = await button.elementHandle();
  await page.waitForFunction((el) => {
    const w = globalThis as unknown as {
      innerWidth: number;
      innerHeight: number;
      document: { elementFromPoint(x: number, y: number): unknown };
    };
    const r = el!.getBoundingClientRect();
    const x = r.left + r.width / 2;
    const y = r.top + r.height / 2;
    return (
      x >= 0 &&
      y >= 0 &&
      x <= w.innerWidth &&
      y <= w.innerHeight &&
      el!.contains(w.document.elementFromPoint(x, y) as typeof el)
    );
  }, handle);
}

it.each([
  ['a desktop window', { width: 1280, height: 800 }],
  ['a phone', { width: 390, height: 844 }],
])(
  "brings a pending approval's Allow and Deny into view clear of the message box on %s, and Allow resolves it",
  async (_, viewport) => {
    const s = await client.beta.sessions.create({
      agent: agents.careful,
      environment_id: envId,
      title: `Long plan at ${viewport.width}`,
    });
    const plan = Array.from({ length: 40 }, (_, i) => `Step ${i + 1}: look at the next part of the tree.`).join('\n');
    h.mock.script(s.id, {
      steps: [
        {
          reply: {
            content: [
              { type: 'text', text: plan },
              { type: 'tool_use', name: 'bash', input: { command: 'echo after-the-plan' } },
            ],
          },
        },
        { reply: { content: [{ type: 'text', text: 'Plan carried out.' }] } },
      ],
    });
    const page = await signedIn(await api.key(), `/console/sessions/${s.id}`, viewport);
    await page.getByRole('heading', { name: `Long plan at ${viewport.width}` }).waitFor();
    await send(page, 'make a plan and run it');
    const call = calls(page, 'bash').last();
    await call.getByText('Waiting for your approval.').waitFor();
    // The page is taller than the window, so the call could sit under the sticky message box or out of view.
    expect((await page.evaluate('document.documentElement.scrollHeight - innerHeight')) as number).toBeGreaterThan(0);
    for (const name of ['Allow', 'Deny']) {
      const button = call.getByRole('button', { name });
      await clearInView(page, button);
      // Playwright's own check: the element would receive the click (it fails when another element would).
      await button.click({ trial: true, timeout: 5_000 });
    }
    await page.screenshot({
      path: path.join(ARTIFACTS, viewport.width < 700 ? 'console-approval-phone.png' : 'console-approval.png'),
    });
    await call.getByRole('button', { name: 'Allow' }).click();
    await call.getByText('allowed', { exact: true }).waitFor();
    await call.getByText('after-the-plan').last().waitFor();
    await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Plan carried out.' }).waitFor();
    expect((await events(s.id)).filter((e) => e.type === 'user.tool_confirmation')).toMatchObject([
      { result: 'allow' },
    ]);
  },
);

it("marks the sandbox provisioned, then lost to a killed container and provisioned again, in the log's order", async () => {
  const s = await client.beta.sessions.create({ agent: agents.chat, environment_id: envId, title: 'Sandbox swap' });
  const bash = (command: string) => ({
    reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
  });
  const text = (t: string) => ({ reply: { content: [{ type: 'text' as const, text: t }] } });
  h.mock.script(s.id, {
    steps: [
      bash('echo kept > notes.txt'),
      text('Written.'),
      bash('cat notes.txt'),
      bash('cat notes.txt'),
      text('Read them back.'),
    ],
  });
  const d = await docker();
  try {
    const page = await signedIn(await api.key(), `/console/sessions/${s.id}`);
    const markers = page.getByRole('listitem', { name: /^Sandbox main / });
    await send(page, 'write the notes');
    await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Written.' }).waitFor();
    await page.getByRole('listitem', { name: /^Sandbox main provisioned in \d+\.\d s$/ }).waitFor();

    const [container] = await sessionContainers(d, s.id, false);
    await d.getContainer(container.Id).kill();
    await send(page, 'read them back');
    await page.getByRole('listitem', { name: 'Agent message' }).filter({ hasText: 'Read them back.' }).waitFor();
    const lost = page.getByRole('listitem', { name: 'Sandbox main lost' });
    await lost.getByText('the next call gets a new one', { exact: false }).waitFor();
    const names = await markers.evaluateAll((els) => els.map((el) => el.getAttribute('aria-label')));
    expect(names.map((n) => n?.replace(/ in \d+\.\d s$/, ''))).toEqual([
      'Sandbox main provisioned',
      'Sandbox main lost',
      'Sandbox main provisioned',
    ]);
    // The call that found it gone shows its error; the next one ran in the new sandbox with the files.
    await calls(page, 'bash').nth(1).locator('.result.is-error').waitFor();
    await calls(page, 'bash').nth(2).locator('.result').getByText('kept', { exact: false }).waitFor();
    // The loss and the replacement in view, below the sticky header.
    const header = (await page.locator('.bar').boundingBox())!.height;
    await page.evaluate(`window.scrollBy(0, ${(await lost.boundingBox())!.y - header - 12})`);
    const box = (await lost.boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(header);
    expect(box.y + box.height).toBeLessThanOrEqual(800);
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-session-sandbox.png') });

    const phone = await signedIn(await api.key(), `/console/sessions/${s.id}`, { width: 390, height: 844 });
    await phone.getByRole('listitem', { name: 'Sandbox main lost' }).waitFor();
    expect(
      (await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number,
    ).toBeLessThanOrEqual(0);
  } finally {
    await client.beta.sessions.delete(s.id).catch(() => undefined);
  }
});

it('serves the console beside the API without changing it: own origin only, the envelope for unknown files', async () => {
  const origin = new URL(api.url).origin;
  expect(requested.length).toBeGreaterThan(0);
  expect(requested.filter((u) => new URL(u).origin !== origin)).toEqual([]);
  expect(requested.filter((u) => /key|sk-/i.test(new URL(u).search))).toEqual([]);
  const page = await fetch(`${api.url}/console/sessions/sesn_x`);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
  const missing = await fetch(`${api.url}/console/static/nope.js`);
  expect(missing.status).toBe(404);
  expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  const doc = (await (await fetch(`${api.url}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
  expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/v1/'))).toEqual([]);
  expect((await fetch(`${api.url}/v1/sessions`)).status).toBe(401);
});
