// The determinism guard works: a history recorded with one version of a workflow fails to replay against a
// version that changed its commands without a patch, and replays against the same change behind `patched()`.
// test/replay.test.ts relies on this failure to catch such a change to sessionWorkflow.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import type { temporal } from '@temporalio/proto';
import { createTestEnv, testDataConverter } from './helpers/env';

const fixture = (v: string) => require.resolve(`./fixtures/determinism-workflows-${v}`);

let env: TestWorkflowEnvironment;
let history: temporal.api.history.v1.IHistory;

beforeAll(async () => {
  env = await createTestEnv();
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: 'determinism-guard',
    workflowsPath: fixture('v1'),
    activities: { step: async (name: string) => `did ${name}` },
    dataConverter: testDataConverter(),
  });
  const handle = await worker.runUntil(async () => {
    const h = await env.client.workflow.start('guardedWorkflow', {
      taskQueue: 'determinism-guard',
      workflowId: `guard-${Date.now()}`,
    });
    expect(await h.result()).toEqual(['did a', 'did b']);
    return h;
  });
  history = await handle.fetchHistory();
});

afterAll(async () => {
  await env?.teardown();
});

const replay = (version: string) =>
  Worker.runReplayHistory({ workflowsPath: fixture(version), dataConverter: testDataConverter() }, history);

describe('the determinism guard', () => {
  it('replays a history against the code that recorded it', async () => {
    await expect(replay('v1')).resolves.toBeUndefined();
  });

  it('fails with a DeterminismViolationError when a timer is added before an activity without a patch', async () => {
    const err = await replay('v2').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DeterminismViolationError);
    expect((err as Error).message).toMatch(/nondetermin/i);
  });

  it('reports the violation per history through runReplayHistories, as test/replay.test.ts reads it', async () => {
    const results = [];
    for await (const r of Worker.runReplayHistories(
      { workflowsPath: fixture('v2'), dataConverter: testDataConverter() },
      [{ workflowId: 'v1-history', history }],
    ))
      results.push(r);
    expect(results).toHaveLength(1);
    expect(results[0].error).toBeInstanceOf(DeterminismViolationError);
  });

  it('replays the old history when the same change is guarded by patched()', async () => {
    await expect(replay('v2-patched')).resolves.toBeUndefined();
  });
});
