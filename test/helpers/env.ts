// Shared test setup: a real Temporal dev server, the local Messages API server and a real worker.
import { testDataConverter } from './test-keys';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { buildWorkflowBundle } from '../../src/brain/workflow-bundle';
import { Client, Connection, type WorkflowExecutionInfo, type WorkflowHandle } from '@temporalio/client';
import { grpcInterceptors } from '../../src/temporal-connection';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { findTemporalCli } from '../../src/infra/temporal-cli';
import { MockModelServer } from '../../src/dev/model-server';
import type { ModelClient } from '../../src/model/model-client';
import { resolveDockerHost, sandboxImage } from '../../src/host/docker-host';
import { DockerSandboxProvider } from '../../src/sandbox/docker';
import type { SandboxProvider } from '../../src/sandbox/provider';
import type { SecretVault } from '../../src/vault';
import type { RepoTokens } from '../../src/hands/repo-tokens';
import type { MountData } from '../../src/hands/mount-data';
import { AgentSchema, type AgentInput } from '../../src/session/agent';
import { EVENT_TYPES, SessionEventSchema, type SessionEvent } from '../../src/session/events';
import { BRAIN_TASK_QUEUE } from '../../src/session/queues';
import { sessionArchive, type SessionArchive } from '../../src/archive';
import { loadConfig } from '../../src/config';
import { ArchivedSessionLog, readEvents, type SessionLog } from '../../src/log/session-log';
import { followHistory } from '../../src/log/history-doorbell';
import { installRuntime, startWorker, type RunningWorker, type WorkerOptions } from '../../src/worker';
import { clientInterceptors } from '../../src/log/query-retry';
import { sessionWorkflow } from '../../src/workflows';
import { eventsQuery, sendMessageUpdate, type UserMessage } from '../../src/session/contract';

export const ROOT = path.resolve(__dirname, '../..');
export { testDataConverter };

export function temporalCliPath(): string {
  const cli = findTemporalCli();
  if (!cli) throw new Error('Temporal CLI not found: run `npm run setup` first');
  return cli.path;
}

/** Deletes one run of a workflow with the Temporal CLI, as retention would; throws with its stderr when it fails. */
export function deleteWorkflowRun(address: string, workflowId: string, runId: string): void {
  const del = spawnSync(
    temporalCliPath(),
    ['workflow', 'delete', '--yes', '--address', address, '--workflow-id', workflowId, '--run-id', runId],
    { encoding: 'utf8' },
  );
  if (del.status !== 0) throw new Error(`temporal workflow delete failed: ${del.stderr}`);
}

export async function createTestEnv(extraArgs: string[] = []): Promise<TestWorkflowEnvironment> {
  // Tests keep the in-process logs to warnings unless LOG_LEVEL asks for more.
  installRuntime(process.env.LOG_LEVEL ? loadConfig().LOG_LEVEL : 'WARN');
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: temporalCliPath() }, ip: '127.0.0.1', ui: false, extraArgs },
  });
  // The environment connects without interceptors, so a call it retries when the suite closes the connection
  // throws from the retry's timer and kills the test process. Its client gets a connection with the guard instead
  // (grpcInterceptors), which teardown() closes.
  const unguarded = env.connection;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: env.address, interceptors: grpcInterceptors() });
  } catch (err) {
    await env.teardown();
    throw err;
  }
  const client = new Client({
    connection,
    namespace: env.namespace ?? 'default',
    dataConverter: testDataConverter(),
    interceptors: clientInterceptors,
  });
  Object.assign(env, { connection, client, workflowClient: client.workflow, asyncCompletionClient: client.activity });
  await unguarded.close();
  return env;
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  // A prebuilt bundle carries the failure converter itself: a worker ignores its dataConverter's path for it.
  bundle ??= buildWorkflowBundle({
    info() {},
    warn() {},
    error: console.error,
    debug() {},
    trace() {},
    log() {},
  } as never);
  return bundle;
}

export interface Harness {
  env: TestWorkflowEnvironment;
  mock: MockModelServer;
  worker: RunningWorker;
  stop(): Promise<void>;
}

/**
 * An in-process worker as tests run it: the shared bundle and converter, quiet logs, and a model: the local
 * Messages API server at a URL, or an in-process ModelClient.
 */
export async function startTestWorker(
  address: string,
  model: string | ModelClient,
  opts: Partial<WorkerOptions> = {},
): Promise<RunningWorker> {
  return startWorker({
    role: 'brain',
    address,
    namespace: 'default',
    ...(typeof model === 'string' ? { baseURL: model, apiKey: 'test-key' } : { model }),
    workflowBundle: await workflowBundle(),
    dataConverter: testDataConverter(),
    log: () => undefined,
    ...opts,
  });
}

