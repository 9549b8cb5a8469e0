// shell: a persistent bash shell in the session's sandbox, offered to the model as the toolset's `bash`.
import { z } from 'zod';
import { field, oneLine, type ToolKind } from './kind';
import { shared } from '../session/shared';

export const ShellInputSchema = shared('shell.ShellInputSchema', () => z
  .object({
    command: z.string().min(1, 'command must not be empty').max(100_000).optional(),
    restart: z.boolean().optional(),
    timeout_ms: z.number().min(0, 'timeout_ms must not be negative').max(24 * 3600 * 1000, 'timeout_ms must be at most a day').optional(),
  })
  .strict()
  .refine((i) => i.command !== undefined || i.restart === true, 'command is required unless restart is true'));
export type ShellInput = z.infer<typeof ShellInputSchema>;

export const shell: ToolKind<ShellInput> = {
  kind: 'shell',
  runs: 'sandbox',
  input: ShellInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'command') ?? 'restart'}`),
  spec: {
    name: 'shell',
    description:
      'Runs a bash command in a persistent shell in your sandbox: the working directory, variables and functions carry over to the next call. ' +
      'The first shell starts in the workspace directory. Returns stdout and stderr as produced, then a last line [exit N]. ' +
      'restart: true starts a fresh shell (alone, or before command). timeout_ms limits this call (default and at most: the sandbox command timeout); ' +
      'a command that runs past it is stopped with its shell, and the next call starts a fresh one.',
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'the bash command to run' },
        restart: { type: 'boolean', description: 'start a fresh shell first' },
        timeout_ms: { type: 'integer', minimum: 0, description: 'the timeout of this call in milliseconds; 0 or absent: the sandbox command timeout' },
      },
    },
  },
};
