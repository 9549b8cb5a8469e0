// Session budgets, driven only by the SDK against a real Temporal and worker: a budget of a few cents stops the
// turn with `budget_reached` before the call after the one that reached it, the list cost never passes the budget by
// more than one call's cost, a message meanwhile stops at once, raising the budget lets the next message run, and
// every update rule is a 400 with the SDK's reason that stores nothing.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { bashStep, doneStep, eventsUntil, sayTo, type ApiEvent } from '../helpers/sdk-session';
import { DEFAULT_PRICES, costOf } from '../../src/session/list-cost';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;
let agentId: string;

const MODEL = 'claude-haiku-4-5';
// $1 per million input tokens and $5 per million output tokens: 10 000 in and 400 out cost 1.2 cents a call.
const USAGE = { input_tokens: 10_000, output_tokens: 400, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
const CALL_CENTS =
  costOf(
    { inputTokens: 10_000, outputTokens: 400, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    DEFAULT_PRICES[MODEL],
  ) * 100;
const priced = <T extends { reply: { content: unknown[] } }>(step: T) => ({
  ...step,
  reply: { ...step.reply, usage: USAGE },
});
const budget = (amount: string, currency = 'USD') =>
  ({ type: 'limit', max_list_cost: { amount, currency } }) as Anthropic.Beta.Sessions.BetaManagedAgentsBudgetLimit;

beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: `budgets-${process.pid}` });
  api = await startApiOn(h);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'budget-env' })).id;
  agentId = (
    await client.beta.agents.create({ name: 'spender', model: MODEL, tools: [{ type: 'agent_toolset_20260401' }] })
  ).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const stopReasons = (events: ApiEvent[]) =>
  events
    .filter((e) => e.type === 'session.status_idle')
    .map((e) => (e as { stop_reason: { type: string } }).stop_reason.type);
const idleTimes = (n: number) => (events: ApiEvent[]) => stopReasons(events).length >= n;
const usageEvents = (events: ApiEvent[]) =>
  events.filter((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsSessionUsageEvent => e.type === 'session.usage');
const status = (e: unknown) => (e as InstanceType<typeof Anthropic.APIError>).status;
const messageOf = (e: unknown) =>
  ((e as InstanceType<typeof Anthropic.APIError>).error as { error: { message: string } }).error.message;
/** The SDK's reason for a refused budget, which leads the message (`budget: <reason>: ...`). */
const reasonOf = (e: unknown) => /^budget: ([a-z_]+):/.exec(messageOf(e))?.[1];

async function refused(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the request was not refused');
}

it('stops at a budget of a few cents before the next model call, takes a message but calls no model, and runs again once raised', async () => {
  expect(CALL_CENTS).toBeCloseTo(1.2, 10);
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId, budget: budget('3') });
  expect(s.budget).toEqual(budget('3'));
  expect(s.usage.list_cost).toEqual({ amount: '0', currency: 'USD' });
  h.mock.script(s.id, {
    steps: [
      priced(bashStep('echo one')),
      priced(bashStep('echo two')),
      priced(bashStep('echo three')),
      priced(bashStep('echo four')),
      priced(doneStep),
    ],
  });
  await sayTo(client, s.id, 'spend');
  let events = await eventsUntil(client, s.id, idleTimes(1));
  // 1.2, 2.4 (under 3: one more call), 3.6: at or over the budget, the fourth call is not made.
  expect(h.mock.requests(s.id)).toHaveLength(3);
  expect(stopReasons(events)).toEqual(['budget_reached']);
  expect(events.filter((e) => e.type === 'agent.tool_result')).toHaveLength(3);
  const usages = usageEvents(events);
  expect(usages.map((u) => u.usage.list_cost?.amount)).toEqual(['1', '2', '4']);
  for (const u of usages) expect(u.budget).toEqual(budget('3'));
  let spent = (await client.beta.sessions.retrieve(s.id)).usage.list_cost;
  expect(spent).toEqual({ amount: '4', currency: 'USD' });
  // Never past the budget by more than one call's cost.
  expect(3 * CALL_CENTS - 3).toBeLessThanOrEqual(CALL_CENTS);
  expect(Number(spent!.amount) - 3).toBeLessThanOrEqual(Math.ceil(CALL_CENTS));

  // A message while the budget is reached is taken, and the turn ends at once: no model call.
  await sayTo(client, s.id, 'more, please');
  events = await eventsUntil(client, s.id, idleTimes(2));
  expect(stopReasons(events)).toEqual(['budget_reached', 'budget_reached']);
  expect(events.filter((e) => e.type === 'user.message')).toHaveLength(2);
  expect(h.mock.requests(s.id)).toHaveLength(3);

  // At or below the spend is refused, and changes nothing.
  const low = await refused(client.beta.sessions.update(s.id, { budget: budget('3') }));
  expect([status(low), reasonOf(low)]).toEqual([400, 'budget_not_raised']);
  expect(messageOf(low)).toMatch(/at or below the list cost/);
  expect((await client.beta.sessions.retrieve(s.id)).budget).toEqual(budget('3'));

  // Raised: the update says so in the log, and the next message runs (the pending message is in its context).
  const raised = await client.beta.sessions.update(s.id, { budget: budget('10') });
  expect(raised.budget).toEqual(budget('10'));
  await sayTo(client, s.id, 'go on');
  events = await eventsUntil(client, s.id, idleTimes(3));
  expect(stopReasons(events)).toEqual(['budget_reached', 'budget_reached', 'end_turn']);
  expect(h.mock.requests(s.id)).toHaveLength(5);
  const updated = events.filter((e) => e.type === 'session.updated');
  expect(updated).toEqual([expect.objectContaining({ budget: budget('10') })]);
  spent = (await client.beta.sessions.retrieve(s.id)).usage.list_cost;
  expect(spent).toEqual({ amount: '6', currency: 'USD' });
  expect(usageEvents(events).at(-1)?.budget).toEqual(budget('10'));

  // Removed, it cannot come back.
  expect((await client.beta.sessions.update(s.id, { budget: null })).budget).toBeNull();
  const again = await refused(client.beta.sessions.update(s.id, { budget: budget('50') }));
  expect([status(again), reasonOf(again)]).toEqual([400, 'budget_create_only']);
  expect((await client.beta.sessions.retrieve(s.id)).budget).toBeNull();
  await client.beta.sessions.archive(s.id);
});

