// read: a text file of the session's sandbox, whole or a range of its lines.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { field, oneLine, type ToolKind } from './kind';
import { shared } from '../session/shared';

export const ReadInputSchema = shared('read.ReadInputSchema', () => z
  .object({
    file_path: ToolPathSchema,
    view_range: z
      .tuple([z.number().int().min(1, 'the first line is 1'), z.number().int()], { error: 'view_range is [start_line, end_line]' })
      .refine(([start, end]) => end <= 0 || end >= start, 'end_line must be 0 or less (the end of the file), or at least start_line')
      .optional(),
  })
  .strict());
export type ReadInput = z.infer<typeof ReadInputSchema>;

export const read: ToolKind<ReadInput> = {
  kind: 'read',
  runs: 'sandbox',
  input: ReadInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'file_path') ?? ''}`),
  spec: {
    name: 'read',
    description:
      'Reads a text file in your sandbox and returns its contents as they are. file_path is relative to the workspace directory, ' +
      'or absolute inside it. view_range [start_line, end_line] picks lines, 1-based and inclusive; an end_line of 0 or less reads to the end.',
    input_schema: {
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'the file to read' },
        view_range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2, description: '[start_line, end_line], 1-based and inclusive' },
      },
      required: ['file_path'],
    },
  },
};
