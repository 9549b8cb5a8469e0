// Task queue names shared by workers and clients.
export const BRAIN_TASK_QUEUE = 'agents';
/** MCP calls run here, on workers that hold VAULT_KEY. */
export const TOOLS_TASK_QUEUE = 'tools';
export const WORKFLOW_TYPE = 'sessionWorkflow';

export const WORKER_ROLES = ['brain', 'hands', 'tools', 'all'] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];
