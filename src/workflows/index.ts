// The worker's workflowsPath: re-exports every workflow.
export { sessionWorkflow } from './session';
export { deploymentRunWorkflow } from './deployment-run';
