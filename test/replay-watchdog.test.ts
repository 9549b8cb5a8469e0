// Which calls into workflow code have the SDK's per-call timeout (patches/@temporalio+worker+1.24.0.patch). By
// default every call has it, as in the SDK, so a loop in workflow code fails its workflow task instead of holding the
// workflow thread. With BRAIN_REPLAY_WATCHDOG=off, activations that replay history run without it (each timed call
// starts a watchdog thread), and live tasks keep it. The workflows (test/fixtures/watchdog-workflows.ts) spin for a
// second or two against a timeout of 250 ms.
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
/** About 2 s of the workflow thread on the machine this was written on; 0.4 s or more on a fast one. */
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

/** Reads the workflow's history every 100 ms until `pick` answers, for up to 30 s. */
async function untilHistory<T>(
  workflowId: string,
  what: string,
  pick: (events: temporal.api.history.v1.IHistoryEvent[]) => T | undefined,
): Promise<T> {
  const handle = env.client.workflow.getHandle(workflowId);
  for (const end = Date.now() + 30_000; ;) {
    const picked = pick((await handle.fetchHistory()).events ?? []);
    if (picked !== undefined) return picked;
    if (Date.now() >= end) throw new Error(`${workflowId}: ${what} within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The message of the workflow's first failed workflow task, or undefined once it has completed without one. */
async function taskFailure(workflowId: string): Promise<string | undefined> {
  const { message } = await untilHistory(workflowId, 'neither completed nor failed a task', (events) => {
    const failed = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    if (failed) return { message: failed.workflowTaskFailedEventAttributes?.failure?.message ?? '' };
    if (events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED))
      return { message: undefined };
    return undefined;
  });
  return message;
}

/**
 * Signals `go` once the workflow's first task has completed, so that the signal's task replays that one (a signal
 * sent sooner can land in the first task itself, which then replays nothing).
 */
async function goAfterFirstTask(workflowId: string): Promise<void> {
  await untilHistory(
    workflowId,
    'no workflow task completed',
    (events) => events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) || undefined,
  );
  await env.client.workflow.getHandle(workflowId).signal('go');
}

/**
 * Runs, on a worker with no cache (every task replays the history before it), a workflow that spins when replaying
 * and one that spins live; returns the first failed task's message of each (undefined: none; it then ran to its
 * end).
 */
async function spinBoth(taskQueue: string): Promise<{ replayed?: string; live?: string }> {
  const replayed = await env.client.workflow.start('spinWhenReplaying', {
    taskQueue,
    workflowId: uniqueId('watchdog-replayed'),
    args: [SPIN],
  });
  const live = await env.client.workflow.start('spinLive', {
    taskQueue,
    workflowId: uniqueId('watchdog-live'),
    args: [SPIN],
  });
  try {
    await goAfterFirstTask(replayed.workflowId);
    return { replayed: await taskFailure(replayed.workflowId), live: await taskFailure(live.workflowId) };
  } finally {
    for (const h of [replayed, live]) await h.terminate('test').catch(() => undefined);
  }
}

describe('the per-call timeout of workflow code', () => {
  it('is kept in a replay by default, and left out with BRAIN_REPLAY_WATCHDOG=off', async () => {
    delete process.env.BRAIN_REPLAY_WATCHDOG;
    await expect(replay()).rejects.toThrow(/timed out/i);
    process.env.BRAIN_REPLAY_WATCHDOG = 'off';
    try {
      await expect(replay()).resolves.toBeUndefined();
    } finally {
      delete process.env.BRAIN_REPLAY_WATCHDOG;
    }
  }, 60_000);

  it('by default fails a task that spins while replaying a session out of the cache, or live', async () => {
    const taskQueue = uniqueId('watchdog-default');
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      dataConverter: converter(),
      maxCachedWorkflows: 0,
      ...timeout,
    });
    const failures = await worker.runUntil(() => spinBoth(taskQueue));
    expect(failures.replayed).toMatch(/timed out after 250ms/);
    expect(failures.live).toMatch(/timed out after 250ms/);
  }, 120_000);

  it('with BRAIN_REPLAY_WATCHDOG=off in a worker process, lets the replay run to its end and still fails a live spin', async () => {
    const taskQueue = uniqueId('watchdog-off');
    let stderr = '';
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), require.resolve('./fixtures/watchdog-worker')],
      {
        env: {
          ...process.env,
          BRAIN_REPLAY_WATCHDOG: 'off',
          TEMPORAL_ADDRESS: env.address,
          WATCHDOG_TASK_QUEUE: taskQueue,
          WATCHDOG_CODEC_KEY: TEST_CODEC_KEY,
        },
        // stdin: the worker stops when this end closes, whatever happens to this test.
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.once('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`watchdog worker exited with ${code}: ${stderr}`)));
      });
      const failures = await spinBoth(taskQueue);
      expect(failures.replayed).toBeUndefined();
      expect(failures.live).toMatch(/timed out after 250ms/);
    } finally {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  }, 120_000);

  it('BRAIN_REPLAY_WATCHDOG is on or off, on by default', () => {
    expect(loadConfig({}).BRAIN_REPLAY_WATCHDOG).toBe('on');
    expect(loadConfig({ BRAIN_REPLAY_WATCHDOG: 'off' }).BRAIN_REPLAY_WATCHDOG).toBe('off');
    expect(() => loadConfig({ BRAIN_REPLAY_WATCHDOG: 'yes' })).toThrow(ConfigError);
  });
});
