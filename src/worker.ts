// Builds the dependencies, registers the activities and runs the workers for the requested roles.
import os from 'node:os';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from './activities';
import { HANDS_TASK_QUEUE, createHandsActivities, hostTaskQueue } from './activities/hands';
import { resolveDockerHost, sandboxImage } from './infra/docker';
import { CachedSessionLog, LiveSessionLog } from './log/session-log';
import { AnthropicModelClient, type ModelClient } from './model/client';
import { DockerSandboxProvider } from './sandbox/docker';
import type { SandboxProvider } from './sandbox/provider';
import { reapOrphans } from './sandbox/reaper';
import { BRAIN_TASK_QUEUE, type WorkerRole } from './session/queues';


export interface WorkerOptions {
  role: WorkerRole;
  address: string;
  namespace: string;
  /** Model access; defaults to the Anthropic SDK with the given key and base URL. */
  model?: ModelClient;
  apiKey?: string;
  baseURL?: string;
  taskQueue?: string;
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** Hands: the host's id (its queue is hands.<hostId>); defaults to HANDS_HOST_ID or the hostname. */
  hostId?: string;
  sandboxes?: SandboxProvider;
  dockerHost?: string;
  /** Hands: how often the reaper runs; 0 turns it off. */
  reapIntervalMs?: number;
  log?: (msg: string) => void;
}

export interface RunningWorker {
  roles: string[];
  hostId?: string;
  /** Resolves when the worker stops; rejects if it fails. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

let runtimeInstalled = false;

/** Keeps the SDK's own logs at warn level and on stderr, so stdout stays machine-readable. */
export function installRuntime() {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN', (entry) => process.stderr.write(`[${entry.level}] ${entry.message}\n`)) });
  } catch {
    // a runtime was installed already (e.g. by a test environment)
  }
}

export async function startWorker(opts: WorkerOptions): Promise<RunningWorker> {
  installRuntime();
  const log = opts.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const roles = opts.role === 'all' ? ['brain', 'hands'] : [opts.role];
  const connection = await Connection.connect({ address: opts.address });
  const client = new Client({ connection, namespace: opts.namespace });
  const nativeConnection = await NativeConnection.connect({ address: opts.address });
  const workers: Worker[] = [];
  const timers: NodeJS.Timeout[] = [];
  let hostId: string | undefined;

  if (roles.includes('brain')) {
    const model = opts.model ?? new AnthropicModelClient({ apiKey: opts.apiKey, baseURL: opts.baseURL });
    workers.push(
      await Worker.create({
        connection: nativeConnection,
        namespace: opts.namespace,
        taskQueue: opts.taskQueue ?? BRAIN_TASK_QUEUE,
        ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: require.resolve('./workflows') }),
        activities: createActivities({ model, log: new CachedSessionLog(new LiveSessionLog(client)) }),
      }),
    );
  }

  if (roles.includes('hands')) {
    hostId = opts.hostId ?? process.env.HANDS_HOST_ID ?? os.hostname();
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(hostId)) throw new Error(`invalid hands host id ${hostId}: use letters, digits, dot, dash or underscore`);
    let provider = opts.sandboxes;
    if (!provider) {
      const dockerHost = opts.dockerHost ?? (await resolveDockerHost());
      if (!dockerHost) throw new Error('no Docker engine answers (DOCKER_HOST, /var/run/docker.sock, /run/managed-agents/docker.sock); run `npm run setup`');
      provider = new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage() });
    }
    const activities = createHandsActivities({ provider, hostId });
    for (const taskQueue of [HANDS_TASK_QUEUE, hostTaskQueue(hostId)]) {
      workers.push(await Worker.create({ connection: nativeConnection, namespace: opts.namespace, taskQueue, activities }));
    }
    const interval = opts.reapIntervalMs ?? 60_000;
    if (interval > 0) {
      const reap = () =>
        reapOrphans({ provider: provider!, client, hostId: hostId! })
          .then((r) => r.removed.length && log(`reaper removed ${r.removed.length} orphaned sandbox(es)`))
          .catch((err) => log(`reaper failed: ${(err as Error).message}`));
      timers.push(setInterval(reap, interval));
      void reap();
    }
  }

  const done = Promise.all(workers.map((w) => w.run()))
    .then(() => undefined)
    .finally(async () => {
      for (const t of timers) clearInterval(t);
      await nativeConnection.close();
      await connection.close();
    });
  log(`worker ready: ${roles.join(',')}${hostId ? ` (host ${hostId})` : ''}`);
  return {
    roles,
    hostId,
    done,
    async shutdown() {
      for (const t of timers) clearInterval(t);
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await done;
    },
  };
}
