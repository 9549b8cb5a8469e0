// client.beta.sessions against the API server on a real Temporal dev server, brain worker and local model: a
// session from an agent version, its turn read as API events, input through events.send, and its lifecycle.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { resolveDockerHost } from '../../src/host/docker-host';
import { toolStep } from '../helpers/actions';
import { startHarness, type Harness } from '../helpers/env';
import { WORKSPACE_KEY } from '../../src/session/search-attributes';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let agentId: string;
let envId: string;

beforeAll(async () => {
  // Every role: the confirmation and toolset tests run tools in a real sandbox.
  h = await startHarness({ role: 'all', hostId: `api-test-${process.pid}` });
  api = await startApiOn(h, ['default']);
  client = await api.client();
  agentId = (await client.beta.agents.create({ name: 'chat', model: 'claude-test', system: 'Be brief.' })).id;
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

/** Lists the session's events until `done` holds for them. */
async function eventsUntil(
  id: string,
  done: (events: { type: string }[]) => boolean,
): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> {
  for (let i = 0; i < 600; i++) {
    const events = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${id} did not get there`);
}
const idles = (n: number) => (events: { type: string }[]) =>
  events.filter((e) => e.type === 'session.status_idle').length >= n;

it('runs a turn from initial_events and shows it as API events, from status_running to status_idle', async () => {
  const s = await client.beta.sessions.create({
    agent: agentId,
    environment_id: envId,
    title: 'first',
    metadata: { ticket: '42' },
    initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'What is 2+2?' }] }],
  });
  expect(s).toMatchObject({
    type: 'session',
    environment_id: envId,
    title: 'first',
    metadata: { ticket: '42' },
    agent: { id: agentId, version: 1, name: 'chat' },
  });
  expect(s.id).toMatch(/^sesn_/);
  const events = await eventsUntil(s.id, idles(1));
  expect(events.map((e) => e.type)).toEqual([
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ]);
  expect(events[0]).toMatchObject({ content: [{ type: 'text', text: 'What is 2+2?' }] });
  const done = await client.beta.sessions.retrieve(s.id);
  expect(done.status).toBe('idle');
  expect(done.usage.output_tokens).toBeGreaterThan(0);
  // The same session as the Web UI finds it: its workflow carries the key's workspace.
  const run = await h.env.client.workflow.getHandle(s.id).describe();
  expect(run.typedSearchAttributes.get(WORKSPACE_KEY)).toBe('default');
});

it('takes a user.message through events.send and answers it in a second turn', async () => {
  const s = await client.beta.sessions.create({
    agent: { type: 'agent', id: agentId, version: 1 },
    environment_id: envId,
  });
  const sent = await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'hello' }] }],
  });
  expect(sent.data?.[0]).toMatchObject({ type: 'user.message', id: expect.stringMatching(/^sevt_/) });
  const events = await eventsUntil(s.id, idles(1));
  expect(events[0].id).toBe(sent.data?.[0].id);
  expect(events.filter((e) => e.type === 'agent.message')).toHaveLength(1);
});

it('refuses image content and a stale tool reference with a 400, and appends nothing', async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  await expect(
    client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'image', source: { type: 'url', url: 'http://x/y.png' } }] }],
    }),
  ).rejects.toThrow(/image blocks are not supported yet/);
  await expect(
    client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: 'sevt_nope', result: 'allow' }],
    }),
  ).rejects.toThrow(/no tool call sevt_nope/);
  expect((await client.beta.sessions.events.list(s.id)).data).toEqual([]);
});

it('lists, updates, archives and deletes sessions, and hides them from another workspace', async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId, title: 't' });
  expect((await client.beta.sessions.update(s.id, { title: 'renamed', metadata: { a: 'b' } })).title).toBe('renamed');
  const listed = [];
  for await (const x of client.beta.sessions.list({ agent_id: agentId, limit: 2 })) listed.push(x.id);
  expect(listed).toContain(s.id);
  const other = new Anthropic({ apiKey: await api.key('intruder'), baseURL: api.url, maxRetries: 0 });
  await expect(other.beta.sessions.retrieve(s.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  await expect(other.beta.sessions.create({ agent: agentId, environment_id: envId })).rejects.toBeInstanceOf(
    Anthropic.NotFoundError,
  );
  const archived = await client.beta.sessions.archive(s.id);
  expect(archived.archived_at).not.toBeNull();
  await eventsUntil(s.id, (events) => events.some((e) => e.type === 'session.status_terminated'));
  const ended = await client.beta.sessions.retrieve(s.id);
  expect(ended.status).toBe('terminated');
  // A terminated session's duration stops at its end: it reads the same a second later.
  await new Promise((r) => setTimeout(r, 1500));
  expect((await client.beta.sessions.retrieve(s.id)).stats.duration_seconds).toBe(ended.stats.duration_seconds);
  const terminated = [];
  for await (const x of client.beta.sessions.list({ statuses: ['terminated'], include_archived: true, limit: 1 }))
    terminated.push(x);
  expect(terminated.map((x) => x.id)).toContain(s.id);
  expect(terminated.every((x) => x.status === 'terminated')).toBe(true);
  expect(
    (await client.beta.sessions.list({ statuses: ['idle', 'running'], include_archived: true })).data.map((x) => x.id),
  ).not.toContain(s.id);
  expect(await client.beta.sessions.delete(s.id)).toEqual({ id: s.id, type: 'session_deleted' });
  await expect(client.beta.sessions.retrieve(s.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
});

it('round-trips a custom tool: agent.custom_tool_use, idle requires_action, user.custom_tool_result, then the reply', async () => {
  const agent = await client.beta.agents.create({
    name: 'form',
    model: 'claude-test',
    tools: [
      {
        type: 'custom',
        name: 'ask_user_form',
        description: 'Ask the user',
        input_schema: { type: 'object', properties: { question: { type: 'string' } } },
      },
    ],
  });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
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
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'pick a colour' }] }],
  });
  const waiting = await eventsUntil(s.id, idles(1));
  const use = waiting.find((e) => e.type === 'agent.custom_tool_use')!;
  expect(use).toMatchObject({ name: 'ask_user_form', input: { question: 'Which colour?' } });
  expect(waiting.at(-1)).toMatchObject({
    type: 'session.status_idle',
    stop_reason: { type: 'requires_action', event_ids: [use.id] },
  });
  await client.beta.sessions.events.send(s.id, {
    events: [
      { type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: 'teal' }] },
    ],
  });
  const done = await eventsUntil(s.id, idles(2));
  expect(done.find((e) => e.type === 'user.custom_tool_result')).toMatchObject({
    custom_tool_use_id: use.id,
    content: [{ type: 'text', text: 'teal' }],
    is_error: false,
  });
  expect(done.filter((e) => e.type === 'agent.message').at(-1)).toMatchObject({
    content: [{ type: 'text', text: 'Teal it is.' }],
  });
  expect(done.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: { type: 'end_turn' } });
});

it('streams a turn over SSE from session.status_running to session.status_idle, and ends the stream on delete', async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  const stream = await client.beta.sessions.events.stream(s.id);
  const seen: string[] = [];
  const reading = (async () => {
    for await (const e of stream) {
      seen.push(e.type);
      if (e.type === 'session.status_idle') break;
    }
  })();
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'stream me' }] }],
  });
  await reading;
  expect(seen).toEqual([
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ]);

  const second = await client.beta.sessions.events.stream(s.id);
  const tail: string[] = [];
  const ending = (async () => {
    for await (const e of second) tail.push(e.type);
  })();
  await client.beta.sessions.delete(s.id);
  await ending;
  expect(tail.at(-1)).toMatch(/^session\.(deleted|status_terminated)$/);
});

it('interrupts a slow turn with user.interrupt: the turn ends with end_turn', async () => {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  h.mock.script(s.id, { steps: [{ gate: `slow-${s.id}`, reply: { content: [{ type: 'text', text: 'too late' }] } }] });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'take your time' }] }],
  });
  await eventsUntil(s.id, (events) => events.some((e) => e.type === 'session.status_running'));
  await client.beta.sessions.events.send(s.id, { events: [{ type: 'user.interrupt' }] });
  const events = await eventsUntil(s.id, idles(1));
  h.mock.release(`slow-${s.id}`);
  expect(events.map((e) => e.type).slice(-2)).toEqual(['user.interrupt', 'session.status_idle']);
  expect(events.at(-1)).toMatchObject({ stop_reason: { type: 'end_turn' } });
  expect(events.some((e) => e.type === 'agent.message')).toBe(false);
});

it('asks before an always_ask bash call: denied, then allowed and run in the sandbox', async () => {
  if (!(await resolveDockerHost())) throw new Error('no Docker engine: run npm run setup');
  const agent = await client.beta.agents.create({
    name: 'careful',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'bash', permission_policy: { type: 'always_ask' } }] }],
  });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  const bash = (command: string) => ({
    reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
  });
  h.mock.script(s.id, {
    steps: [
      bash('echo denied-run'),
      bash('echo allowed-run'),
      { reply: { content: [{ type: 'text', text: 'done' }] } },
    ],
  });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'run it' }] }],
  });

  const first = await eventsUntil(s.id, idles(1));
  const use1 = first.filter((e) => e.type === 'agent.tool_use').at(-1)!;
  expect(first.at(-1)).toMatchObject({
    type: 'session.status_idle',
    stop_reason: { type: 'requires_action', event_ids: [use1.id] },
  });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.tool_confirmation', tool_use_id: use1.id, result: 'deny', deny_message: 'not that one' }],
  });

  const second = await eventsUntil(s.id, idles(2));
  const use2 = second.filter((e) => e.type === 'agent.tool_use').at(-1)!;
  expect(use2.id).not.toBe(use1.id);
  expect(second.find((e) => e.type === 'user.tool_confirmation')).toMatchObject({
    tool_use_id: use1.id,
    result: 'deny',
    deny_message: 'not that one',
  });
  expect(second.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === use1.id)).toMatchObject({
    is_error: true,
  });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.tool_confirmation', tool_use_id: use2.id, result: 'allow' }],
  });

  const done = await eventsUntil(
    s.id,
    (events) =>
      events.at(-1)?.type === 'session.status_idle' &&
      (events.at(-1) as unknown as { stop_reason: { type: string } }).stop_reason.type === 'end_turn',
  );
  const result = done.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === use2.id) as {
    content: { text: string }[];
    is_error: boolean;
  };
  expect(result.is_error).toBe(false);
  expect(result.content[0].text).toContain('allowed-run');
  expect(JSON.stringify(done)).not.toContain('denied-run\n[exit');
});

it('runs every tool of the built-in toolset in a real sandbox, bash as one shell across calls', async () => {
  const agent = await client.beta.agents.create({
    name: 'toolset',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  const calls: [string, Record<string, unknown>][] = [
    ['write', { file_path: 'notes/todo.md', content: 'alpha\nTODO: beta\n' }],
    ['edit', { file_path: 'notes/todo.md', old_string: 'beta', new_string: 'gamma' }],
    ['read', { file_path: 'notes/todo.md', view_range: [2, 0] }],
    ['glob', { pattern: '**/*.md' }],
    ['grep', { pattern: 'TODO' }],
    ['bash', { command: 'cd notes && export MARK=kept' }],
    ['bash', { command: 'pwd; echo $MARK; cat todo.md' }],
  ];
  h.mock.script(s.id, {
    steps: [
      ...calls.map(([name, input]) => toolStep(name, input)),
      { reply: { content: [{ type: 'text', text: 'done' }] } },
    ],
  });
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.message', content: [{ type: 'text', text: 'use every tool' }] }],
  });

  const done = await eventsUntil(s.id, idles(1));
  const uses = done.filter(
    (e) => e.type === 'agent.tool_use',
  ) as Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolUseEvent[];
  expect(uses.map((u) => [u.name, u.input])).toEqual(calls);
  const results = uses.map(
    (u) =>
      done.find(
        (e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id,
      ) as Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolResultEvent,
  );
  expect(results.map((r) => [r.is_error, (r.content as { text: string }[]).map((c) => c.text).join('')])).toEqual([
    [false, 'wrote 17 bytes to /workspace/notes/todo.md'],
    [false, 'edited /workspace/notes/todo.md: 1 replacement'],
    [false, 'TODO: gamma\n'],
    [false, '/workspace/notes/todo.md'],
    [false, '/workspace/notes/todo.md:2:TODO: gamma'],
    [false, '[exit 0]'],
    [false, '/workspace/notes\nkept\nalpha\nTODO: gamma\n[exit 0]'],
  ]);
  // The model was offered the toolset's tools under their own names, web_fetch (run on a tools worker) last, and web_search not at all.
  const offered = h.mock.requests(s.id)[0].body.tools as { name: string; description: string }[];
  expect(offered.map((t) => t.name)).toEqual(['bash', 'edit', 'read', 'write', 'glob', 'grep', 'web_fetch']);
  expect(offered[0].description).toMatch(/persistent shell/);
});
