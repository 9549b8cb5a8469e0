// shell: a persistent bash shell in the session's sandbox, offered to the model as the toolset's `bash`.
import { z } from 'zod';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const ShellInputSchema = shared('shell.ShellInputSchema', () =>
  z
    .object({
      command: z
        .string()
        .min(1, 'command must not be empty')
        .max(100_000)
        .describe('the bash command to run')
        .optional(),
      restart: z.boolean().describe('start a fresh shell first').optional(),
      timeout_ms: z
        .number()
        .int('timeout_ms must be a whole number of milliseconds')
        .min(0, 'timeout_ms must not be negative')
        .max(24 * 3600 * 1000, 'timeout_ms must be at most a day')
        .describe('the timeout of this call in milliseconds; 0 or absent: the sandbox command timeout')
        .optional(),
    })
    .strict()
    .refine((i) => i.command !== undefined || i.restart === true, 'command is required unless restart is true'),
);
export type ShellInput = z.infer<typeof ShellInputSchema>;

export const shell = defineTool({
  kind: 'shell',
  runs: 'sandbox',
  input: ShellInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'command') ?? 'restart'}`),
  description:
    'Runs a bash command in a persistent shell in your sandbox: the working directory, variables and functions carry over to the next call. ' +
    'The first shell starts in the workspace directory. Returns stdout and stderr as produced, then a last line [exit N]. ' +
    'restart: true starts a fresh shell (alone, or before command). timeout_ms limits this call (default and at most: the sandbox command timeout); ' +
    'a command that runs past it is stopped with its shell, and the next call starts a fresh one.',
});
