// bash: a command in the session's sandbox, in its workspace directory.
import { z } from 'zod';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const BashInputSchema = shared('bash.BashInputSchema', () =>
  z
    .object({
      command: z
        .string()
        .min(1, 'command must not be empty')
        .max(100_000)
        .describe('the bash command to run')
        .optional(),
      restart: z.boolean().describe('restart the shell (each call already gets a fresh one)').optional(),
    })
    .strict()
    .refine((i) => i.command !== undefined || i.restart === true, 'command is required'),
);
export type BashInput = z.infer<typeof BashInputSchema>;

export const bash = defineTool({
  kind: 'bash',
  runs: 'sandbox',
  input: BashInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'command') ?? ''}`),
  description:
    'Runs a bash command in your sandbox, in its workspace directory, and returns its stdout and stderr as produced, ' +
    'then a last line [exit N]. Each call is a fresh shell; files in the workspace persist. The sandbox has no network.',
});
