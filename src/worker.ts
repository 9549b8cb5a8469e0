// Builds the dependencies, registers the activities and runs the workers for the requested roles.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from './activities';
import { CachedSessionLog, LiveSessionLog } from './log/session-log';
import { AnthropicModelClient, type ModelClient } from './model/client';
import { BRAIN_TASK_QUEUE } from './session/queues';

export const WORKER_ROLES = ['brain', 'all'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

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
  log?: (msg: string) => void;
}

export interface RunningWorker {
  roles: string[];
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
  const model = opts.model ?? new AnthropicModelClient({ apiKey: opts.apiKey, baseURL: opts.baseURL });
  const connection = await Connection.connect({ address: opts.address });
  const client = new Client({ connection, namespace: opts.namespace });
  const nativeConnection = await NativeConnection.connect({ address: opts.address });
  const activities = createActivities({ model, log: new CachedSessionLog(new LiveSessionLog(client)) });
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue ?? BRAIN_TASK_QUEUE,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: require.resolve('./workflows') }),
    activities,
  });
  const roles = ['brain'];
  const done = worker.run().finally(async () => {
    await nativeConnection.close();
    await connection.close();
  });
  log(`worker ready: ${roles.join(',')}`);
  return {
    roles,
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
