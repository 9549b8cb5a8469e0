// Outcomes through the SDK: a `user.define_outcome` gives the agent its task, and a grader (a model call of its own,
// scripted here like the auto policy's judge) grades each turn's work against the rubric until it is satisfied or
// max_iterations is reached. The evaluation events come in order with the SDK's shapes, `outcome_evaluations` says
// where each outcome stands, a grader that fails leaves the session idle and usable, an interrupt ends the outcome,
// and every refusal is a 400 that appends nothing.
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { eventsUntil, sayTo, type ApiEvent } from '../helpers/sdk-session';
import { graderScriptKey, isGraderRequest } from '../../src/dev/model-replies';
import type { MockStep } from '../../src/dev/model-script';
import { ONGOING_EVERY_MS } from '../../src/session/outcome-grading';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;
let agentId: string;

beforeAll(async () => {
  h = await startHarness({ hostId: `outcomes-${process.pid}` });
  api = await startApiOn(h);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'outcomes-env' })).id;
  agentId = (await client.beta.agents.create({ name: 'writer', model: 'claude-test' })).id;
});
afterAll(async () => {
  h?.mock.release('grader-hold');
  h?.mock.release('agent-hold');
  h?.mock.release('agent-hold-2');
  h?.mock.release('grader-slow');
  await api?.stop();
  await h?.stop();
});

type Start = Extract<ApiEvent, { type: 'span.outcome_evaluation_start' }>;
type End = Extract<ApiEvent, { type: 'span.outcome_evaluation_end' }>;
type Defined = Extract<ApiEvent, { type: 'user.define_outcome' }>;

const say = (text: string): MockStep => ({ reply: { content: [{ type: 'text', text }] } });
const verdict = (v: 'SATISFIED' | 'NEEDS_REVISION' | 'FAILED', explanation: string): MockStep => ({
  reply: { content: [{ type: 'text', text: `VERDICT: ${v}\nEXPLANATION: ${explanation}` }] },
});
const outcome = (extra: Record<string, unknown> = {}) =>
  ({
    type: 'user.define_outcome',
    description: 'Write a haiku about the sea.',
    rubric: { type: 'text', content: 'A haiku: three lines, about the sea, with a title.' },
    ...extra,
  }) as Anthropic.Beta.Sessions.BetaManagedAgentsUserDefineOutcomeEventParams;

const starts = (events: ApiEvent[]) => events.filter((e): e is Start => e.type === 'span.outcome_evaluation_start');
const ends = (events: ApiEvent[]) => events.filter((e): e is End => e.type === 'span.outcome_evaluation_end');
const idleCount = (events: ApiEvent[]) => events.filter((e) => e.type === 'session.status_idle').length;
const idleAfter = (n: number) => (events: ApiEvent[]) => idleCount(events) >= n;
const agentCalls = (id: string) => h.mock.requests(id).filter((r) => !isGraderRequest(r.body));
const graderCalls = (id: string) => h.mock.requests(id).filter((r) => isGraderRequest(r.body));
const bodyText = (body: unknown) => JSON.stringify(body);
const status = (e: unknown) => (e as InstanceType<typeof Anthropic.APIError>).status;
const messageOf = (e: unknown) =>
  ((e as InstanceType<typeof Anthropic.APIError>).error as { error: { message: string } }).error.message;

async function refused(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the request was not refused');
}

async function allEvents(id: string): Promise<ApiEvent[]> {
  const events: ApiEvent[] = [];
  for await (const e of client.beta.sessions.events.list(id)) events.push(e);
  return events;
}

async function session(agent: MockStep[], grader: MockStep[]): Promise<string> {
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  h.mock.script(s.id, { steps: agent });
  h.mock.script(graderScriptKey(s.id), { steps: grader });
  return s.id;
}

