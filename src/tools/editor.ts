// str_replace_based_edit_tool: view, create and edit files in the session's sandbox.
import { z } from 'zod';
import { defineTool, field, oneLine } from './kind';
import { shared } from '../session/shared';

export const EditorInputSchema = shared('editor.EditorInputSchema', () =>
  z
    .object({
      command: z.enum(['view', 'create', 'str_replace', 'insert']),
      path: z.string().min(1).max(4096),
      file_text: z.string().optional(),
      old_str: z.string().optional(),
      new_str: z.string().optional(),
      insert_line: z.number().int().nonnegative().optional(),
      insert_text: z.string().optional(),
      view_range: z.tuple([z.number().int(), z.number().int()]).optional(),
    })
    .strict(),
);
export type EditorInput = z.infer<typeof EditorInputSchema>;

export const editor = defineTool({
  kind: 'str_replace_based_edit_tool',
  runs: 'sandbox',
  input: EditorInputSchema,
  summary: (name, input) => oneLine(`${name}: ${field(input, 'command') ?? ''} ${field(input, 'path') ?? ''}`),
  description:
    'Views, creates and edits files in your sandbox. view shows a file with line numbers (or lists a directory); ' +
    'create writes file_text; str_replace replaces old_str, which must occur exactly once, with new_str; ' +
    'insert puts insert_text after line insert_line (0 for the top). Relative paths are inside the workspace.',
});
