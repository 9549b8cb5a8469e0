// History grows linearly: no activity input carries the transcript, so turn 40 costs what turn 20 cost.
import { temporal } from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';
import { say, startHarness, startSession, type Harness } from './helpers/env';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

async function historyBytes(handle: WorkflowHandle): Promise<number> {
  const history = await handle.fetchHistory();
  return temporal.api.history.v1.History.encode(history).finish().length;
}

it('keeps history linear: the size after 40 turns is under 2.5 times the size after 20', async () => {
  const handle = await startSession(h);
  // Every other turn makes a tool round trip, so the transcript (and each model request) grows fast.
  for (let i = 0; i < 20; i++)
    await say(handle, i % 2 ? `turn ${i}: read the log` : `turn ${i}: ${'words '.repeat(50)}`);
  const at20 = await historyBytes(handle);
  for (let i = 20; i < 40; i++)
    await say(handle, i % 2 ? `turn ${i}: read the log` : `turn ${i}: ${'words '.repeat(50)}`);
  const at40 = await historyBytes(handle);
  const requests = h.mock.requests(handle.workflowId);
  const firstRequest = JSON.stringify(requests[0].body).length;
  const lastRequest = JSON.stringify(requests.at(-1)!.body).length;
  // The conversation sent to the model did grow a lot; the history did not carry it.
  expect(lastRequest).toBeGreaterThan(20 * firstRequest);
  expect(at40 / at20).toBeLessThan(2.5);
  expect(at40 / at20).toBeGreaterThan(1.5);
});
