// Builds the dependencies, registers the activities and runs the workers for the requested roles.
import fs from 'node:fs';
import os from 'node:os';
import v8 from 'node:v8';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from './brain/brain-activities';
import {
  PRELOADED_MODULES,
  WORKFLOW_BUNDLE_OPTIONS,
  WORKFLOW_INTERCEPTOR_MODULES,
  prebuiltBundle,
} from './brain/workflow-bundle';
import { HANDS_TASK_QUEUE, createHandsActivities, hostTaskQueue } from './hands/hands-activities';
import { createSandboxQuota } from './hands/sandbox-quota';
import { createToolsActivities } from './mcp/mcp-activities';
import { createWebActivities } from './egress/page-fetch';
import { createSubagentActivities } from './brain/subagent-activities';
import { createWebhookActivities } from './webhooks/delivery';
import { DEFAULT_RETRY_DELAYS_SECONDS, startWebhookRelay } from './webhooks/outbox-relay';
import { McpClientPool, McpCredentials } from './mcp';
import { findJail } from './mcp/jail';
import { resolveDockerHost, sandboxImage } from './host/docker-host';
import { ArchivedSessionLog, CachedSessionLog, LiveSessionLog } from './log/session-log';
import { clientInterceptors } from './log/query-retry';
import { PostgresSessionArchive, sessionArchive, type SessionArchive } from './archive';
import { AnthropicModelClient, type ModelClient } from './model/model-client';
import { DockerSandboxProvider } from './sandbox/docker';
import type { SandboxProvider } from './sandbox/provider';
import { reapOrphans } from './sandbox/reaper';
import { OwnershipRegistry } from './sandbox/ownership';
import { BRAIN_TASK_QUEUE, TOOLS_TASK_QUEUE, type WorkerRole } from './session/queues';
import { HostIdSchema } from './session/identifiers';
import type { DataConverter } from '@temporalio/common';
import { createDataConverter } from './codec';
import { loadConfig } from './config';
import { egressGate, type EgressGate } from './egress';
import { clientConnectionOptions, temporalConnectionOptions } from './temporal-connection';
import { loadCodecKey, loadVaultKey } from './key-files';
import type { SecretVault } from './vault';
import { ApiCredentials } from './mcp/api-credentials';
import { secretVault } from './vault/open';
import { openDb, type Db } from './storage/db';
import { createRepoTokens, type RepoTokens } from './hands/repo-tokens';
import { createMountData, type MountData } from './hands/mount-data';
import { createWorkspaceSnapshots } from './hands/workspace-snapshots';
import { createSandboxHomes } from './hands/sandbox-home';
import { mountStateFile } from './hands/session-mounts';
import { COMPOSE_HOST_ID, composeHostId } from './hands/host-id';
import { parseCodecKeys, type CodecKeys } from './codec';
import { StreamHub, identityWithStream } from './stream';
import { StreamServer } from './worker-endpoint';
import { LogPushHub } from './log/log-push-hub';
import { InflightActivities, PeerWatch, type PeerWatchStatus } from './brain/peer-liveness';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { SessionEvent } from './session/events';
import { activityLogInterceptor, jsonLogLine } from './observability/logger';
import type { LogLevelName } from './observability/log-levels';
import { ensureSearchAttributes } from './observability/search-attribute-setup';
import { startTracing, tracingEnabled } from './observability/tracing';
import type { ThreadHeap } from './brain/thread-heaps';
import { createDeploymentActivities } from './api/deployment-activities';
import type { ApiDeps } from './api/route-context';
import { quotasFrom } from './api/quotas';
import { BlobStore } from './storage/blobs';
import { parsePriceTable } from './observability/pricing';
import { vaultPublicKey } from './vault/sealed';

