// write: a whole file of the session's sandbox, created or replaced.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const WriteInputSchema = shared('write.WriteInputSchema', () =>
  z
    .object({
      file_path: ToolPathSchema.describe('the file to write'),
      content: z.string().describe('the whole new content'),
    })
    .strict(),
);
export type WriteInput = z.infer<typeof WriteInputSchema>;

export const write = defineTool({
  kind: 'write',
  runs: 'sandbox',
  input: WriteInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'file_path') ?? ''}`),
  description:
    'Writes content to a file in your sandbox, replacing the file if it exists and creating its parent directories. ' +
    'file_path is relative to the workspace directory, or absolute inside it or under /mnt (uploads, outputs, memory stores and skills).',
});
