// write: a whole file of the session's sandbox, created or replaced.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { field, oneLine, type ToolKind } from './kind';
import { shared } from '../session/shared';

export const WriteInputSchema = shared('write.WriteInputSchema', () => z.object({ file_path: ToolPathSchema, content: z.string() }).strict());
export type WriteInput = z.infer<typeof WriteInputSchema>;

export const write: ToolKind<WriteInput> = {
  kind: 'write',
  runs: 'sandbox',
  input: WriteInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'file_path') ?? ''}`),
  spec: {
    name: 'write',
    description:
      'Writes content to a file in your sandbox, replacing the file if it exists and creating its parent directories. ' +
      'file_path is relative to the workspace directory, or absolute inside it.',
    input_schema: {
      type: 'object',
      properties: { file_path: { type: 'string', description: 'the file to write' }, content: { type: 'string', description: 'the whole new content' } },
      required: ['file_path', 'content'],
    },
  },
};
