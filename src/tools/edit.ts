// edit: one string replaced by another in a file of the session's sandbox.
import { z } from 'zod';
import { ToolPathSchema } from '../session/paths';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const EditInputSchema = shared('edit.EditInputSchema', () =>
  z
    .object({
      file_path: ToolPathSchema.describe('the file to edit'),
      old_string: z.string().min(1, 'old_string must not be empty').describe('the exact text to replace'),
      new_string: z.string().describe('the text to put in its place'),
      replace_all: z.boolean().describe('replace every occurrence (default: old_string must be unique)').optional(),
    })
    .strict(),
);
export type EditInput = z.infer<typeof EditInputSchema>;

export const edit = defineTool({
  kind: 'edit',
  runs: 'sandbox',
  input: EditInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'file_path') ?? ''}`),
  description:
    'Replaces old_string with new_string in a file in your sandbox. old_string must occur exactly once, unless replace_all is true, ' +
    'which replaces every occurrence; otherwise nothing is changed. file_path is relative to the workspace directory, or absolute inside it or under /mnt (uploads, outputs, memory stores and skills).',
});
