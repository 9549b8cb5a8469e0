// A session's budget counts its sub-agents: a child starts with its parent's spend and budget, reports what it spent
// with its answer, and a child started at or over the budget stops before its first model call. The parent then stops
// too, with the list cost past the budget by less than one call's cost.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { endSignal, handoverQuery, statusQuery, updateSessionUpdate } from '../src/session/contract';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { sessionWorkflow } from '../src/workflows';
import { childSessionId } from '../src/workflows/subagents';
import { allEvents, say, startHarness, testAgent, uniqueId, type Harness } from './helpers/env';
import { ofType, resultOf, spawn } from './helpers/subagents';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.stop());

const MODEL = 'claude-haiku-4-5';
// At $1 / $5 per million tokens: 10 000 in and 400 out cost 1.2 cents, 20 000 in and 800 out 2.4 cents.
const small = { input_tokens: 10_000, output_tokens: 400, cache_read_input_tokens: 0 };
const large = { input_tokens: 20_000, output_tokens: 800, cache_read_input_tokens: 0 };
const CENT = 10_000_000;

it("counts a child's spend in its parent's, and stops a child started over the budget before its first call", async () => {
  const budget = { amount: 5, currency: 'USD' as const };
  const parent = await h.env.client.workflow.start(sessionWorkflow, {
    taskQueue: BRAIN_TASK_QUEUE,
    workflowId: uniqueId('ses-budget'),
    args: [
      {
        agent: testAgent({ model: MODEL, tools: ['spawn_agent'] }),
        listCost: { prices: { [MODEL]: { input: 1, output: 5 } }, budget },
      },
    ],
  });
  const childA = childSessionId(parent.workflowId, 'toolu_a');
  const childB = childSessionId(parent.workflowId, 'toolu_b');
  h.mock.script(childA, { steps: [{ reply: { content: [{ type: 'text', text: 'answer a' }], usage: large } }] });
  h.mock.script(childB, { steps: [{ reply: { content: [{ type: 'text', text: 'answer b' }], usage: large } }] });
  h.mock.script(parent.workflowId, {
    steps: [
      // 1.2 cents, then child A's 2.4: 3.6, under the budget, so the next call is made.
      { reply: { content: [spawn('toolu_a', { task: 'a' })], usage: small } },
      // 2.4 cents more: 6.0, over the budget; child B starts with that spend and makes no call.
      { reply: { content: [spawn('toolu_b', { task: 'b' })], usage: large } },
      { reply: { content: [{ type: 'text', text: 'never asked for' }] } },
    ],
  });
  const events = await say(parent, 'delegate');

  expect(h.mock.requests(parent.workflowId)).toHaveLength(2);
  expect(h.mock.requests(childA)).toHaveLength(1);
  expect(h.mock.requests(childB)).toHaveLength(0);
  expect(resultOf(events, 'toolu_a')).toMatchObject({ isError: false, output: 'answer a' });
  expect(resultOf(events, 'toolu_b')).toMatchObject({
    isError: true,
    output: "the sub-agent stopped: the session's list cost reached its budget",
  });
  expect(ofType(events, 'subagent_finished').map((e) => [e.toolUseId, e.costNanoUsd])).toEqual([
    ['toolu_a', 2.4 * CENT],
    ['toolu_b', 0],
  ]);
  expect(ofType(events, 'assistant_message').map((e) => e.costNanoUsd)).toEqual([1.2 * CENT, 2.4 * CENT]);
  const reached = ofType(events, 'budget_reached');
  expect(reached).toEqual([expect.objectContaining({ costNanoUsd: 6 * CENT, budget })]);
  // Past the budget by less than the cost of the call that crossed it.
  expect(reached[0].costNanoUsd - budget.amount * CENT).toBeLessThanOrEqual(2.4 * CENT);
  const logB = await allEvents(h.env.client.workflow.getHandle(childB));
  expect(ofType(logB, 'budget_reached')).toEqual([expect.objectContaining({ costNanoUsd: 6 * CENT, budget })]);
  expect(await parent.query(statusQuery)).toMatchObject({ listCost: { costNanoUsd: 6 * CENT, budget, reached: true } });

  // At or below the spend is refused; above it, the budget no longer stops the session.
  await expect(
    parent.executeUpdate(updateSessionUpdate, { args: [{ budget: { amount: 6, currency: 'USD' } }] }),
  ).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
  await parent.executeUpdate(updateSessionUpdate, { args: [{ budget: { amount: 7, currency: 'USD' } }] });
  expect((await parent.query(statusQuery)).listCost).toEqual({
    costNanoUsd: 6 * CENT,
    budget: { amount: 7, currency: 'USD' },
    reached: false,
  });
  // A handover (or `agents wake`) gives the next run the prices, the budget and the spend.
  expect((await parent.query(handoverQuery)).carry.listCost).toEqual({
    prices: { [MODEL]: { input: 1, output: 5 } },
    budget: { amount: 7, currency: 'USD' },
    costNanoUsd: 6 * CENT,
    baseNanoUsd: 0,
  });
  await parent.signal(endSignal, {});
  await parent.result();
});
