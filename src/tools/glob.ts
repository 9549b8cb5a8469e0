// glob: the files of the session's sandbox whose paths match a pattern, newest first.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const GlobInputSchema = shared('glob.GlobInputSchema', () =>
  z
    .object({
      pattern: z
        .string()
        .min(1, 'pattern must not be empty')
        .max(4096)
        .refine((p) => !p.startsWith('/'), 'pattern must be relative: give the directory to search as path')
        .refine((p) => !p.split(/[/{},]/).includes('..'), 'pattern must not climb out with ..')
        .describe('a glob pattern such as **/*.ts'),
      path: ToolPathSchema.describe('the directory to search (default: the workspace directory)').optional(),
    })
    .strict(),
);
export type GlobInput = z.infer<typeof GlobInputSchema>;

export const glob = defineTool({
  kind: 'glob',
  runs: 'sandbox',
  input: GlobInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'pattern') ?? ''}`),
  description:
    'Lists the files in your sandbox whose paths match a glob pattern, newest first, as absolute paths. * and ? stay within a directory, ' +
    '** spans directories (**/*.ts), [abc] is a class and {a,b} alternatives. The pattern is relative to path (default: the workspace directory); ' +
    '.git and node_modules are skipped.',
});
