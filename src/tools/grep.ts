// grep: the lines of files in the session's sandbox that match a regular expression.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const GrepInputSchema = shared('grep.GrepInputSchema', () =>
  z
    .object({
      pattern: z.string().min(1, 'pattern must not be empty').max(10_000).describe('the regular expression'),
      path: ToolPathSchema.describe('a directory or file to search (default: the workspace directory)').optional(),
    })
    .strict(),
);
export type GrepInput = z.infer<typeof GrepInputSchema>;

export const grep = defineTool({
  kind: 'grep',
  runs: 'sandbox',
  input: GrepInputSchema,
  summary: (name, input) =>
    oneLine(`${name}: ${field(input, 'pattern') ?? ''}${field(input, 'path') ? ` in ${field(input, 'path')}` : ''}`),
  description:
    'Searches the files in your sandbox for lines matching a regular expression (Python re syntax) and returns them as path:line:text, ' +
    'with absolute paths. path is a directory to search or one file (default: the workspace directory); .git, node_modules and binary files are skipped.',
});
