// The event stream across handovers: the dev server suggests continue-as-new after a few dozen history events
// (its own `limit.historyCount.suggestContinueAsNew`, as a server near its history limit would), so a session
// created through the API hands over every few turns with no field of the public API involved. Two streams open
// on the session keep delivering through every handover: every event once, in order, the same on both.
import type { BetaManagedAgentsStreamSessionEvents } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import { projectLog } from '../../src/api/sessions/projection';
import { feedStats } from '../../src/api/sessions/feed';
import { doorbellStats } from '../../src/log/history-doorbell';
import { ArchivedSessionLog, LiveSessionLog, readEvents } from '../../src/log/session-log';
import { statusQuery } from '../../src/session/contract';
import { startTestApi, testSessionDeps, type TestApi } from '../helpers/api';
import { runsOf, startHarness, testArchive, type Harness } from '../helpers/env';

let h: Harness;
let api: TestApi;
const log = () => new ArchivedSessionLog(testArchive(), new LiveSessionLog(h.env.client));

beforeAll(async () => {
  h = await startHarness({ serverArgs: ['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=40'] });
  try {
    api = await startTestApi('postgres', ['default'], testSessionDeps(h.env.client));
  } catch (e) {
    await h.stop();
    throw e;
  }
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

type Seen = { type: string; id: string; text?: string };

/** Reads `stream` until `turns` turns have gone idle; `onIdle` hears each. */
async function collect(
  stream: AsyncIterable<BetaManagedAgentsStreamSessionEvents>,
  turns: number,
  onIdle: () => void,
): Promise<Seen[]> {
  const seen: Seen[] = [];
  let idles = 0;
  for await (const e of stream) {
    const text = e.type === 'agent.message' ? e.content.map((b) => ('text' in b ? b.text : '')).join('') : undefined;
    seen.push({ type: e.type, id: (e as { id: string }).id, ...(text !== undefined ? { text } : {}) });
    if (e.type === 'session.status_idle') {
      onIdle();
      if (++idles === turns) break;
    }
  }
  return seen;
}

it('keeps two streams delivering across handovers of the session run: every event once, in order, on both', async () => {
  const TURNS = 12;
  const client = await api.client();
  const agent = await client.beta.agents.create({ name: 'chat', model: 'claude-test' });
  const environment = await client.beta.environments.create({ name: 'env' });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });

  const idled: Array<() => void> = [];
  const a = collect(await client.beta.sessions.events.stream(session.id), TURNS, () => idled.shift()?.());
  const b = collect(await client.beta.sessions.events.stream(session.id), TURNS, () => undefined);
  for (let i = 0; i < TURNS; i++) {
    const idle = new Promise<void>((resolve) => idled.push(resolve));
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: `turn ${i}` }] }],
    });
    await idle;
  }
  const [seenA, seenB] = await Promise.all([a, b]);

  // The streams were woken by the history long poll, not by a fallback poll of the log, and took events from the
  // worker's pushed batches once the history had their tasks' completions.
  expect(doorbellStats.rings).toBeGreaterThan(0);
  expect(feedStats.pushedEvents).toBeGreaterThan(0);
  // The session handed over more than once while the streams were open.
  const status = await h.env.client.workflow.getHandle(session.id).query(statusQuery);
  expect(status.run).toBeGreaterThanOrEqual(3);
  expect(status.firstSeq).toBeGreaterThan(0);
  expect(
    (await runsOf(h.env.client, session.id)).filter((r) => r.status.name === 'CONTINUED_AS_NEW').length,
  ).toBeGreaterThanOrEqual(2);

  const turn = [
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ];
  expect(seenA.map((e) => e.type)).toEqual(Array.from({ length: TURNS }, () => turn).flat());
  expect(new Set(seenA.map((e) => e.id)).size).toBe(seenA.length);
  expect(seenA.filter((e) => e.type === 'agent.message').map((e) => e.text)).toEqual(
    Array.from({ length: TURNS }, (_, i) => `You said: turn ${i}`),
  );
  expect(seenB).toEqual(seenA);
  // What the streams carried is what a client listing the log afterwards reads, the sealed runs included.
  const listed = [];
  for await (const e of client.beta.sessions.events.list(session.id)) listed.push(e.id);
  expect(listed).toEqual(seenA.map((e) => e.id));
  // ... and what the API's cached, incremental projection lists is the whole log folded afresh.
  expect(projectLog(session.id, await readEvents(log(), session.id, 0)).map((e) => e.id)).toEqual(listed);
});
