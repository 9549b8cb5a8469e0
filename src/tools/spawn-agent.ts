// spawn_agent: a child session that works on a task and answers it as this tool's result.
import { z } from 'zod';
import { oneLine, type ToolKind } from './kind';
import { shared } from '../session/shared';

export const SpawnAgentInputSchema = shared('spawn-agent.SpawnAgentInputSchema', () => z
  .object({
    task: z.string().trim().min(1, 'task must not be empty').max(100_000),
    agent: z.string().min(1).max(40).optional(),
    /** Sandboxes of this session lent to the child, which hands them back when it finishes. */
    sandboxes: z.array(z.string().min(1).max(31)).max(16).optional(),
  })
  .strict());
export type SpawnAgentInput = z.infer<typeof SpawnAgentInputSchema>;

export const spawnAgent: ToolKind<SpawnAgentInput> = {
  kind: 'spawn_agent',
  runs: 'workflow',
  input: SpawnAgentInputSchema,
  summary: (name) => oneLine(name),
  spec: {
    name: 'spawn_agent',
    description:
      'Starts a sub-agent: a separate session that works on `task` with its own sandboxes and returns its final answer as this ' +
      "tool's result. Several spawn_agent calls in one reply run in parallel. `agent` picks a sub-agent declared in your agent file " +
      '(default: one like you). `sandboxes` lends it some of your sandboxes, files and all; you cannot use them until it finishes and hands them back.',
    input_schema: {
      type: 'object',
      properties: {
        task: { type: 'string', description: 'what the sub-agent should do and what to answer' },
        agent: { type: 'string', description: 'the name of a declared sub-agent' },
        sandboxes: { type: 'array', items: { type: 'string' }, description: 'names of your sandboxes to lend it' },
      },
      required: ['task'],
    },
  },
};