export interface WorkerOptions {
  role: WorkerRole;
  address: string;
  namespace: string;
  /** Model access; defaults to the Anthropic SDK with the given key and base URL. */
  model?: ModelClient;
  /** Brain: how long a judge of the `auto` policy may take when its agent file does not say (default 60 s). */
  judgeTimeoutMs?: number;
  apiKey?: string;
  baseURL?: string;
  taskQueue?: string;
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** Hands: the host's id (its queue is hands.<hostId>); defaults to HANDS_HOST_ID or the hostname. */
  hostId?: string;
  sandboxes?: SandboxProvider;
  dockerHost?: string;
  /**
   * Hands and tools: the vault repo and MCP credentials resolve in; defaults to PostgreSQL when DATABASE_URL is set,
   * else DATA_DIR/vaults, under VAULT_KEY.
   */
  vault?: SecretVault;
  /**
   * Tools: the database holding the API's vaults, for sessions created with vault_ids. Defaults to DATABASE_URL's;
   * the dev stack passes the embedded database its API process owns (asked on each use: it opens after the workers).
   */
  apiDb?: () => Db | undefined;
  /** Hands and tools: VAULT_KEY, which opens the vault and the API's sealed credentials; defaults to the configured one. */
  vaultKey?: string;
  /** Hands: opens repository tokens itself (tests holding the vault key); defaults to the API's database. */
  repoTokens?: RepoTokens;
  /** Hands: API sessions' files, memory stores and skills; defaults to the API's database's. */
  mountData?: MountData;
  /** Hands: sandboxes a workspace may have running at once; defaults to SANDBOX_QUOTA (0: none). Needs the API's database. */
  sandboxQuota?: number;
  /** Hands: how often the reaper runs; 0 turns it off. */
  reapIntervalMs?: number;
  /** Hands and tools: the egress gate for tenants' URLs; defaults to one from EGRESS_ALLOW and the configuration. */
  egress?: EgressGate;
  log?: (msg: string) => void;
  /** Brain: where runs seal their events; defaults to PostgreSQL at DATABASE_URL, else DATA_DIR/archive, encrypted like the history. */
  archive?: SessionArchive;
  /** Encrypts payloads and failures; defaults to one built from CODEC_KEY (or the local key file). A
   * `workflowBundle` must be built with the same failureConverterPath. */
  dataConverter?: DataConverter;
}

export interface RunningWorker {
  roles: string[];
  hostId?: string;
  /** Where this worker publishes live deltas (`agents watch`), when it streams. */
  streamUrl?: string;
  /** Resolves when the worker stops; rejects if it fails. */
  done: Promise<void>;
  /** Memory and workload now: what `agents worker` logs on SIGUSR2. */
  status(): WorkerStatus;
  shutdown(): Promise<void>;
}

export interface WorkerStatus {
  rssBytes: number;
  heapUsedBytes: number;
  /** Each worker thread's heap (the sessions run on the SDK's workflow thread); in the SIGUSR2 report only. */
  threads?: ThreadHeap[];
  externalBytes: number;
  /** Sessions in the workflow cache (brain). */
  cachedWorkflows: number;
  inFlightActivities: number;
  /** The brain workers this one follows, and the gone ones whose activities it retried (brain, with a stream endpoint). */
  peers?: PeerWatchStatus;
  /** Model calls whose context came whole from this worker's cache, and those that read the log for it (brain). */
  modelContext?: { cached: number; read: number };
}

/** The most a brain worker holds back a heartbeat: under the quarter of the shortest model heartbeat timeout. */
const HEARTBEAT_THROTTLE = '200 ms';

/** How long a workflow task waits for the worker that has the session cached before any brain worker takes it. */
const STICKY_TIMEOUT = '2 seconds';

/** Sessions a brain worker keeps cached unless BRAIN_WORKFLOW_CACHE says otherwise. */
export const DEFAULT_WORKFLOW_CACHE = 150;

/**
 * The workflow thread's heap limit: room for the code and the cache (a cached session holds about 0.7 MiB: its
 * state and its own instance of the workflow's modules, whose schemas it shares), so that V8 collects evicted
 * sessions instead of growing the heap to the machine's default limit (a quarter of its memory), which it otherwise
 * does.
 */