it('gives the agent the description as its task and grades its work: satisfied on the first try', async () => {
  const id = await session([say('Waves\nsalt wind on the shore\nthe tide returns')], [verdict('SATISFIED', 'all met')]);
  const sent = await client.beta.sessions.events.send(id, { events: [outcome()] });
  const echo = sent.data![0] as unknown as Defined;
  expect(echo).toMatchObject({
    type: 'user.define_outcome',
    description: 'Write a haiku about the sea.',
    rubric: { type: 'text', content: 'A haiku: three lines, about the sea, with a title.' },
    max_iterations: 3,
  });
  expect(echo.outcome_id).toMatch(/^outc_/);

  const events = await eventsUntil(client, id, idleAfter(1));
  const types = events.map((e) => e.type);
  expect(types.indexOf('user.define_outcome')).toBeLessThan(types.indexOf('session.status_running'));
  expect(types.indexOf('agent.message')).toBeLessThan(types.indexOf('span.outcome_evaluation_start'));
  expect(types.indexOf('span.outcome_evaluation_end')).toBeLessThan(types.indexOf('session.status_idle'));
  expect(events.find((e) => e.type === 'user.define_outcome')).toMatchObject({
    id: echo.id,
    outcome_id: echo.outcome_id,
  });
  const [start] = starts(events);
  expect(start).toMatchObject({ outcome_id: echo.outcome_id, iteration: 0 });
  const [end] = ends(events);
  expect(end).toMatchObject({
    outcome_id: echo.outcome_id,
    outcome_evaluation_start_id: start.id,
    iteration: 0,
    result: 'satisfied',
    explanation: 'all met',
  });
  expect(end.usage.input_tokens).toBeGreaterThan(0);
  expect(events.filter((e) => e.type === 'session.status_idle')).toHaveLength(1);

  // The agent was given the description; the grader the rubric and what the agent wrote.
  expect(bodyText(agentCalls(id)[0].body)).toContain('Write a haiku about the sea.');
  expect(bodyText(agentCalls(id)[0].body)).not.toContain('with a title');
  const graded = bodyText(graderCalls(id)[0].body);
  expect(graded).toContain('A haiku: three lines, about the sea, with a title.');
  expect(graded).toContain('salt wind on the shore');

  const s = await client.beta.sessions.retrieve(id);
  expect(s.status).toBe('idle');
  expect(s.outcome_evaluations).toEqual([
    {
      type: 'outcome_evaluation',
      outcome_id: echo.outcome_id,
      description: 'Write a haiku about the sea.',
      result: 'satisfied',
      iteration: 0,
      explanation: 'all met',
      completed_at: expect.any(String),
    },
  ]);
  // The grader's tokens count in the session's usage.
  const usage = [...events].reverse().find((e) => e.type === 'session.usage') as Extract<
    ApiEvent,
    { type: 'session.usage' }
  >;
  expect(usage.usage.input_tokens).toBe(s.usage.input_tokens);
  const listed = [];
  for await (const x of client.beta.sessions.list()) if (x.id === id) listed.push(x);
  expect(listed[0].outcome_evaluations[0].result).toBe('satisfied');
});

it('gives the grader’s explanation back to the agent, which revises until it is satisfied', async () => {
  const id = await session(
    [say('salt wind on the shore'), say('Waves\nsalt wind on the shore')],
    [verdict('NEEDS_REVISION', 'it has no title and only one line'), verdict('SATISFIED', 'now it does')],
  );
  await client.beta.sessions.events.send(id, { events: [outcome()] });
  const events = await eventsUntil(client, id, idleAfter(1));
  expect(starts(events).map((e) => e.iteration)).toEqual([0, 1]);
  expect(ends(events).map((e) => [e.iteration, e.result])).toEqual([
    [0, 'needs_revision'],
    [1, 'satisfied'],
  ]);
  // In order: start 0, end 0, the agent's revision, start 1, end 1, idle; the session never went idle between.
  const order = events
    .filter((e) => e.type.startsWith('span.outcome') || e.type === 'agent.message' || e.type === 'session.status_idle')
    .map((e) => e.type);
  expect(order).toEqual([
    'agent.message',
    'span.outcome_evaluation_start',
    'span.outcome_evaluation_end',
    'agent.message',
    'span.outcome_evaluation_start',
    'span.outcome_evaluation_end',
    'session.status_idle',
  ]);
  expect(ends(events)[1].outcome_evaluation_start_id).toBe(starts(events)[1].id);
  // The feedback reached the agent's next request.
  expect(bodyText(agentCalls(id)[1].body)).toContain('it has no title and only one line');
  const s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations[0]).toMatchObject({ result: 'satisfied', iteration: 1, explanation: 'now it does' });
});

