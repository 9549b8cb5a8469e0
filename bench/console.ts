// The web console: its bundle's size, and the time from navigating to a session page to all of its events rendered
// in headless Chromium, for a real session of 1,000 API events against one of 100, beside the time the same browser
// takes only to list those 1,000 events from the API (the page's own share is the difference); and, with a page
// open on a long session, the time from sending a message to its reply shown, on 1,000 events against 100.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import { chromium, type Page } from 'playwright-core';
import { CONSOLE_STATIC } from '../src/console/bundle-paths';
import { ensureChromium } from '../src/infra/chromium';
import { ArchivedSessionLog, LiveSessionLog } from '../src/log/session-log';
import { sendMessageUpdate } from '../src/session/contract';
import { startTestApi } from '../test/helpers/api';
import { testArchive } from '../test/helpers/env';
import { armStats, interleave, ratio, waitLive, type BenchResult, type Ctx } from './lib';

const ARMS = ['page_1000', 'page_100', 'list_1000'] as const;
const UPDATE_ARMS = ['update_1000', 'update_100'] as const;

/** Files of the bundle with their raw and gzip sizes, as the server sends them (it does not compress). */
function bundleSizes(): Record<string, { bytes: number; gzipBytes: number }> {
  if (!fs.existsSync(path.join(CONSOLE_STATIC, 'index.html')))
    throw new Error('the console is not built: run npm run build');
  return Object.fromEntries(
    fs.readdirSync(CONSOLE_STATIC).map((f) => {
      const body = fs.readFileSync(path.join(CONSOLE_STATIC, f));
      return [f, { bytes: body.length, gzipBytes: zlib.gzipSync(body, { level: 9 }).length }];
    }),
  );
}

/** Runs turns of one short message and its echoed reply until the session's API log holds at least `events`. */
async function grow(client: Anthropic, ctx: Ctx, id: string, events: number): Promise<number> {
  const handle = ctx.stack.client.workflow.getHandle(id);
  // A turn is six API events: user.message, status_running, the model request's span start, agent.message, span end, status_idle.
  for (let t = 1; t <= Math.ceil(events / 6); t++) {
    const { seq } = await handle.executeUpdate(sendMessageUpdate, {
      args: [{ text: `turn ${t}: please answer with a short line` }],
    });
    await waitLive(handle, (ev) => ev.some((e) => e.seq > seq && e.type === 'assistant_message'), 60_000, 5, seq);
    if (t % 50 === 0) ctx.log(`${id}: ${t} turns`);
  }
  let n = 0;
  for await (const _ of client.beta.sessions.events.list(id)) n++;
  return n;
}

/** How many events the page shows. A function, not a string (the console's CSP refuses eval); no DOM types here. */
const shownEvents = () => {
  const doc = (
    globalThis as unknown as {
      document: { querySelector(s: string): { getAttribute(a: string): string | null } | null };
    }
  ).document;
  return Number(doc.querySelector('ol.log')?.getAttribute('data-events') ?? 0);
};

async function untilShown(page: Page, count: number): Promise<void> {
  const atLeast = (n: number) => {
    const doc = (
      globalThis as unknown as {
        document: { querySelector(s: string): { getAttribute(a: string): string | null } | null };
      }
    ).document;
    return Number(doc.querySelector('ol.log')?.getAttribute('data-events') ?? 0) >= n;
  };
  await page.waitForFunction(atLeast, count, { polling: 'raf', timeout: 60_000 });
}

/** Navigates to the session's page and waits until it shows `count` events, polling each animation frame. */
async function firstRender(page: Page, url: string, count: number): Promise<number> {
  await page.bringToFront();
  await page.goto('about:blank');
  const t0 = performance.now();
  await page.goto(url);
  await untilShown(page, count);
  return performance.now() - t0;
}

async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sessions' }).waitFor();
}

