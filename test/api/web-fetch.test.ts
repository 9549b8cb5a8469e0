// web_fetch, driven only by the SDK: an agent whose toolset enables it, a session whose model calls it, and the
// page fetched on a tools worker through the egress gate. Two loopback servers stand in for the web: one on
// 127.0.0.1 that EGRESS_ALLOW opens, one on 127.0.0.2 that it does not, whose answer must never reach the model.
import Anthropic from '@anthropic-ai/sdk';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningWorker } from '../../src/worker';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, startTestWorker, type Harness } from '../helpers/env';

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

const SECRET = 'internal-service-secret-9f27';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let tools: RunningWorker;
let envId: string;
let open: http.Server;
let closed: http.Server;
let site: string;
let inside: string;

const listen = (server: http.Server, host: string) =>
  new Promise<string>((resolve) =>
    server.listen(0, host, () => resolve(`http://${host}:${(server.address() as AddressInfo).port}`)),
  );

beforeAll(async () => {
  closed = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(SECRET));
  inside = await listen(closed, '127.0.0.2');
  open = http.createServer((req, res) => {
    if (req.url === '/page')
      return res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(
          '<html><head><title>Release notes</title><script>var hidden = 1;</script></head><body><h1>Version 2</h1><p>Fetching works <b>now</b>.</p></body></html>',
        );
    if (req.url === '/long') return res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(100_000));
    if (req.url === '/inside') return res.writeHead(302, { location: `${inside}/` }).end();
    if (req.url === '/image') return res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(64));
    if (req.url === '/busy') return res.writeHead(429, { 'content-type': 'text/plain' }).end('slow down');
    res.writeHead(404).end();
  });
  site = await listen(open, '127.0.0.1');
  process.env.EGRESS_ALLOW = new URL(site).host;
  h = await startHarness();
  api = await startApiOn(h);
  client = await api.client();
  tools = await startTestWorker(h.env.address, h.mock.url, {
    role: 'tools',
    vaultKey: api.vaultKey,
    apiDb: () => api.db,
  });
  envId = (await client.beta.environments.create({ name: 'web-env' })).id;
});
afterAll(async () => {
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
  delete process.env.EGRESS_ALLOW;
  await new Promise((r) => open?.close(r));
  await new Promise((r) => closed?.close(r));
});

async function eventsUntil(id: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  let events: Event[] = [];
  for (let i = 0; i < 600; i++) {
    events = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `session ${id} did not get there: ${JSON.stringify(events.map((e) => (e.type === 'session.error' ? e : e.type)))}`,
  );
}
const idle = (stop: string) => (events: Event[]) =>
  events.some(
    (e) => e.type === 'session.status_idle' && (e as { stop_reason: { type: string } }).stop_reason.type === stop,
  );
const fetchStep = (url: string) => ({
  reply: { content: [{ type: 'tool_use' as const, name: 'web_fetch', input: { url } }] },
});
const done = { reply: { content: [{ type: 'text' as const, text: 'Read it.' }] } };
const resultText = (e: Event) =>
  ((e as { content: { type: string; text?: string }[] }).content ?? []).map((b) => b.text ?? '').join('');

/** A session of an agent with `webFetch` config whose model fetches each of `urls` in turn; its tool results. */
async function fetchAll(webFetch: Record<string, unknown>, urls: string[]) {
  const agent = await client.beta.agents.create({
    name: 'reader',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'web_fetch', ...webFetch } as never] }],
  });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  h.mock.script(s.id, { steps: [...urls.map(fetchStep), done] });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'read these' }] }],
  });
  const events = await eventsUntil(s.id, idle('end_turn'));
  return {
    id: s.id,
    results: events.filter((e) => e.type === 'agent.tool_result') as (Event & { is_error: boolean })[],
  };
}