/** Starts a dev server, the mock model and one in-process worker (brain by default). */
export async function startHarness(
  opts: {
    worker?: boolean;
    role?: 'brain' | 'all';
    hostId?: string;
    reapIntervalMs?: number;
    vault?: SecretVault;
    archive?: SessionArchive;
    repoTokens?: RepoTokens;
    /** The hands role's session mounts (files, memory stores, skills). */
    mountData?: MountData;
    /** The API's database, which hands hosts read mounts from and write workspace snapshots to. */
    apiDb?: WorkerOptions['apiDb'];
    /** The hands role's sandboxes (default: the Docker engine with SANDBOX_RUNTIME's choice). */
    sandboxes?: SandboxProvider;
    log?: (msg: string) => void;
    /** More arguments for the dev server, e.g. `--dynamic-config-value` settings. */
    serverArgs?: string[];
    /** The brain's time limit for a judge of the `auto` policy whose agent sets none. */
    judgeTimeoutMs?: number;
  } = {},
): Promise<Harness> {
  const env = await createTestEnv(opts.serverArgs);
  const mock = new MockModelServer();
  await mock.start();
  let worker: RunningWorker | undefined;
  try {
    if (opts.worker !== false) {
      worker = await startTestWorker(env.address, mock.url, {
        role: opts.role ?? 'brain',
        hostId: opts.hostId,
        reapIntervalMs: opts.reapIntervalMs ?? 0,
        vault: opts.vault,
        archive: opts.archive,
        repoTokens: opts.repoTokens,
        mountData: opts.mountData,
        ...(opts.apiDb ? { apiDb: opts.apiDb } : {}),
        sandboxes: opts.sandboxes,
        ...(opts.judgeTimeoutMs !== undefined ? { judgeTimeoutMs: opts.judgeTimeoutMs } : {}),
        ...(opts.log ? { log: opts.log } : {}),
      });
    }
  } catch (err) {
    await mock.stop();
    await env.teardown();
    throw err;
  }
  return {
    env,
    mock,
    worker: worker as RunningWorker,
    async stop() {
      await worker?.shutdown().catch(() => undefined);
      await mock.stop();
      await env.teardown();
      if (worker?.hostId) await removeHostSandboxes(worker.hostId);
    },
  };
}

/** A test agent with fast model retries, so fault tests take seconds. */
export function testAgent(overrides: Partial<AgentInput> = {}) {
  return AgentSchema.parse({
    name: 'test',
    model: 'claude-test',
    ...overrides,
    limits: {
      modelRetry: { initialIntervalMs: 50, maximumIntervalMs: 500, maxAttempts: 10 },
      modelHeartbeatTimeoutMs: 2000,
      ...(overrides.limits ?? {}),
    },
  });
}

