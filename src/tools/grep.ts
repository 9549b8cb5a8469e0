// grep: the lines of files in the session's sandbox that match a regular expression.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { field, oneLine, type ToolKind } from './kind';
import { shared } from '../session/shared';

export const GrepInputSchema = shared('grep.GrepInputSchema', () => z.object({ pattern: z.string().min(1, 'pattern must not be empty').max(10_000), path: ToolPathSchema.optional() }).strict());
export type GrepInput = z.infer<typeof GrepInputSchema>;

export const grep: ToolKind<GrepInput> = {
  kind: 'grep',
  runs: 'sandbox',
  input: GrepInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'pattern') ?? ''}${field(input, 'path') ? ` in ${field(input, 'path')}` : ''}`),
  spec: {
    name: 'grep',
    description:
      'Searches the files in your sandbox for lines matching a regular expression (Python re syntax) and returns them as path:line:text, ' +
      'with absolute paths. path is a directory to search or one file (default: the workspace directory); .git, node_modules and binary files are skipped.',
    input_schema: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'the regular expression' },
        path: { type: 'string', description: 'a directory or file to search (default: the workspace directory)' },
      },
      required: ['pattern'],
    },
  },
};