it("offers web_fetch and answers with the page's text, fetched through the egress gate and capped", async () => {
  const { id, results } = await fetchAll({ max_content_tokens: 100 }, [`${site}/page`, `${site}/long`]);
  expect(results.map((r) => r.is_error)).toEqual([false, false]);
  const page = resultText(results[0]);
  expect(page).toContain(`URL: ${site}/page`);
  expect(page).toContain('Title: Release notes');
  expect(page).toContain('Fetching works now.');
  expect(page).not.toContain('hidden');
  expect(page).not.toContain('<p>');
  const long = resultText(results[1]);
  expect(long).toContain('[output truncated:');
  expect(long.length).toBeLessThan(1000);
  // The model was offered the tool with its one input, url.
  const offered = h.mock.requests(id)[0].body.tools as { name: string; input_schema: { required?: string[] } }[];
  expect(offered.find((t) => t.name === 'web_fetch')?.input_schema.required).toEqual(['url']);
});

it('answers a refused address, a redirect to one, other content types and a 429 with tool errors that leak nothing of the refused service', async () => {
  const { results } = await fetchAll({}, [inside, `${site}/inside`, `${site}/image`, `${site}/busy`]);
  expect(results.map((r) => r.is_error)).toEqual([true, true, true, true]);
  const [direct, redirect, image, busy] = results.map(resultText);
  expect(direct).toMatch(/^web_fetch error \(url_not_allowed\): egress refused 127\.0\.0\.2:\d+: /);
  expect(redirect).toMatch(
    /^web_fetch error \(url_not_allowed\): a redirect was refused: egress refused 127\.0\.0\.2:\d+: /,
  );
  expect(image).toMatch(/^web_fetch error \(unsupported_content_type\): .* is image\/png/);
  expect(busy).toMatch(/^web_fetch error \(too_many_requests\)/);
  for (const r of results) expect(resultText(r)).not.toContain(SECRET);
});

it('enforces allowed_domains and blocked_domains, each redirect too', async () => {
  const allowed = await fetchAll({ allowed_domains: ['127.0.0.1'] }, [`${site}/page`, `${site}/inside`]);
  expect(allowed.results.map((r) => r.is_error)).toEqual([false, true]);
  expect(resultText(allowed.results[1])).toMatch(/url_not_allowed.*127\.0\.0\.2 is not in the agent's allowed_domains/);
  const other = await fetchAll({ allowed_domains: ['docs.example.com'] }, [`${site}/page`]);
  expect(resultText(other.results[0])).toMatch(
    /^web_fetch error \(url_not_allowed\): refused http:\/\/127\.0\.0\.1:\d+: 127\.0\.0\.1 is not in the agent's allowed_domains/,
  );
  const blocked = await fetchAll({ blocked_domains: ['127.0.0.1'] }, [`${site}/page`]);
  expect(resultText(blocked.results[0])).toMatch(/url_not_allowed.*127\.0\.0\.1 is in the agent's blocked_domains/);
});

it('asks before fetching when its permission_policy is always_ask', async () => {
  const agent = await client.beta.agents.create({
    name: 'careful',
    model: 'claude-test',
    tools: [
      { type: 'agent_toolset_20260401', configs: [{ name: 'web_fetch', permission_policy: { type: 'always_ask' } }] },
    ],
  });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  h.mock.script(s.id, { steps: [fetchStep(`${site}/page`), done] });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'read it' }] }],
  });
  const waiting = await eventsUntil(s.id, idle('requires_action'));
  const use = waiting.find((e) => e.type === 'agent.tool_use')!;
  expect(waiting.some((e) => e.type === 'agent.tool_result')).toBe(false);
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' }],
  });
  const events = await eventsUntil(s.id, idle('end_turn'));
  expect(resultText(events.find((e) => e.type === 'agent.tool_result')!)).toContain('Fetching works now.');
});

it('refuses enabling web_search with a 400 that says no search backend exists', async () => {
  await expect(
    client.beta.agents.create({
      name: 'searcher',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'web_search', enabled: true }] }],
    }),
  ).rejects.toThrow(/web_search is not offered to the model on this platform \(no search backend exists\)/);
});