let counter = 0;
export function uniqueId(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now()}-${++counter}`;
}

export async function startSession(
  h: Pick<Harness, 'env'>,
  opts: { id?: string; agent?: Partial<AgentInput>; message?: UserMessage } = {},
) {
  return h.env.client.workflow.start(sessionWorkflow, {
    taskQueue: BRAIN_TASK_QUEUE,
    workflowId: opts.id ?? uniqueId('ses'),
    args: [{ agent: testAgent(opts.agent), ...(opts.message ? { message: opts.message } : {}) }],
  });
}

/** The session archive the test workers seal into (DATA_DIR/archive, under the test codec key). */
export function testArchive(): SessionArchive {
  return sessionArchive(loadConfig(), testDataConverter());
}

/** A session's whole log as a client reads it: sealed segments from the archive, the live tail by query. */
export function logOf(handle: WorkflowHandle): SessionLog {
  // A fork's log links to its source's: read other sessions through the same client.
  return new ArchivedSessionLog(testArchive(), {
    read: (id, from, limit) => handle.client.getHandle(id).query(eventsQuery, { from, limit: Math.min(limit, 1000) }),
  });
}

export async function allEvents(handle: WorkflowHandle): Promise<SessionEvent[]> {
  return readEvents(logOf(handle), handle.workflowId, 0);
}

/** Polls the log until `pred` holds for it; fails with the log if it does not within the deadline. */
export async function waitForEvents(
  handle: WorkflowHandle,
  pred: (events: SessionEvent[]) => boolean,
  timeoutMs = 60_000,
): Promise<SessionEvent[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await allEvents(handle);
    if (pred(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; log: ${JSON.stringify(events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A session's doorbell: `until` re-checks a condition each time the history rings. */
export interface Doorbell {
  until(check: () => Promise<boolean>, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Follows a session's history with a long poll on the server, across handovers (src/log/history-doorbell.ts), so a
 * test waits for a condition by checking it after each completed workflow task instead of polling the worker.
 */
export function doorbell(client: Client, sessionId: string): Doorbell {
  const stop = new AbortController();
  let waiters: (() => void)[] = [];
  const ring = () => {
    const woken = waiters;
    waiters = [];
    for (const w of woken) w();
  };
  // Follows again after a failure (a long poll cut by a loaded server, say), until closed or the session ends.
  const following = (async () => {
    while (!stop.signal.aborted) {
      try {
        await followHistory(client, sessionId, ring, stop.signal);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  })();
  return {
    async until(check, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Listening before checking: a ring during the check is not missed.
        const rung = new Promise<void>((r) => waiters.push(r));
        if (await check()) return;
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(
            `${sessionId}: condition not met within ${timeoutMs} ms; ${await pendingWork(client, sessionId)}`,
          );
        // A slow poll covers a ring lost while the follower starts again.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([rung, new Promise<void>((r) => (timer = setTimeout(r, Math.min(left, 2_000))))]);
        clearTimeout(timer);
      }
    },
    async close() {
      stop.abort();
      ring();
      await following;
    },
  };
}

/** What a session's current run is waiting on, as `describe` tells it: for a wait that timed out. */
async function pendingWork(client: Client, sessionId: string): Promise<string> {
  try {
    const handle = client.workflow.getHandle(sessionId);
    const { raw, status } = await handle.describe();
    const task = raw.pendingWorkflowTask;
    const activities = (raw.pendingActivities ?? []).map((a) => ({
      type: a.activityType?.name,
      id: a.activityId,
      state: a.state,
      attempt: a.attempt,
      lastHeartbeat: a.lastHeartbeatTime?.seconds?.toString(),
      lastFailure: a.lastFailure?.message,
      worker: a.lastWorkerIdentity,
    }));
    let taskFailure = '';
    if ((task?.attempt ?? 0) > 1) {
      const events = (await handle.fetchHistory()).events ?? [];
      const failed = events.filter((e) => e.workflowTaskFailedEventAttributes).pop();
      taskFailure = `, last task failure: ${failed?.workflowTaskFailedEventAttributes?.failure?.message}`;
    }
    return `run ${status.name}, history ${raw.workflowExecutionInfo?.historyLength} events, workflow task ${
      task ? JSON.stringify({ state: task.state, attempt: task.attempt }) : 'none'
    }${taskFailure}, activities ${JSON.stringify(activities)}`;
  } catch (e) {
    return `describe failed: ${(e as Error).message}`;
  }
}

/** Every event matches the contract, with a valid time, and the seqs run 0, 1, 2… without a gap. */
export function expectGapFreeAndValid(events: unknown[]): void {
  events.forEach((e, i) => {
    const parsed = SessionEventSchema.parse(e);
    expect(parsed.seq).toBe(i);
    expect(EVENT_TYPES).toContain(parsed.type);
    expect(Number.isNaN(Date.parse(parsed.time))).toBe(false);
  });
}

export const turnDone = (afterSeq: number) => (events: SessionEvent[]) =>
  events.some(
    (e) =>
      e.seq > afterSeq &&
      ((e.type === 'assistant_message' && e.stopReason !== 'tool_use') ||
        e.type === 'error' ||
        e.type === 'budget_reached' ||
        e.type === 'interrupted'),
  );

/** Sends a message by update and waits until its turn has finished. */
export async function say(handle: WorkflowHandle, text: string): Promise<SessionEvent[]> {
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
  return waitForEvents(handle, turnDone(seq));
}

/** A log with workflow times removed, for comparing two runs. */
export function withoutTimes(events: SessionEvent[]): unknown[] {
  return events.map(({ time: _time, ...rest }) => rest);
}

/** A TCP port that was free a moment ago, for servers that must be told their port. */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as import('node:net').AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A recorded request's messages without prompt-caching breakpoints, to compare conversations. */
export function conversationOf(body: Record<string, unknown>): unknown {
  return JSON.parse(JSON.stringify(body.messages), (key, value) => (key === 'cache_control' ? undefined : value));
}

/** Removes every container (and its volumes) a test's hands host left behind, e.g. after a failed assertion. */
export async function removeHostSandboxes(hostId: string): Promise<void> {
  const host = await resolveDockerHost();
  if (!host) return;
  const provider = new DockerSandboxProvider({ dockerHost: host, defaultImage: sandboxImage() });
  for (const sb of await provider.list(hostId)) await provider.destroy(sb.sandboxId).catch(() => undefined);
}

/** Every run of a session (a workflow id), oldest first. */
export async function runsOf(client: Client, id: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push(wf);
  return runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
}
