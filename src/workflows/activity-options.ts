// Every activity the session workflow calls, with its queue, timeouts and retry policy, in one place.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { createActivities } from '../brain/brain-activities';
import type { HandsActivities } from '../hands/hands-activities';
import type { ToolsActivities } from '../mcp/mcp-activities';
import type { Agent } from '../session/agent';
import { TOOLS_TASK_QUEUE } from '../session/queues';
import { Failure } from '../session/failure-types';
import { TRANSIENT_MODEL_FAILURES } from './model-retry';

type Activities = ReturnType<typeof createActivities>;

/** The queue every hands host polls; a named host's own queue is where its sandboxes' calls go. */
export const HANDS_POOL = 'hands';

export function sessionActivities(limits: Agent['limits']) {
  const modelRetry = {
    maximumAttempts: limits.modelRetry.maxAttempts,
    initialInterval: limits.modelRetry.initialIntervalMs,
    backoffCoefficient: limits.modelRetry.backoffCoefficient,
    maximumInterval: limits.modelRetry.maximumIntervalMs,
  };
  const model = proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: limits.modelHeartbeatTimeoutMs,
    retry: modelRetry,
  });
  // The same call as a local activity (limits.modelCall 'local'): no heartbeat, the worker running the workflow task runs it.
  const localModel = proxyLocalActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    retry: modelRetry,
  });
  // The same two, with the model API's transient errors handed back to the workflow, which logs and waits for each retry.
  const seenRetry = { ...modelRetry, nonRetryableErrorTypes: [...TRANSIENT_MODEL_FAILURES] };
  const loggedRetries = {
    model: proxyActivities<Activities>({
      startToCloseTimeout: '10 minutes',
      heartbeatTimeout: limits.modelHeartbeatTimeoutMs,
      retry: seenRetry,
    }),
    localModel: proxyLocalActivities<Activities>({ startToCloseTimeout: '10 minutes', retry: seenRetry }),
  };
  // The judge of the `auto` policy: a model call on the brain queue that ends its own wait (its time limit is the
  // activity's), retried at most as often as a model call, and at most three times: past them the call escalates.
  const judge = proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: limits.modelHeartbeatTimeoutMs,
    retry: { ...modelRetry, maximumAttempts: Math.min(limits.modelRetry.maxAttempts, 3) },
  });
  // The grader of an outcome: a model call on the brain queue, tried as often as the judge; past its attempts the
  // outcome is `failed` and the session goes on.
  const grader = judge;
  const provisioner = (taskQueue: string) =>
    proxyActivities<HandsActivities>({
      taskQueue,
      // On the pool, wait for any host; on a named host, give up quickly: that host is gone.
      scheduleToStartTimeout: taskQueue === HANDS_POOL ? limits.provisionTimeoutMs : limits.handsScheduleToStartMs,
      startToCloseTimeout: limits.provisionTimeoutMs,
      heartbeatTimeout: limits.handsHeartbeatTimeoutMs,
      retry: { maximumAttempts: 3, initialInterval: 500, nonRetryableErrorTypes: [Failure.Sandbox.SetupFailed] },
    });
  const onHost = (taskQueue: string, timeoutSeconds: number) =>
    proxyActivities<HandsActivities>({
      taskQueue,
      scheduleToStartTimeout: limits.handsScheduleToStartMs,
      startToCloseTimeout: (timeoutSeconds + 60) * 1000,
      heartbeatTimeout: limits.handsHeartbeatTimeoutMs,
      retry: { maximumAttempts: 3, initialInterval: 500 },
    });
  // MCP runs on queue `tools`. Listing is cheap to repeat; a tool call may have side effects, so it is tried twice at most.
  const mcp = (timeoutSeconds: number, maximumAttempts: number) =>
    proxyActivities<ToolsActivities>({
      taskQueue: TOOLS_TASK_QUEUE,
      scheduleToStartTimeout: '1 minute',
      startToCloseTimeout: (timeoutSeconds + 60) * 1000,
      heartbeatTimeout: '15 seconds',
      retry: {
        maximumAttempts,
        initialInterval: 500,
        nonRetryableErrorTypes: [
          Failure.Mcp.Credential,
          Failure.Mcp.Unauthorized,
          Failure.Mcp.Rejected,
          Failure.Mcp.InvalidResult,
        ],
      },
    });
  // A seal that read events other than the ones history committed (ArchiveError.Stale) is tried again, with backoff.
  const archive = proxyActivities<Activities>({
    startToCloseTimeout: '2 minutes',
    retry: { maximumAttempts: 8, initialInterval: 500, maximumInterval: 5000 },
  });
  return { model, localModel, loggedRetries, judge, grader, provisioner, onHost, mcp, archive };
}

export type SessionActivities = ReturnType<typeof sessionActivities>;
export type OnHost = SessionActivities['onHost'];