export async function runConsole(ctx: Ctx): Promise<BenchResult[]> {
  const { stack, quick } = ctx;
  const worker = await stack.worker({ role: 'brain' });
  const api = await startTestApi('postgres', ['default'], {
    client: stack.client,
    archive: testArchive(),
    log: new ArchivedSessionLog(testArchive(), new LiveSessionLog(stack.client)),
  });
  const browser = await chromium.launch({ executablePath: await ensureChromium(), args: ['--no-sandbox'] });
  try {
    const client = await api.client();
    const agent = await client.beta.agents.create({ name: 'bench-console', model: 'claude-test' });
    const env = await client.beta.environments.create({ name: 'bench-console' });
    const sizes: Record<string, number> = {};
    const ids: Record<string, string> = {};
    for (const [arm, n] of [
      ['big', 1000],
      ['small', 100],
      ['bigLive', 1000],
      ['smallLive', 100],
    ] as const) {
      const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, title: `bench ${n}` });
      // The log's size is the point, not the model's latency: it answers at once.
      stack.mock.script(s.id, { firstByteDelayMs: 0 });
      ids[arm] = s.id;
      sizes[arm] = await grow(client, ctx, s.id, n);
      ctx.log(`session ${s.id}: ${sizes[arm]} API events`);
    }
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const key = await api.key();
    const page = await context.newPage();
    await signIn(page, api.url, key);
    const sessionUrl = (id: string) => `${api.url}/console/sessions/${id}`;
    const samples = await interleave(
      ARMS,
      quick ? 5 : 15,
      2,
      async (arm) => {
        if (arm === 'page_1000') return firstRender(page, sessionUrl(ids.big), sizes.big);
        if (arm === 'page_100') return firstRender(page, sessionUrl(ids.small), sizes.small);
        // The same list the page reads, from the same browser, with no rendering.
        return (await page.evaluate(`(async () => {
          const key = sessionStorage.getItem('managed-agents.console.key') ?? '';
          const t0 = performance.now();
          const r = await fetch('/v1/sessions/${ids.big}/events', { headers: { 'x-api-key': key, 'anthropic-beta': 'managed-agents-2026-04-01' } });
          await r.json();
          return performance.now() - t0;
        })()`)) as number;
      },
      ctx.log,
    );
    // A page open on a long session: from sending a message to its reply shown (a model turn that answers at once,
    // the stream's poll, the render), on a page of 1,000 events against one of 100.
    const live: Record<string, Page> = {};
    for (const arm of ['bigLive', 'smallLive']) {
      live[arm] = await context.newPage();
      await signIn(live[arm], api.url, key);
      await live[arm].goto(sessionUrl(ids[arm]));
      await untilShown(live[arm], sizes[arm]);
    }
    let sent = 0;
    const updates = await interleave(
      UPDATE_ARMS,
      quick ? 5 : 15,
      2,
      async (arm) => {
        const tab = live[arm === 'update_1000' ? 'bigLive' : 'smallLive'];
        const id = ids[arm === 'update_1000' ? 'bigLive' : 'smallLive'];
        // The tab the user looks at: a background tab's timers and animation frames are throttled to one a second.
        await tab.bringToFront();
        const before = await tab.evaluate(shownEvents);
        const t0 = performance.now();
        await client.beta.sessions.events.send(id, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: `update ${++sent}` }] }],
        });
        // A turn is six events; the reply's agent.message is the fourth.
        await untilShown(tab, before + 6);
        return performance.now() - t0;
      },
      ctx.log,
    );
    const arms = Object.fromEntries([
      ...ARMS.map((a) => [a, armStats(samples[a])] as const),
      ...UPDATE_ARMS.map((a) => [a, armStats(updates[a])] as const),
    ]);
    const bundle = bundleSizes();
    const total = Object.values(bundle).reduce(
      (a, b) => ({ bytes: a.bytes + b.bytes, gzipBytes: a.gzipBytes + b.gzipBytes }),
      { bytes: 0, gzipBytes: 0 },
    );
    const scaling = ratio(arms.page_1000, arms.page_100);
    const overList = ratio(arms.page_1000, arms.list_1000);
    const updateScaling = ratio(arms.update_1000, arms.update_100);
    return [
      {
        name: 'console',
        arms,
        ratioTo: { page_1000: 'page_100', update_1000: 'update_100' },
        events: sizes,
        bundle,
        bundleBytes: total.bytes,
        bundleGzipBytes: total.gzipBytes,
        ratios: {
          page1000OverPage100: scaling,
          page1000OverList1000: overList,
          update1000OverUpdate100: updateScaling,
        },
        notes:
          `bundle ${(total.bytes / 1024).toFixed(1)} KiB (${(total.gzipBytes / 1024).toFixed(1)} KiB gzipped: ${Object.entries(
            bundle,
          )
            .map(([f, s]) => `${f} ${s.bytes} B`)
            .join(', ')}); ` +
          `first render of a session page with ${sizes.big} events ${arms.page_1000.p50Ms} ms at p50 (${arms.page_1000.p95Ms} ms p95), ${scaling.p50}× one of ${sizes.small}; ` +
          `listing those events alone takes ${arms.list_1000.p50Ms} ms in the same browser (page / list ${overList.p50} at p50). ` +
          `A sent message's reply (a turn of six events) shows on a page of ${sizes.bigLive} events in ${arms.update_1000.p50Ms} ms at p50, ${updateScaling.p50}× on one of ${sizes.smallLive}. Chromium headless, 1280×800.`,
      },
    ];
  } finally {
    await browser.close().catch(() => undefined);
    await api.stop().catch(() => undefined);
    await worker.shutdown().catch(() => undefined);
  }
}
