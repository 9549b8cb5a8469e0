// What a deployment's firing is on Temporal: the workflow a deployment's Schedule (and `deployments.run`) starts,
// its input, and the activities it calls on the tools queue, which hold the API's database and a Temporal client.
// Safe for workflow code; the API implements the activities (src/api/deployment-activities.ts).

/** The workflow type each firing starts (src/workflows/deployment-run.ts). */
export const DEPLOYMENT_RUN_WORKFLOW = 'deploymentRunWorkflow';

/** The input of every firing: the deployment; a manual run also names the run the API already answered with. */
export interface DeploymentRunInput {
  deploymentId: string;
  manual?: { runId: string };
}

/** How a run ended: the session it created, or why none was (`error.type` is one of the SDK's run error types). */
export type DeploymentRunOutcome = { sessionId: string } | { error: { type: string; message: string } };

/** The recorded run a firing works on; `finished` when a retried or repeated firing finds it already done. */
export interface StartedDeploymentRun {
  runId: string;
  finished: boolean;
}

export interface DeploymentRunActivities {
  /**
   * Records that the firing started (once per workflow id, and once per scheduled time): the run, with the agent
   * version it will use. Undefined when the deployment is archived or gone, so nothing is created.
   */
  startDeploymentRun(input: {
    deploymentId: string;
    workflowId: string;
    manual?: { runId: string };
    /** The Schedule's nominal time of this firing, ISO 8601; absent for a manual run. */
    scheduledAt?: string;
  }): Promise<StartedDeploymentRun | undefined>;
  /** Creates the run's session as `sessions.create` would; a refusal is a failed outcome, never a thrown error. */
  createDeploymentSession(input: { runId: string }): Promise<DeploymentRunOutcome>;
  /** Marks the run finished with its outcome; a scheduled run whose error calls for it pauses the deployment. */
  finishDeploymentRun(input: { runId: string; outcome: DeploymentRunOutcome }): Promise<void>;
}
