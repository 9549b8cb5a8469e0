// The worker's workflowsPath: re-exports every workflow.
export { sessionWorkflow } from './session';
export { deploymentRunWorkflow } from './deployment-run';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { sessionWebhookEventWorkflow } from './status-webhooks';
