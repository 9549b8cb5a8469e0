// deploymentRunWorkflow: one firing of a deployment, started by its Temporal Schedule or by `deployments.run`.
// It records the run, creates the session and records how that went; each step is an activity on the tools queue
// (src/api/deployment-activities.ts), retried until it answers, so a firing survives any worker's crash.
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { DeploymentRunActivities, DeploymentRunInput, DeploymentRunOutcome } from '../session/deployment-contract';
import { TOOLS_TASK_QUEUE } from '../session/queues';

const acts = proxyActivities<DeploymentRunActivities>({
  taskQueue: TOOLS_TASK_QUEUE,
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** The Schedule's nominal time of this firing (before jitter), which Temporal sets on each workflow it starts. */
function scheduledAt(): string | undefined {
  const attrs = workflowInfo().searchAttributes as Record<string, unknown[] | undefined>;
  const v = attrs?.TemporalScheduledStartTime?.[0];
  if (v instanceof Date) return v.toISOString();
  return typeof v === 'string' ? v : undefined;
}

/** The run's outcome; undefined when the deployment was archived before the firing started, so none was recorded. */
export async function deploymentRunWorkflow(input: DeploymentRunInput): Promise<DeploymentRunOutcome | undefined> {
  const when = input.manual ? undefined : scheduledAt();
  const run = await acts.startDeploymentRun({
    deploymentId: input.deploymentId,
    workflowId: workflowInfo().workflowId,
    ...(input.manual ? { manual: input.manual } : {}),
    ...(when ? { scheduledAt: when } : {}),
  });
  if (!run || run.finished) return undefined;
  const outcome = await acts.createDeploymentSession({ runId: run.runId });
  await acts.finishDeploymentRun({ runId: run.runId, outcome });
  return outcome;
}