it('refuses a budget on a session created without one, in a currency with no prices, or on a model with no price, storing nothing', async () => {
  const plain = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
  expect(plain.budget).toBeNull();
  // Its model is priced, so its list cost is counted all the same.
  expect(plain.usage.list_cost).toEqual({ amount: '0', currency: 'USD' });
  const add = await refused(client.beta.sessions.update(plain.id, { budget: budget('100') }));
  expect([status(add), reasonOf(add)]).toEqual([400, 'budget_create_only']);
  expect((await client.beta.sessions.retrieve(plain.id)).budget).toBeNull();
  // Removing a budget it never had changes nothing.
  expect((await client.beta.sessions.update(plain.id, { budget: null })).budget).toBeNull();

  const before: string[] = [];
  for await (const x of client.beta.sessions.list()) before.push(x.id);
  const euro = await refused(
    client.beta.sessions.create({ agent: agentId, environment_id: envId, budget: budget('100', 'EUR') }),
  );
  expect(status(euro)).toBe(400);
  expect(messageOf(euro)).toMatch(/EUR is not a currency the model prices are in; budgets are in USD/);
  for (const amount of ['05', '1.5', '0', '-1', '']) {
    const bad = await refused(
      client.beta.sessions.create({ agent: agentId, environment_id: envId, budget: budget(amount) }),
    );
    expect(status(bad)).toBe(400);
    expect(messageOf(bad)).toMatch(/budget\.max_list_cost\.amount/);
  }
  const unpricedAgent = await client.beta.agents.create({ name: 'unpriced', model: 'claude-test' });
  const unpriced = await refused(
    client.beta.sessions.create({ agent: unpricedAgent.id, environment_id: envId, budget: budget('100') }),
  );
  expect([status(unpriced), reasonOf(unpriced)]).toEqual([400, 'model_not_budgetable']);
  expect(messageOf(unpriced)).toMatch(/claude-test has no list price/);
  const after: string[] = [];
  for await (const x of client.beta.sessions.list()) after.push(x.id);
  expect(after).toEqual(before);

  // Without a budget, an unpriced model's session runs and reports no list cost.
  const free = await client.beta.sessions.create({ agent: unpricedAgent.id, environment_id: envId });
  expect(free.budget).toBeNull();
  expect(free.usage.list_cost).toBeUndefined();
  await client.beta.sessions.archive(free.id);
  await client.beta.sessions.archive(plain.id);
});
