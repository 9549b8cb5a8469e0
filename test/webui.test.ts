// The Temporal Web UI, in headless Chromium: a session is found by its search attributes and its history shows
// the session's events with readable activity summaries, decoded through our codec endpoint.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { Client, Connection } from '@temporalio/client';
import { CodecServer } from '../src/codec/codec-server';
import { EncryptionCodec, parseCodecKeys } from '../src/codec';
import { startDevServer, type DevServer } from '../src/infra/temporal-cli';
import { ensureChromium } from '../src/infra/chromium';
import { MockModelServer } from '../src/dev/model-server';
import { startSessionRun } from '../src/session-ops';
import { installRuntime, type RunningWorker } from '../src/worker';
import { endSignal } from '../src/session/contract';
import { TEST_CODEC_KEY } from './helpers/test-keys';
import {
  freePort,
  startTestWorker,
  temporalCliPath,
  testAgent,
  testDataConverter,
  turnDone,
  uniqueId,
  waitForEvents,
} from './helpers/env';
import { grpcInterceptors } from '../src/temporal-connection';

const ARTIFACTS = path.join(__dirname, 'artifacts');

let server: DevServer | undefined;
let codec: CodecServer | undefined;
let mock: MockModelServer | undefined;
let worker: RunningWorker | undefined;
let connection: Connection | undefined;
let browser: Browser | undefined;
let client: Client;
let uiUrl: string;

beforeAll(async () => {
  installRuntime('WARN');
  const uiPort = await freePort();
  codec = new CodecServer({
    codec: new EncryptionCodec(parseCodecKeys(TEST_CODEC_KEY)),
    origins: [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`],
    namespaces: ['default'],
  });
  const codecUrl = await codec.start();
  server = await startDevServer({ cli: temporalCliPath(), port: await freePort(), uiPort, uiCodecEndpoint: codecUrl });
  uiUrl = `http://127.0.0.1:${uiPort}`;
  mock = new MockModelServer();
  await mock.start();
  worker = await startTestWorker(server.address, mock.url);
  connection = await Connection.connect({ address: server.address, interceptors: grpcInterceptors() });
  client = new Client({ connection, dataConverter: testDataConverter() });
  browser = await chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await worker?.shutdown().catch(() => undefined);
  await connection?.close();
  await mock?.stop();
  await codec?.stop();
  await server?.stop();
});

/** Waits until the visibility store lists exactly `id` for `query` (it is updated a moment after each upsert). */
async function waitForList(query: string, id: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ids: string[] = [];
    for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
    if (ids.length === 1 && ids[0] === id) return;
    if (Date.now() > deadline) throw new Error(`${query} lists ${JSON.stringify(ids)}, not [${id}]`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

it('finds a session by AgentName and shows its history with activity summaries', async () => {
  const name = uniqueId('webui');
  const agent = testAgent({ name, tools: ['session_events'] });
  const id = uniqueId('ses-webui');
  mock!.script(id, {
    steps: [{ reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 0 } }] } }],
  });
  const handle = await startSessionRun(client, {
    workflowId: id,
    input: { agent, message: { text: 'Read your own log, please.' } },
    agent,
    firstMessage: 'Read your own log, please.',
  });
  await waitForEvents(handle, turnDone(1));
  // The workflow keeps the state attribute current; the memo carries the first message.
  const query = `AgentName="${name}"`;
  await waitForList(`${query} AND AgentSessionState="waiting_for_user" AND AgentModel="claude-test"`, id);
  expect((await handle.describe()).memo).toEqual({ firstMessage: 'Read your own log, please.' });

  const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
  try {
    await page.goto(`${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
    // The list is filtered by the search attribute: our session is the one row.
    const link = page.getByRole('link', { name: id });
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    await page.waitForURL(new RegExp(`/workflows/${id}/`), { timeout: 30_000 });
    await page.getByText('model turn 1').first().waitFor({ timeout: 30_000 });
    await page.getByText('model turn 2').first().waitFor({ timeout: 30_000 });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'webui-session-history.png'), fullPage: true });
    const text = await page.locator('body').innerText();
    expect(text).toContain(id);
    expect(text).toContain('callModel');
    expect(text).toContain('model turn 1');
    await page.getByRole('tab', { name: 'Memo' }).click();
    await page.getByText('Read your own log, please.').first().waitFor({ timeout: 15_000 });
  } finally {
    await page.close();
    await handle.signal(endSignal, { reason: 'done' });
  }
});
