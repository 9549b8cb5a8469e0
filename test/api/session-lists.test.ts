// sessions.list and events.list through the SDK, on a real Temporal dev server, brain worker and local model: each
// filter the SDK can send filters, cursors carry their order, sessions page both ways with prev_page, and events
// appended between pages are neither repeated nor skipped, in either order.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { endSignal } from '../../src/session/contract';

type Ev = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;
let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;

beforeAll(async () => {
  h = await startHarness({ role: 'brain' });
  api = await startApiOn(h, ['default']);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

async function all<T>(page: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of page) out.push(x);
  return out;
}
const ids = (xs: { id: string }[]) => xs.map((x) => x.id);

async function until<T>(what: string, get: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await get();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not happen`);
}
const events = (id: string) => all(client.beta.sessions.events.list(id));
const idles = (n: number) => (es: Ev[]) => es.filter((e) => e.type === 'session.status_idle').length >= n;
async function turn(id: string, text: string, n: number): Promise<Ev[]> {
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
  return until(`turn ${n} of ${id}`, () => events(id), idles(n));
}

describe('sessions.list', () => {
  it('filters by agent_id and agent_version, and refuses agent_version alone', async () => {
    const agent = await client.beta.agents.create({ name: 'by-version', model: 'claude-test' });
    const v1 = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    await client.beta.agents.update(agent.id, { version: 1, system: 'two' });
    const v2 = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const other = await client.beta.agents.create({ name: 'other', model: 'claude-test' });
    const elsewhere = await client.beta.sessions.create({ agent: other.id, environment_id: envId });
    expect(ids(await all(client.beta.sessions.list({ agent_id: agent.id })))).toEqual([v2.id, v1.id]);
    expect(ids(await all(client.beta.sessions.list({ agent_id: agent.id, agent_version: 1 })))).toEqual([v1.id]);
    expect(ids(await all(client.beta.sessions.list({ agent_id: agent.id, agent_version: 2 })))).toEqual([v2.id]);
    expect(ids(await all(client.beta.sessions.list({ agent_id: other.id })))).toEqual([elsewhere.id]);
    await expect(client.beta.sessions.list({ agent_version: 1 })).rejects.toThrow(/agent_version .*agent_id/);
  });

  it('filters by created_at[gt], [gte], [lt] and [lte] at the times it returned, and orders asc or desc', async () => {
    const agent = await client.beta.agents.create({ name: 'by-time', model: 'claude-test' });
    const made = [];
    for (let i = 0; i < 4; i++)
      made.push(await client.beta.sessions.create({ agent: agent.id, environment_id: envId }));
    const [s1, s2, s3, s4] = made;
    const listed = async (q: Anthropic.Beta.SessionListParams) =>
      ids(await all(client.beta.sessions.list({ agent_id: agent.id, ...q })));
    expect(await listed({})).toEqual([s4.id, s3.id, s2.id, s1.id]);
    expect(await listed({ order: 'asc' })).toEqual([s1.id, s2.id, s3.id, s4.id]);
    expect(await listed({ 'created_at[gt]': s2.created_at })).toEqual([s4.id, s3.id]);
    expect(await listed({ 'created_at[gte]': s2.created_at })).toEqual([s4.id, s3.id, s2.id]);
    expect(await listed({ 'created_at[lt]': s3.created_at })).toEqual([s2.id, s1.id]);
    expect(await listed({ 'created_at[lte]': s3.created_at, order: 'asc' })).toEqual([s1.id, s2.id, s3.id]);
    expect(await listed({ 'created_at[gt]': s1.created_at, 'created_at[lt]': s4.created_at, limit: 1 })).toEqual([
      s3.id,
      s2.id,
    ]);
  });

  it('filters by statuses[] (idle, running, terminated) and hides archived sessions unless include_archived', async () => {
    const agent = await client.beta.agents.create({ name: 'by-status', model: 'claude-test' });
    const idle = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const running = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    h.mock.script(running.id, {
      steps: [{ gate: `hold-${running.id}`, reply: { content: [{ type: 'text', text: 'late' }] } }],
    });
    await client.beta.sessions.events.send(running.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'wait' }] }],
    });
    const ended = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    await h.env.client.workflow.getHandle(ended.id).signal(endSignal, { reason: 'done' });
    const archived = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    await client.beta.sessions.archive(archived.id);
    try {
      await until(
        'the statuses',
        () => Promise.all([running, ended].map((s) => client.beta.sessions.retrieve(s.id))),
        ([r, e]) => r.status === 'running' && e.status === 'terminated',
      );
      const listed = async (q: Anthropic.Beta.SessionListParams) =>
        ids(await all(client.beta.sessions.list({ agent_id: agent.id, limit: 1, ...q })));
      expect(await listed({})).toEqual([ended.id, running.id, idle.id]);
      expect(await listed({ include_archived: true })).toEqual([archived.id, ended.id, running.id, idle.id]);
      expect(await listed({ statuses: ['idle'] })).toEqual([idle.id]);
      expect(await listed({ statuses: ['running'] })).toEqual([running.id]);
      expect(await listed({ statuses: ['terminated'] })).toEqual([ended.id]);
      expect(await listed({ statuses: ['terminated'], include_archived: true })).toEqual([archived.id, ended.id]);
      expect(await listed({ statuses: ['idle', 'running'], order: 'asc' })).toEqual([idle.id, running.id]);
      expect(await listed({ statuses: ['rescheduling'] })).toEqual([]);
      await expect(client.beta.sessions.list({ statuses: ['asleep' as 'idle'] })).rejects.toThrow(
        /statuses\[\]\.0: must be one of/,
      );
    } finally {
      h.mock.release(`hold-${running.id}`);
    }
  });

  it('answers a deployment_id no session came from, and a memory_store_id no session mounts, with an empty page', async () => {
    const agent = await client.beta.agents.create({ name: 'by-store', model: 'claude-test' });
    await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    expect((await client.beta.sessions.list({ agent_id: agent.id })).data).toHaveLength(1);
    expect(await client.beta.sessions.list({ agent_id: agent.id, deployment_id: 'depl_x' })).toMatchObject({
      data: [],
      next_page: null,
      prev_page: null,
    });
    expect(await client.beta.sessions.list({ agent_id: agent.id, memory_store_id: 'memstore_x' })).toMatchObject({
      data: [],
      next_page: null,
      prev_page: null,
    });
  });

  it.each(['desc', 'asc'] as const)(
    'pages forward with next_page and back with prev_page, stable while sessions are created (%s)',
    async (order) => {
      const agent = await client.beta.agents.create({ name: `paging-${order}`, model: 'claude-test' });
      const made: string[] = [];
      for (let i = 0; i < 5; i++)
        made.push((await client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id);
      const p1 = await client.beta.sessions.list({ agent_id: agent.id, order, limit: 2 });
      expect(p1.prev_page).toBeNull();
      const late = (await client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
      const p2 = await p1.getNextPage();
      const p3 = await p2.getNextPage();
      expect(p3.hasNextPage()).toBe(false);
      // Desc began at the newest, so a later session comes before its first page; asc reaches it at the end.
      expect([...ids(p1.data), ...ids(p2.data), ...ids(p3.data)]).toEqual(
        order === 'desc' ? [...made].reverse() : [...made, late],
      );
      const back = await client.beta.sessions.list({ agent_id: agent.id, order, limit: 2, page: p3.prev_page });
      expect(ids(back.data)).toEqual(ids(p2.data));
      const front = await client.beta.sessions.list({ agent_id: agent.id, order, limit: 2, page: back.prev_page });
      expect(ids(front.data)).toEqual(ids(p1.data));
      expect(
        ids((await client.beta.sessions.list({ agent_id: agent.id, order, limit: 2, page: front.next_page })).data),
      ).toEqual(ids(p2.data));
      await expect(
        client.beta.sessions.list({ agent_id: agent.id, order: order === 'asc' ? 'desc' : 'asc', page: p1.next_page }),
      ).rejects.toThrow(new RegExp(`order=${order}`));
      await expect(client.beta.sessions.list({ order, page: p1.next_page })).rejects.toThrow(/other filters/);
    },
  );
});

describe('events.list', () => {
  let sid: string;
  let full: Ev[];
  beforeAll(async () => {
    const agent = await client.beta.agents.create({ name: 'events', model: 'claude-test' });
    sid = (await client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
    await turn(sid, 'one', 1);
    full = await turn(sid, 'two', 2);
  });

  it('filters by types[] and orders asc or desc', async () => {
    const messages = await all(client.beta.sessions.events.list(sid, { types: ['user.message'] }));
    expect(messages.map((e) => e.type)).toEqual(['user.message', 'user.message']);
    const two = await all(
      client.beta.sessions.events.list(sid, { types: ['user.message', 'agent.message'], limit: 1 }),
    );
    expect(ids(two)).toEqual(ids(full.filter((e) => e.type === 'user.message' || e.type === 'agent.message')));
    expect(ids(await all(client.beta.sessions.events.list(sid, { order: 'desc', limit: 4 })))).toEqual(
      ids(full).reverse(),
    );
    await expect(client.beta.sessions.events.list(sid, { types: ['user.nothing' as 'user.message'] })).rejects.toThrow(
      /user\.nothing is not an event type/,
    );
  });

  it('filters by created_at[gt], [gte], [lt] and [lte] against processed_at', async () => {
    const second = full.filter((e) => e.type === 'user.message')[1];
    const t = second.processed_at!;
    const at = (e: Ev) => Date.parse(e.processed_at!);
    const listed = async (q: Anthropic.Beta.Sessions.EventListParams) =>
      ids(await all(client.beta.sessions.events.list(sid, q)));
    const gte = ids(full.filter((e) => at(e) >= Date.parse(t)));
    expect(gte.length).toBeGreaterThan(0);
    expect(gte.length).toBeLessThan(full.length);
    expect(await listed({ 'created_at[gte]': t })).toEqual(gte);
    expect(await listed({ 'created_at[gt]': t })).toEqual(ids(full.filter((e) => at(e) > Date.parse(t))));
    expect(await listed({ 'created_at[lt]': t })).toEqual(ids(full.filter((e) => at(e) < Date.parse(t))));
    expect(await listed({ 'created_at[lte]': t, order: 'desc', limit: 2 })).toEqual(
      ids(full.filter((e) => at(e) <= Date.parse(t))).reverse(),
    );
    await expect(client.beta.sessions.events.list(sid, { 'created_at[gt]': 'soon' })).rejects.toThrow(
      /created_at\[gt\]/,
    );
  });

  it('pages with no repeat and no gap while events are appended between pages, in both orders', async () => {
    const agent = await client.beta.agents.create({ name: 'appends', model: 'claude-test' });
    const s = (await client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
    const before = await turn(s, 'first', 1);
    const asc1 = await client.beta.sessions.events.list(s, { limit: 4 });
    const desc1 = await client.beta.sessions.events.list(s, { order: 'desc', limit: 4 });
    const after = await turn(s, 'second', 2);
    expect(after.length).toBeGreaterThan(before.length);
    const rest = async (p: typeof asc1) => {
      const out = ids(p.data);
      while (p.hasNextPage()) {
        p = await p.getNextPage();
        out.push(...ids(p.data));
      }
      return out;
    };
    // Asc continues through what was appended; desc began at the newest of its time and goes back from there.
    expect(await rest(asc1)).toEqual(ids(after));
    expect(await rest(desc1)).toEqual(ids(before).reverse());
    await expect(client.beta.sessions.events.list(s, { order: 'desc', page: asc1.next_page })).rejects.toThrow(
      /order=asc/,
    );
    await expect(
      client.beta.sessions.events.list(s, { types: ['user.message'], page: asc1.next_page }),
    ).rejects.toThrow(/other filters/);
    await expect(client.beta.sessions.events.list(s, { page: 'x'.repeat(600) })).rejects.toBeInstanceOf(
      Anthropic.BadRequestError,
    );
    await expect(client.beta.sessions.events.list(s, { page: '!!' })).rejects.toThrow(/not a cursor/);
    // A cursor of one session is not one of another's.
    await expect(client.beta.sessions.events.list(sid, { page: asc1.next_page })).rejects.toThrow(/not a cursor/);
  });

  it('resources.list takes limit and page and refuses other parameters by name', async () => {
    expect((await client.beta.sessions.resources.list(sid, { limit: 1 })).data).toEqual([]);
    await expect(client.beta.sessions.resources.list(sid, { order: 'asc' } as never)).rejects.toThrow(
      /order is not a parameter/,
    );
    await expect(client.beta.sessions.resources.list(sid, { page: 'bogus' })).rejects.toThrow(/not a cursor/);
  });
});