export function workflowHeapMb(cache: number, configured?: string): number {
  return configured ? Number(configured) : 320 + 2 * cache;
}

/**
 * V8 reads the heap limit when an isolate starts, so setting it here bounds the workflow thread the SDK starts
 * next; this process's own heap keeps its limit. A limit given on the command line or in NODE_OPTIONS wins.
 */
function limitWorkflowHeap(mb: number) {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((a) =>
    a.startsWith('--max-old-space-size'),
  );
  if (!given) v8.setFlagsFromString(`--max-old-space-size=${mb}`);
}

let runtimeInstalled = false;
const NO_WORKFLOWS_WARNING = 'No workflows registered, not polling for workflow tasks';

/** Logs go to stderr as JSON lines at LOG_LEVEL (default INFO), so stdout stays machine-readable. */
export function installRuntime(level: LogLevelName = loadConfig().LOG_LEVEL) {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({
      // The SDK's default list without SIGUSR2, which `agents worker` answers with a status report instead.
      shutdownSignals: ['SIGINT', 'SIGTERM', 'SIGQUIT'],
      logger: new DefaultLogger(level, (entry) => {
        // Hands and tools workers run activities only, by design: the SDK's warning about it is not actionable.
        if (entry.message === NO_WORKFLOWS_WARNING) return;
        process.stderr.write(`${jsonLogLine(entry)}\n`);
      }),
    });
  } catch {
    // a runtime was installed already (e.g. by a test environment)
  }
}

