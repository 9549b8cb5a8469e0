// spawn_agent: a child session that works on a task and answers it as this tool's result.
import { z } from 'zod';
import { defineTool, oneLine } from './kind';
import { shared } from '../session/shared';

export const SpawnAgentInputSchema = shared('spawn-agent.SpawnAgentInputSchema', () =>
  z
    .object({
      task: z
        .string()
        .trim()
        .min(1, 'task must not be empty')
        .max(100_000)
        .describe('what the sub-agent should do and what to answer'),
      agent: z.string().min(1).max(40).describe('the name of a declared sub-agent').optional(),
      /** Sandboxes of this session lent to the child, which hands them back when it finishes. */
      sandboxes: z.array(z.string().min(1).max(31)).max(16).describe('names of your sandboxes to lend it').optional(),
    })
    .strict(),
);
export type SpawnAgentInput = z.infer<typeof SpawnAgentInputSchema>;

export const spawnAgent = defineTool({
  kind: 'spawn_agent',
  runs: 'workflow',
  input: SpawnAgentInputSchema,
  summary: (name) => oneLine(name),
  description:
    'Starts a sub-agent: a separate session that works on `task` with its own sandboxes and returns its final answer as this ' +
    "tool's result. Several spawn_agent calls in one reply run in parallel. `agent` picks a sub-agent declared in your agent file " +
    '(default: one like you). `sandboxes` lends it some of your sandboxes, files and all; you cannot use them until it finishes and hands them back.',
});
