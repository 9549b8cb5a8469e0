// Which calls into workflow code have the SDK's per-call timeout (patches/@temporalio+worker+1.24.0.patch): live
// workflow tasks keep it, so a loop in workflow code fails its workflow task instead of holding the workflow thread;
// activations that replay history run without it (each timed call starts a watchdog thread), unless
// BRAIN_REPLAY_WATCHDOG=on. The workflows (test/fixtures/watchdog-workflows.ts) spin for a second or two, against a
// timeout of 250 ms.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { DataConverter } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { ConfigError, loadConfig } from '../src/config';
import { ROOT, createTestEnv, testDataConverter, uniqueId } from './helpers/env';
import { TEST_CODEC_KEY } from './helpers/test-keys';

const { EventType } = temporal.api.enums.v1;
const workflowsPath = require.resolve('./fixtures/watchdog-workflows');
/** About 2 s of the workflow thread on the machine this was written on, 8 times the timeout below. */
const SPIN = 400_000_000;
const TIMEOUT = '250ms';
/** The worker's per-call timeout: the SDK reads it from the options, though its types leave it out. */
const timeout = { isolateExecutionTimeout: TIMEOUT };

/** The test codec without the failure converter that encrypts messages, so a failed task's message can be read. */
const converter = (): DataConverter => ({ payloadCodecs: testDataConverter().payloadCodecs });

let env: TestWorkflowEnvironment;
let history: temporal.api.history.v1.IHistory;

beforeAll(async () => {
  env = await createTestEnv();
  // A history whose first workflow task spins when replayed, recorded by a worker that never replays it.
  const taskQueue = uniqueId('watchdog-record');
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowsPath,
    dataConverter: testDataConverter(),
  });
  history = await worker.runUntil(async () => {
    const h = await env.client.workflow.start('spinWhenReplaying', {
      taskQueue,
      workflowId: uniqueId('watchdog-record'),
      args: [SPIN],
    });
    await h.signal('go');
    expect(await h.result()).toBe('done');
    return h.fetchHistory();
  });
}, 120_000);

afterAll(async () => {
  delete process.env.BRAIN_REPLAY_WATCHDOG;
  await env?.teardown();
});

const replay = () => Worker.runReplayHistory({ workflowsPath, dataConverter: converter(), ...timeout }, history);

/** The message of the workflow's first failed workflow task, within `ms`; undefined if none. */
async function taskFailure(workflowId: string, ms: number): Promise<string | undefined> {
  const handle = env.client.workflow.getHandle(workflowId);
  for (const end = Date.now() + ms; ;) {
    const { events } = await handle.fetchHistory();
    const failed = events?.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    if (failed) return failed.workflowTaskFailedEventAttributes?.failure?.message ?? '';
    if (Date.now() >= end) return undefined;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Signals `go` once the workflow's first task has completed, so that the signal's task replays that one (a signal
 * sent sooner can land in the first task itself, which then replays nothing).
 */
async function goAfterFirstTask(workflowId: string): Promise<void> {
  const handle = env.client.workflow.getHandle(workflowId);
  for (const end = Date.now() + 30_000; ;) {
    const { events } = await handle.fetchHistory();
    if (events?.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)) break;
    if (Date.now() >= end) throw new Error(`${workflowId}: no workflow task completed within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await handle.signal('go');
}

describe('the per-call timeout of workflow code', () => {
  it('is left out of a replay, and kept there with BRAIN_REPLAY_WATCHDOG=on', async () => {
    delete process.env.BRAIN_REPLAY_WATCHDOG;
    await expect(replay()).resolves.toBeUndefined();
    process.env.BRAIN_REPLAY_WATCHDOG = 'on';
    try {
      await expect(replay()).rejects.toThrow(/timed out/i);
    } finally {
      delete process.env.BRAIN_REPLAY_WATCHDOG;
    }
  }, 60_000);

  it('is left out of the replay of a session out of the cache, and a live task that spins still fails', async () => {
    const taskQueue = uniqueId('watchdog-live');
    // No cache: every workflow task replays the history before it.
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      dataConverter: converter(),
      maxCachedWorkflows: 0,
      ...timeout,
    });
    await worker.runUntil(async () => {
      const replayed = await env.client.workflow.start('spinWhenReplaying', {
        taskQueue,
        workflowId: uniqueId('watchdog-replayed'),
        args: [SPIN],
      });
      await goAfterFirstTask(replayed.workflowId);
      expect(await replayed.result()).toBe('done');
      expect(await taskFailure(replayed.workflowId, 0)).toBeUndefined();

      const live = await env.client.workflow.start('spinLive', {
        taskQueue,
        workflowId: uniqueId('watchdog-live'),
        args: [SPIN],
      });
      try {
        expect(await taskFailure(live.workflowId, 30_000)).toMatch(/timed out after 250ms/);
      } finally {
        await live.terminate('test').catch(() => undefined);
      }
    });
  }, 120_000);

  it('is kept there by a worker process started with BRAIN_REPLAY_WATCHDOG=on', async () => {
    const taskQueue = uniqueId('watchdog-on');
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), require.resolve('./fixtures/watchdog-worker')],
      {
        env: {
          ...process.env,
          BRAIN_REPLAY_WATCHDOG: 'on',
          TEMPORAL_ADDRESS: env.address,
          WATCHDOG_TASK_QUEUE: taskQueue,
          WATCHDOG_CODEC_KEY: TEST_CODEC_KEY,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.once('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`watchdog worker exited with ${code}`)));
      });
      const replayed = await env.client.workflow.start('spinWhenReplaying', {
        taskQueue,
        workflowId: uniqueId('watchdog-on'),
        args: [SPIN],
      });
      try {
        await goAfterFirstTask(replayed.workflowId);
        expect(await taskFailure(replayed.workflowId, 30_000)).toMatch(/timed out after 250ms/);
      } finally {
        await replayed.terminate('test').catch(() => undefined);
      }
    } finally {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  }, 120_000);

  it('BRAIN_REPLAY_WATCHDOG is on or off, off by default', () => {
    expect(loadConfig({}).BRAIN_REPLAY_WATCHDOG).toBe('off');
    expect(loadConfig({ BRAIN_REPLAY_WATCHDOG: 'on' }).BRAIN_REPLAY_WATCHDOG).toBe('on');
    expect(() => loadConfig({ BRAIN_REPLAY_WATCHDOG: 'yes' })).toThrow(ConfigError);
  });
});