it('stops at max_iterations with one last turn that acknowledges it', async () => {
  const id = await session(
    [say('one'), say('two'), say('I could not meet the rubric: the title is missing.')],
    [verdict('NEEDS_REVISION', 'no title'), verdict('NEEDS_REVISION', 'still no title')],
  );
  await client.beta.sessions.events.send(id, { events: [outcome({ max_iterations: 2 })] });
  const events = await eventsUntil(client, id, idleAfter(1));
  expect(ends(events).map((e) => [e.iteration, e.result])).toEqual([
    [0, 'needs_revision'],
    [1, 'max_iterations_reached'],
  ]);
  // The acknowledgement turn came after the last evaluation, and was not graded.
  const types = events.map((e) => e.type);
  expect(types.lastIndexOf('agent.message')).toBeGreaterThan(types.lastIndexOf('span.outcome_evaluation_end'));
  expect(graderCalls(id)).toHaveLength(2);
  expect(agentCalls(id)).toHaveLength(3);
  expect(bodyText(agentCalls(id)[2].body)).toContain('no more evaluations follow');
  expect(idleCount(events)).toBe(1);
  const s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations[0]).toMatchObject({
    result: 'max_iterations_reached',
    iteration: 1,
    explanation: 'still no title',
    completed_at: expect.any(String),
  });
});

it('records a grader that keeps failing as failed, and the session stays idle and usable', async () => {
  const id = await session(
    [say('a poem'), say('You said hello'), say('Waves\nsea')],
    [{ status: 500 }, { status: 500 }, { status: 500 }, verdict('SATISFIED', 'fine')],
  );
  await client.beta.sessions.events.send(id, { events: [outcome()] });
  const events = await eventsUntil(client, id, idleAfter(1));
  const [end] = ends(events);
  expect(end.result).toBe('failed');
  expect(end.explanation).toMatch(/^the grader failed/);
  expect(graderCalls(id)).toHaveLength(3);
  let s = await client.beta.sessions.retrieve(id);
  expect(s.status).toBe('idle');
  expect(s.outcome_evaluations[0]).toMatchObject({ result: 'failed', completed_at: expect.any(String) });
  // Usable: a message gets an answer, and a new outcome is worked on and graded.
  await sayTo(client, id, 'hello');
  await eventsUntil(client, id, idleAfter(2));
  await client.beta.sessions.events.send(id, { events: [outcome()] });
  const after = await eventsUntil(client, id, idleAfter(3));
  expect(ends(after).map((e) => e.result)).toEqual(['failed', 'satisfied']);
  s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations.map((o) => o.result)).toEqual(['failed', 'satisfied']);
});