export async function startWorker(opts: WorkerOptions): Promise<RunningWorker> {
  installRuntime();
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const roles = opts.role === 'all' ? ['brain', 'hands', 'tools'] : [opts.role];
  const config = loadConfig();
  // Opened only by the hands and tools roles, and once when a process runs both. With DATABASE_URL, the vault's
  // secrets and the API's credentials are in PostgreSQL, and this process writes none of them under DATA_DIR.
  const holdsVault = roles.includes('hands') || roles.includes('tools');
  const db =
    holdsVault && config.DATABASE_URL
      ? await openDb({ databaseUrl: config.DATABASE_URL, dataDir: config.dataDir })
      : undefined;
  let openedVault: SecretVault | undefined;
  const vaultKey = () => opts.vaultKey ?? loadVaultKey(config);
  const sharedVault = () => (openedVault ??= opts.vault ?? secretVault(config.dataDir, vaultKey(), db));
  // The API's database (its vaults, sessions' repository tokens): the caller's, or DATABASE_URL's.
  const apiDb = opts.apiDb ?? (() => db);
  // Read once, and only by the parts that need it (a missing key file is generated in development).
  let keys: CodecKeys | undefined;
  const codecKeys = () => (keys ??= parseCodecKeys(loadCodecKey(config)));
  const dataConverter = opts.dataConverter ?? createDataConverter(loadCodecKey(config));
  const connectionOptions = { ...temporalConnectionOptions(config), address: opts.address };
  const connection = await Connection.connect({ ...clientConnectionOptions(config), address: opts.address });
  const client = new Client({ connection, namespace: opts.namespace, dataConverter, interceptors: clientInterceptors });
  // Brain and hands workers stream deltas of their work; their identity names the endpoint, which is how a
  // watcher finds the worker running a session's activity (DescribeWorkflowExecution's pending activities).
  let streams: { hub: StreamHub; server: StreamServer; log?: LogPushHub } | undefined;
  if (config.STREAM_LISTEN !== 'off' && roles.some((r) => r === 'brain' || r === 'hands')) {
    const hub = new StreamHub();
    const server = new StreamServer({
      hub,
      keys: [...codecKeys().byId.values()],
      listen: config.STREAM_LISTEN,
      advertise: config.STREAM_URL,
    });
    hub.worker = await server.start();
    streams = { hub, server };
  }
  // The SDK's own form, pid@hostname, with the stream endpoint when there is one.
  const identity = streams
    ? identityWithStream(`${process.pid}@${os.hostname()}`, streams.server.url)
    : `${process.pid}@${os.hostname()}`;
  // A brain also pushes each workflow task's new events to the API feeds that follow its sessions.
  if (streams && roles.includes('brain')) streams.server.log = streams.log = new LogPushHub(identity);
  // A brain shows the activities it runs to the other brain workers, and follows theirs: a brain that dies has its
  // calls retried at once by a survivor, not after their heartbeat timeout (src/brain/peer-liveness.ts).
  const running =
    streams && roles.includes('brain') ? (streams.server.activities = new InflightActivities(identity)) : undefined;
  const peers =
    running && config.BRAIN_PEER_WATCH === 'on'
      ? new PeerWatch({
          client,
          namespace: opts.namespace,
          taskQueue: opts.taskQueue ?? BRAIN_TASK_QUEUE,
          self: running,
          key: codecKeys().current.key,
          log,
        })
      : undefined;
  if (roles.includes('brain')) {
    // Workflows upsert these; registering them first lets a fresh server or cluster index every session.
    try {
      const added = await ensureSearchAttributes(connection, opts.namespace);
      if (added.length > 0) log(`registered search attributes ${added.join(', ')} on namespace ${opts.namespace}`);
    } catch (err) {
      log((err as Error).message);
    }
  }
  const tracing = tracingEnabled(config) ? startTracing(`managed-agents-${opts.role}`) : undefined;
  const plugins = tracing ? [tracing.plugin] : [];
  const interceptors = { activity: [activityLogInterceptor] };
  // A prebuilt bundle carries its workflow interceptors itself (built with WORKFLOW_INTERCEPTOR_MODULES); without
  // one (code run from source, or traced), the worker bundles at start with the same options.
  // Tracing's plugin adds its own workflow interceptors while bundling, so a traced worker bundles at start.
  const bundle = opts.workflowBundle ?? (tracing ? undefined : prebuiltBundle());
  const brainActivities = {
    activity: running ? [...interceptors.activity, running.interceptor] : interceptors.activity,
  };
  const brainInterceptors = bundle
    ? brainActivities
    : { ...brainActivities, workflowModules: WORKFLOW_INTERCEPTOR_MODULES };
  const nativeConnection = await NativeConnection.connect(connectionOptions);
  const workers: Worker[] = [];
  const timers: NodeJS.Timeout[] = [];
  let hostId: string | undefined;
  let mcpPool: McpClientPool | undefined;
  /** Hands and tools: the egress gate for what tenants' sessions connect to, one per worker process. */
  let egress: Promise<EgressGate> | undefined;
  const gate = () => (egress ??= opts.egress ? Promise.resolve(opts.egress) : egressGate(config));
  /** Where the brain's model calls read their context. */
  let sessionLog: CachedSessionLog | undefined;
  /** Tools: the webhook outbox's relay. */
  let relay: { stop(): Promise<void> } | undefined;
  /** The archive this worker opened (and closes), unless the caller gave one. */
  let ownArchive: SessionArchive | undefined;

  if (roles.includes('brain')) {
    const model = opts.model ?? new AnthropicModelClient({ apiKey: opts.apiKey, baseURL: opts.baseURL });
    const archive = opts.archive ?? (ownArchive = sessionArchive(config, dataConverter));
    // A brain that cannot reach the shared archive would fail every handover: it stops now instead.
    if (ownArchive instanceof PostgresSessionArchive) await ownArchive.ready();
    const cache = config.BRAIN_WORKFLOW_CACHE ? Number(config.BRAIN_WORKFLOW_CACHE) : DEFAULT_WORKFLOW_CACHE;
    limitWorkflowHeap(workflowHeapMb(cache, config.BRAIN_WORKFLOW_HEAP_MB));
    // The workflow threads read it when they start (patches/@temporalio+worker+*.patch): the SDK's promise hook, which
    // records a stack per promise for the stack trace query, runs only with BRAIN_WORKFLOW_STACK_TRACES=on.
    process.env.BRAIN_WORKFLOW_STACK_TRACES = config.BRAIN_WORKFLOW_STACK_TRACES;
    // Likewise: with BRAIN_REPLAY_WATCHDOG=off, calls that replay history run without the SDK's per-call timeout.
    process.env.BRAIN_REPLAY_WATCHDOG = config.BRAIN_REPLAY_WATCHDOG;
    // Model calls read their context here; the sink below hands it each task's new events as they are appended.
    const contextLog = new CachedSessionLog(new ArchivedSessionLog(archive, new LiveSessionLog(client)));
    sessionLog = contextLog;
    workers.push(
      await Worker.create({
        connection: nativeConnection,
        namespace: opts.namespace,
        dataConverter,
        taskQueue: opts.taskQueue ?? BRAIN_TASK_QUEUE,
        ...(bundle
          ? { workflowBundle: bundle }
          : {
              workflowsPath: WORKFLOW_BUNDLE_OPTIONS.workflowsPath,
              bundlerOptions: { preloadModules: PRELOADED_MODULES },
            }),
        // A session's next workflow task goes to the worker that has it cached; if that worker is dead, the task
        // moves to any brain worker after this long (the SDK default, 10 s, made every brain crash cost 10 s).
        stickyQueueScheduleToStartTimeout: STICKY_TIMEOUT,
        maxCachedWorkflows: cache,
        // Model calls set their own heartbeat cadence (a quarter of their heartbeat timeout); the SDK's throttle,
        // 80% of the timeout by default, would leave one late beat between a live call and a retry.
        maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
        identity,
        interceptors: brainInterceptors,
        sinks: {
          sessionLog: {
            appended: {
              fn: (info: WorkflowInfo, event: SessionEvent) => {
                contextLog.pushed(info.workflowId, event);
                streams?.log?.appended(info, event);
              },
            },
          },
        },
        plugins,
        activities: {
          ...createActivities({
            model,
            archive,
            log: contextLog,
            stream: streams?.hub,
            ...(opts.judgeTimeoutMs !== undefined ? { judgeTimeoutMs: opts.judgeTimeoutMs } : {}),
            resetSticky: ({ namespace, workflowId, runId }) =>
              client.workflowService.resetStickyTaskQueue({ namespace, execution: { workflowId, runId } }),
          }),
          ...createSubagentActivities({ client }),
        },
      }),
    );
  }

  if (roles.includes('hands')) {
    hostId = opts.hostId ?? process.env.HANDS_HOST_ID ?? os.hostname();
    if (hostId === COMPOSE_HOST_ID) hostId = await composeHostId(opts.dockerHost ?? (await resolveDockerHost()));
    if (!HostIdSchema.safeParse(hostId).success)
      throw new Error(`invalid hands host id ${hostId}: use letters, digits, dot, dash or underscore`);
    const mirrorsDir = path.join(config.dataDir, 'mirrors');
    let provider = opts.sandboxes;
    if (!provider) {
      const dockerHost = opts.dockerHost ?? (await resolveDockerHost());
      if (!dockerHost)
        throw new Error(
          'no Docker engine answers (DOCKER_HOST, /var/run/docker.sock, /run/managed-agents/docker.sock); run `npm run setup`',
        );
      provider = new DockerSandboxProvider({
        dockerHost,
        defaultImage: sandboxImage(),
        mirrorsDir,
        runtime: config.SANDBOX_RUNTIME,
        egress: await gate(),
      });
    }
    // Hands hosts hold VAULT_KEY (for repo credentials); brain workers never open the vault.
    const vault = sharedVault();
    // Who owns each of this host's sandboxes: hand-offs change it, execute checks it, the reaper asks it.
    const registry = OwnershipRegistry.forHost(config.dataDir, hostId);
    // API sessions' repository tokens are sealed in the API's database; a host that cannot reach it refuses them.
    const repoTokens = opts.repoTokens ?? (opts.apiDb || db ? createRepoTokens(apiDb, vaultKey()) : undefined);
    // SANDBOX_QUOTA is counted in the API's database, so a host without it enforces none.
    const limit = opts.sandboxQuota ?? (config.SANDBOX_QUOTA === 'off' ? 0 : Number(config.SANDBOX_QUOTA));
    const quota = limit > 0 && (opts.apiDb || db) ? createSandboxQuota(apiDb, limit) : undefined;
    // Sessions' mounts are read from the API's database, like repository tokens.
    const mountStateDir = path.join(path.dirname(registry.file), 'mounts');
    const mountData = opts.mountData ?? (opts.apiDb || db ? createMountData(apiDb, dataConverter) : undefined);
    // Workspace snapshots go to the API's database too, sealed with the history's codec; SNAPSHOT_RETAIN=0: none.
    const snapshots =
      (opts.apiDb || db) && Number(config.SNAPSHOT_RETAIN) > 0
        ? createWorkspaceSnapshots({
            provider,
            db: apiDb,
            dataConverter,
            limits: {
              maxBytes: Number(config.SNAPSHOT_MAX_BYTES),
              retain: Number(config.SNAPSHOT_RETAIN),
              workspaceMaxBytes: Number(config.SNAPSHOT_WORKSPACE_MAX_BYTES),
            },
            stateDir: path.join(path.dirname(registry.file), 'snapshots'),
          })
        : undefined;
    // Where snapshots are kept, so is the home directory of a sandbox paused while idle.
    const homes = snapshots
      ? createSandboxHomes({ provider, db: apiDb, dataConverter, maxBytes: Number(config.SNAPSHOT_MAX_BYTES) })
      : undefined;
    const activities = createHandsActivities({
      provider,
      hostId,
      vault,
      mirrorsDir,
      registry,
      stream: streams?.hub,
      repoTokens,
      egress: await gate(),
      quota,
      mountData,
      mountStateDir,
      snapshots,
      homes,
    });
    for (const taskQueue of [HANDS_TASK_QUEUE, hostTaskQueue(hostId)]) {
      workers.push(
        await Worker.create({
          connection: nativeConnection,
          namespace: opts.namespace,
          dataConverter,
          taskQueue,
          activities,
          identity,
          interceptors,
          plugins,
        }),
      );
    }
    const interval = opts.reapIntervalMs ?? 60_000;
    if (interval > 0) {
      const reap = () =>
        reapOrphans({ provider: provider!, client, hostId: hostId!, registry })
          .then(async (r) => {
            for (const id of r.removed) {
              await quota?.release(id);
              // The mount state names the session; a reaped sandbox's goes with it.
              fs.rmSync(mountStateFile(mountStateDir, id), { force: true });
              snapshots?.forget(id);
            }
            if (r.removed.length) log(`reaper removed ${r.removed.length} orphaned sandbox(es)`);
          })
          .catch((err) => log(`reaper failed: ${(err as Error).message}`));
      timers.push(setInterval(reap, interval));
      void reap();
    }
  }

  if (roles.includes('tools')) {
    // Tools workers hold VAULT_KEY for MCP credentials; tokens never leave this process except to the MCP server.
    const vault = sharedVault();
    // The jail hides DATA_DIR (keys, vaults, archive) even inside a tree a server's command line names.
    const jail = config.MCP_STDIO_JAIL === 'off' ? 'off' : findJail([path.resolve(config.dataDir)]);
    // Tenants' MCP servers and token endpoints are reached only through the egress gate (EGRESS_ALLOW).
    const egress = await gate();
    const api = new ApiCredentials(apiDb, vaultKey(), egress);
    mcpPool = new McpClientPool(new McpCredentials({ vault, api }), { log, jail, egress });
    // A deployment's firings create sessions here, as the API would: on its database, under its quota and prices,
    // with the same egress gate (src/api/deployment-activities.ts).
    const prices = parsePriceTable(config.MODEL_PRICES);
    const publicKey = await vaultPublicKey(vaultKey());
    let blobs: { db: Db; store: BlobStore } | undefined;
    const sessionCreateDeps = (): ApiDeps | undefined => {
      const apiDatabase = apiDb();
      if (!apiDatabase) return undefined;
      if (blobs?.db !== apiDatabase) blobs = { db: apiDatabase, store: new BlobStore(apiDatabase, dataConverter) };
      return {
        db: apiDatabase,
        vaultPublicKey: publicKey,
        egress,
        quotas: quotasFrom(config),
        blobs: blobs.store,
        selfHostedToolTimeoutSeconds: Number(config.SELF_HOSTED_TOOL_TIMEOUT_SECONDS),
        ...('table' in prices ? { prices: prices.table } : {}),
      };
    };
    // web_fetch, too, reaches tenants' URLs only through the gate; and so do webhook deliveries.
    const activities = {
      ...createToolsActivities({ vault, api, pool: mcpPool, log }),
      ...createWebActivities({ egress }),
      ...createDeploymentActivities({ deps: sessionCreateDeps, client }),
      ...createWebhookActivities({ apiDb, vaultKey, egress }),
    };
    // The webhook outbox's relay, where the API's database is: it starts a delivery workflow per event and endpoint.
    if (opts.apiDb || db)
      relay = startWebhookRelay({
        db: apiDb,
        client,
        retryDelaysSeconds: config.WEBHOOK_RETRY_DELAYS
          ? config.WEBHOOK_RETRY_DELAYS.replace(/\s/g, '').split(',').map(Number)
          : DEFAULT_RETRY_DELAYS_SECONDS,
        disableAfter: Number(config.WEBHOOK_DISABLE_AFTER),
        intervalMs: Number(config.WEBHOOK_RELAY_INTERVAL_MS),
        log,
      });
    workers.push(
      await Worker.create({
        connection: nativeConnection,
        namespace: opts.namespace,
        dataConverter,
        taskQueue: TOOLS_TASK_QUEUE,
        activities,
        interceptors,
        plugins,
      }),
    );
  }

  peers?.start();
  const done = Promise.all(workers.map((w) => w.run()))
    .then(() => undefined)
    .finally(async () => {
      for (const t of timers) clearInterval(t);
      peers?.stop();
      await relay?.stop();
      await mcpPool?.closeAll();
      if (!opts.egress) await (await egress)?.close();
      await db?.close().catch((err) => log(`closing the database failed: ${(err as Error).message}`));
      await ownArchive?.close?.();
      await streams?.server.stop();
      await tracing?.shutdown().catch((err) => log(`tracing shutdown failed: ${(err as Error).message}`));
      await nativeConnection.close();
      await connection.close();
    });
  log(
    `worker ready: ${roles.join(',')}${hostId ? ` (host ${hostId})` : ''}${streams ? ` (stream ${streams.server.url})` : ''}`,
  );
  return {
    roles,
    hostId,
    streamUrl: streams?.server.url,
    done,
    status() {
      const mem = process.memoryUsage();
      const statuses = workers.map((w) => w.getStatus());
      return {
        rssBytes: mem.rss,
        heapUsedBytes: mem.heapUsed,
        externalBytes: mem.external,
        cachedWorkflows: statuses.reduce((n, s) => n + s.numCachedWorkflows, 0),
        inFlightActivities: statuses.reduce((n, s) => n + s.numInFlightActivities, 0),
        ...(peers ? { peers: peers.status() } : {}),
        ...(sessionLog ? { modelContext: { ...sessionLog.stats } } : {}),
      };
    },
    async shutdown() {
      for (const t of timers) clearInterval(t);
      await relay?.stop();
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await done;
    },
  };
}
