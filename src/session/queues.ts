// Task queue names shared by workers and clients.
export const BRAIN_TASK_QUEUE = 'agents';
export const WORKFLOW_TYPE = 'sessionWorkflow';