it('ends the outcome interrupted on user.interrupt, during an evaluation and while the agent works', async () => {
  const id = await session(
    [say('draft'), { gate: 'agent-hold', reply: { content: [{ type: 'text', text: 'late' }] } }],
    [{ gate: 'grader-hold', reply: { content: [{ type: 'text', text: 'VERDICT: SATISFIED\nEXPLANATION: x' }] } }],
  );
  await client.beta.sessions.events.send(id, { events: [outcome()] });
  await eventsUntil(client, id, (ev) => starts(ev).length === 1);
  let s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations[0].result).toBe('evaluating');
  expect(s.status).toBe('running');
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.interrupt' }] });
  const events = await eventsUntil(client, id, idleAfter(1));
  expect(ends(events).map((e) => e.result)).toEqual(['interrupted']);
  const types = events.map((e) => e.type);
  expect(types.indexOf('span.outcome_evaluation_end')).toBeLessThan(types.indexOf('session.status_idle'));
  s = await client.beta.sessions.retrieve(id);
  expect(s.status).toBe('idle');
  expect(s.outcome_evaluations[0]).toMatchObject({ result: 'interrupted', completed_at: expect.any(String) });

  // A second outcome, interrupted while the agent works on it: no evaluation ran, so no span ends it.
  await client.beta.sessions.events.send(id, { events: [outcome()] });
  await eventsUntil(client, id, () => agentCalls(id).length === 2);
  s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations[1].result).toBe('running');
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.interrupt' }] });
  const after = await eventsUntil(client, id, idleAfter(2));
  expect(ends(after)).toHaveLength(1);
  s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations.map((o) => o.result)).toEqual(['interrupted', 'interrupted']);
  h.mock.release('grader-hold');
  h.mock.release('agent-hold');
});

it('takes an outcome in initial_events at create', async () => {
  const s = await client.beta.sessions.create({
    agent: agentId,
    environment_id: envId,
    initial_events: [outcome({ max_iterations: 5 })],
  });
  h.mock.script(s.id, { steps: [] });
  // Unscripted, the local server's built-in brain and grader answer: the grader is satisfied by any work.
  const events = await eventsUntil(client, s.id, idleAfter(1));
  expect(events[0]).toMatchObject({ type: 'user.define_outcome', max_iterations: 5 });
  expect(ends(events).map((e) => e.result)).toEqual(['satisfied']);
  const got = await client.beta.sessions.retrieve(s.id);
  expect(got.outcome_evaluations).toHaveLength(1);
  expect(got.outcome_evaluations[0].result).toBe('satisfied');
});

it('reads a file rubric at send time, and refuses a missing, binary or oversized one', async () => {
  const rubric = await client.beta.files.upload({
    file: await toFile(Buffer.from('# Rubric\nThe poem mentions "tide".\n'), 'rubric.md', { type: 'text/markdown' }),
  });
  const id = await session([say('the tide returns')], []);
  const sent = await client.beta.sessions.events.send(id, {
    events: [outcome({ rubric: { type: 'file', file_id: rubric.id } })],
  });
  expect(sent.data![0]).toMatchObject({ rubric: { type: 'text', content: '# Rubric\nThe poem mentions "tide".\n' } });
  const events = await eventsUntil(client, id, idleAfter(1));
  // The built-in grader checks the rubric's quoted words against the work.
  expect(ends(events)[0]).toMatchObject({ result: 'satisfied' });
  expect(bodyText(graderCalls(id)[0].body)).toContain('The poem mentions \\"tide\\".');

  const binary = await client.beta.files.upload({
    file: await toFile(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0xff, 0xfe]), 'x.png', { type: 'image/png' }),
  });
  const big = await client.beta.files.upload({
    file: await toFile(Buffer.alloc(262_145, 'a'), 'big.txt', { type: 'text/plain' }),
  });
  for (const [file, why] of [
    ['file_01nothere', /no file/],
    [binary.id, /not UTF-8 text|binary/],
    [big.id, /at most 262144/],
  ] as const) {
    const before = (await allEvents(id)).length;
    const err = await refused(
      client.beta.sessions.events.send(id, { events: [outcome({ rubric: { type: 'file', file_id: file } })] }),
    );
    expect(status(err)).toBe(400);
    expect(messageOf(err)).toMatch(/events\.0\.rubric\.file_id/);
    expect(messageOf(err)).toMatch(why);
    expect((await allEvents(id)).length).toBe(before);
  }
});

