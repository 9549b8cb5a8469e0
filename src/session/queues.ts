// Task queue names shared by workers and clients.
export const BRAIN_TASK_QUEUE = 'agents';
export const WORKFLOW_TYPE = 'sessionWorkflow';

export const WORKER_ROLES = ['brain', 'hands', 'all'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];
