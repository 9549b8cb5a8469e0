// Sub-agent activities on the brain queue: which child sessions have closed, for a parent that can no longer
// see its children close (it continued as new after starting them).
import type { Client } from '@temporalio/client';

export function createSubagentActivities(deps: { client: Client }) {
  return {
    /** The sessions among `sessionIds` whose workflow is not running (closed, or unknown). */
    async closedSessions(input: { sessionIds: string[] }): Promise<string[]> {
      const closed: string[] = [];
      for (const id of input.sessionIds) {
        try {
          if ((await deps.client.workflow.getHandle(id).describe()).status.name !== 'RUNNING') closed.push(id);
        } catch (err) {
          if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
          closed.push(id);
        }
      }
      return closed;
    },
  };
}

export type SubagentActivities = ReturnType<typeof createSubagentActivities>;