it('refuses bad outcomes with a 400 naming the field, and a second one while one is worked on, appending nothing', async () => {
  const id = await session([{ gate: 'agent-hold-2', reply: { content: [{ type: 'text', text: 'x' }] } }], []);
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ max_iterations: 0 }, /max_iterations/],
    [{ max_iterations: 21 }, /max_iterations/],
    [{ max_iterations: 2.5 }, /max_iterations/],
    [{ description: '  ' }, /description/],
    [{ rubric: { type: 'text', content: '' } }, /rubric/],
    [{ rubric: { type: 'text', content: 'x'.repeat(262_145) } }, /rubric/],
    [{ rubric: { type: 'url', url: 'https://x' } }, /rubric/],
    [{ rubric: 'be good' }, /rubric/],
    [{ extra: 1 }, /extra/],
  ];
  for (const [fields, field] of bad) {
    const err = await refused(client.beta.sessions.events.send(id, { events: [outcome(fields) as never] }));
    expect(status(err)).toBe(400);
    expect(messageOf(err)).toMatch(field);
  }
  expect(await allEvents(id)).toEqual([]);
  // Two in one send: refused whole.
  const two = await refused(client.beta.sessions.events.send(id, { events: [outcome(), outcome()] }));
  expect(status(two)).toBe(400);
  expect(await allEvents(id)).toEqual([]);

  await client.beta.sessions.events.send(id, { events: [outcome()] });
  await eventsUntil(client, id, () => agentCalls(id).length === 1);
  const before = await allEvents(id);
  const second = await refused(
    client.beta.sessions.events.send(id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'and also' }] }, outcome()],
    }),
  );
  expect(status(second)).toBe(400);
  expect(messageOf(second)).toMatch(/still being worked on/);
  expect(await allEvents(id)).toEqual(before);
  const s = await client.beta.sessions.retrieve(id);
  expect(s.outcome_evaluations).toHaveLength(1);

  // At create: two outcomes in initial_events, or a bad one, create nothing.
  const count = async () => {
    let n = 0;
    for await (const _ of client.beta.sessions.list()) n++;
    return n;
  };
  const sessions = await count();
  for (const initial of [[outcome(), outcome()], [outcome({ max_iterations: 0 })]]) {
    const err = await refused(
      client.beta.sessions.create({ agent: agentId, environment_id: envId, initial_events: initial }),
    );
    expect(status(err)).toBe(400);
    expect(messageOf(err)).toMatch(/initial_events/);
  }
  expect(await count()).toBe(sessions);
  await client.beta.sessions.events.send(id, { events: [{ type: 'user.interrupt' }] });
  h.mock.release('agent-hold-2');
});

// $1 per million input tokens and $5 per million output tokens: 10 000 in and 400 out cost 1.2 cents a call.
const USAGE = { input_tokens: 10_000, output_tokens: 400, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
const priced = (step: MockStep): MockStep => ({ ...step, reply: { ...step.reply!, usage: USAGE } });
const budget = (amount: string) =>
  ({
    type: 'limit',
    max_list_cost: { amount, currency: 'USD' },
  }) as Anthropic.Beta.Sessions.BetaManagedAgentsBudgetLimit;

it('counts the grader in the list cost and makes no grader call at or over the budget', async () => {
  const spender = (await client.beta.agents.create({ name: 'spender', model: 'claude-haiku-4-5' })).id;
  // Budget 2 cents: the agent's call (1.2) and the grader's (1.2) are both made below it, and both are counted.
  const a = await client.beta.sessions.create({ agent: spender, environment_id: envId, budget: budget('2') });
  h.mock.script(a.id, { steps: [priced(say('Waves'))] });
  h.mock.script(graderScriptKey(a.id), { steps: [priced(verdict('SATISFIED', 'fine'))] });
  await client.beta.sessions.events.send(a.id, { events: [outcome()] });
  await eventsUntil(client, a.id, idleAfter(1));
  let s = await client.beta.sessions.retrieve(a.id);
  expect(s.outcome_evaluations[0].result).toBe('satisfied');
  // 2.4 cents, in whole cents as the API reports it (the agent's call alone would be 1).
  expect(s.usage.list_cost!.amount).toBe('2');
  // Now at the budget: the next outcome's turn stops before its model call, and the outcome fails.
  await client.beta.sessions.events.send(a.id, { events: [outcome()] });
  const after = await eventsUntil(client, a.id, idleAfter(2));
  expect(after.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: { type: 'budget_reached' } });
  s = await client.beta.sessions.retrieve(a.id);
  expect(s.outcome_evaluations[1]).toMatchObject({ result: 'failed', explanation: expect.stringMatching(/budget/) });
  expect(agentCalls(a.id)).toHaveLength(1);
  expect(graderCalls(a.id)).toHaveLength(1);

  // Budget 1 cent: the agent's call reaches it, so the grader's is not made.
  const b = await client.beta.sessions.create({ agent: spender, environment_id: envId, budget: budget('1') });
  h.mock.script(b.id, { steps: [priced(say('Waves'))] });
  await client.beta.sessions.events.send(b.id, { events: [outcome()] });
  const events = await eventsUntil(client, b.id, idleAfter(1));
  expect(starts(events)).toHaveLength(0);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: { type: 'budget_reached' } });
  expect(graderCalls(b.id)).toHaveLength(0);
  s = await client.beta.sessions.retrieve(b.id);
  expect(s.outcome_evaluations[0]).toMatchObject({
    result: 'failed',
    explanation: "the session's budget was reached before the evaluation",
  });
});

