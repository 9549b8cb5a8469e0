// read: a text file of the session's sandbox, whole or a range of its lines.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const ReadInputSchema = shared('read.ReadInputSchema', () =>
  z
    .object({
      file_path: ToolPathSchema.describe('the file to read'),
      view_range: z
        .tuple([z.number().int().min(1, 'the first line is 1'), z.number().int()], {
          error: 'view_range is [start_line, end_line]',
        })
        .refine(
          ([start, end]) => end <= 0 || end >= start,
          'end_line must be 0 or less (the end of the file), or at least start_line',
        )
        .describe('[start_line, end_line], 1-based and inclusive')
        .optional(),
    })
    .strict(),
);
export type ReadInput = z.infer<typeof ReadInputSchema>;

export const read = defineTool({
  kind: 'read',
  runs: 'sandbox',
  input: ReadInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'file_path') ?? ''}`),
  description:
    'Reads a text file in your sandbox and returns its contents as they are. file_path is relative to the workspace directory, ' +
    'or absolute inside it or under /mnt (uploads, outputs, memory stores and skills). view_range [start_line, end_line] picks lines, 1-based and inclusive; an end_line of 0 or less reads to the end.',
});