it('sends span.outcome_evaluation_ongoing while the grader runs', async () => {
  const id = await session(
    [say('Waves')],
    [{ gate: 'grader-slow', reply: { content: [{ type: 'text', text: 'VERDICT: SATISFIED\nEXPLANATION: x' }] } }],
  );
  await client.beta.sessions.events.send(id, { events: [outcome()] });
  const events = await eventsUntil(
    client,
    id,
    (ev) => ev.some((e) => e.type === 'span.outcome_evaluation_ongoing'),
    Math.ceil((ONGOING_EVERY_MS + 30_000) / 100),
  );
  const [start] = starts(events);
  expect(events.find((e) => e.type === 'span.outcome_evaluation_ongoing')).toMatchObject({
    outcome_id: start.outcome_id,
    iteration: 0,
  });
  h.mock.release('grader-slow');
  const done = await eventsUntil(client, id, idleAfter(1));
  expect(ends(done).map((e) => e.result)).toEqual(['satisfied']);
});

it('grades an outcome defined while a turn waits, at the end of that turn, which read it', async () => {
  const asker = (
    await client.beta.agents.create({
      name: 'asker',
      model: 'claude-test',
      tools: [{ type: 'custom', name: 'ask_user', description: 'Asks the user.', input_schema: { type: 'object' } }],
    })
  ).id;
  const s = await client.beta.sessions.create({ agent: asker, environment_id: envId });
  h.mock.script(s.id, {
    steps: [{ reply: { content: [{ type: 'tool_use', name: 'ask_user', input: {} }] } }, say('Waves')],
  });
  h.mock.script(graderScriptKey(s.id), { steps: [verdict('SATISFIED', 'fine')] });
  await sayTo(client, s.id, 'hello');
  const waiting = await eventsUntil(client, s.id, (ev) => ev.some((e) => e.type === 'agent.custom_tool_use'));
  const use = waiting.find((e) => e.type === 'agent.custom_tool_use')!;
  await client.beta.sessions.events.send(s.id, { events: [outcome()] });
  expect((await client.beta.sessions.retrieve(s.id)).outcome_evaluations[0].result).toBe('pending');
  await client.beta.sessions.events.send(s.id, {
    events: [{ type: 'user.custom_tool_result', custom_tool_use_id: use.id, content: [{ type: 'text', text: 'ok' }] }],
  });
  const events = await eventsUntil(client, s.id, (ev) =>
    ev.some((e) => e.type === 'session.status_idle' && e.stop_reason.type === 'end_turn'),
  );
  expect(ends(events).map((e) => e.result)).toEqual(['satisfied']);
  expect(agentCalls(s.id)).toHaveLength(2);
  expect(bodyText(agentCalls(s.id)[1].body)).toContain('Write a haiku about the sea.');
  expect((await client.beta.sessions.retrieve(s.id)).outcome_evaluations[0].result).toBe('satisfied');
});
