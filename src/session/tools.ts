// Tool definitions offered to the model, and the input schemas each tool's input is parsed with.
import { z } from 'zod';

export interface ToolSpec {
  name: string;
  description: string;
  input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}

export const SessionEventsInputSchema = z
  .object({
    from: z.number().int().nonnegative().default(0),
    limit: z.number().int().min(1).max(200).default(50),
  })
  .strict();

export const SpawnAgentInputSchema = z
  .object({
    task: z.string().trim().min(1, 'task must not be empty').max(100_000),
    agent: z.string().min(1).max(40).optional(),
    /** Sandboxes of this session lent to the child, which hands them back when it finishes. */
    sandboxes: z.array(z.string().min(1).max(31)).max(16).optional(),
  })
  .strict();
export type SpawnAgentInput = z.infer<typeof SpawnAgentInputSchema>;

export const HandoffSandboxInputSchema = z
  .object({
    sandbox: z.string().min(1).max(31),
    to: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, 'to is a session id: 1-200 letters, digits, dot, dash or underscore'),
  })
  .strict();
export type HandoffSandboxInput = z.infer<typeof HandoffSandboxInputSchema>;

export const BashInputSchema = z
  .object({
    command: z.string().min(1, 'command must not be empty').max(100_000).optional(),
    restart: z.boolean().optional(),
  })
  .strict()
  .refine((i) => i.command !== undefined || i.restart === true, 'command is required');
export type BashInput = z.infer<typeof BashInputSchema>;

export const EditorInputSchema = z
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
  .strict();
export type EditorInput = z.infer<typeof EditorInputSchema>;

/** A plain branch name: no option-like start, no `..`, `@{`, wildcard or refspec characters. */
export const BRANCH_NAME_RE = /^(?!.*\.\.)(?!\/)(?!.*\/$)(?!.*@\{)(?!-)[A-Za-z0-9._/-]{1,200}$/;

export const GitInputSchema = z
  .object({
    branch: z.string().regex(BRANCH_NAME_RE, 'branch must be a plain branch name').optional(),
    force: z.boolean().optional(),
  })
  .strict();
export type GitInput = z.infer<typeof GitInputSchema>;

export const TOOL_SPECS: Record<string, ToolSpec> = {
  git_push: {
    name: 'git_push',
    description:
      "Pushes a branch of the workspace's repository to its upstream (origin). Commit first with bash. " +
      'The push runs outside your sandbox with credentials you never see. Default: the current branch.',
    input_schema: {
      type: 'object',
      properties: { branch: { type: 'string' }, force: { type: 'boolean', description: 'allow a non-fast-forward push' } },
    },
  },
  git_pull: {
    name: 'git_pull',
    description:
      'Fetches a branch from the upstream (origin) into refs/remotes/origin/<branch> and fast-forwards the local branch to it. ' +
      'Default: the current branch.',
    input_schema: { type: 'object', properties: { branch: { type: 'string' } } },
  },
  bash: {
    name: 'bash',
    description:
      'Runs a bash command in your sandbox, in its workspace directory, and returns its stdout and stderr as produced, ' +
      'then a last line [exit N]. Each call is a fresh shell; files in the workspace persist. The sandbox has no network.',
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'the bash command to run' },
        restart: { type: 'boolean', description: 'restart the shell (each call already gets a fresh one)' },
      },
    },
  },
  str_replace_based_edit_tool: {
    name: 'str_replace_based_edit_tool',
    description:
      'Views, creates and edits files in your sandbox. view shows a file with line numbers (or lists a directory); ' +
      'create writes file_text; str_replace replaces old_str, which must occur exactly once, with new_str; ' +
      'insert puts insert_text after line insert_line (0 for the top). Relative paths are inside the workspace.',
    input_schema: {
      type: 'object',
      properties: {
        command: { type: 'string', enum: ['view', 'create', 'str_replace', 'insert'] },
        path: { type: 'string' },
        file_text: { type: 'string' },
        old_str: { type: 'string' },
        new_str: { type: 'string' },
        insert_line: { type: 'integer', minimum: 0 },
        insert_text: { type: 'string' },
        view_range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 },
      },
      required: ['command', 'path'],
    },
  },
  spawn_agent: {
    name: 'spawn_agent',
    description:
      'Starts a sub-agent: a separate session that works on `task` with its own sandboxes and returns its final answer as this ' +
      "tool's result. Several spawn_agent calls in one reply run in parallel. `agent` picks a sub-agent declared in your agent file " +
      '(default: one like you). `sandboxes` lends it some of your sandboxes, files and all; you cannot use them until it finishes and hands them back.',
    input_schema: {
      type: 'object',
      properties: {
        task: { type: 'string', description: 'what the sub-agent should do and what to answer' },
        agent: { type: 'string', description: 'the name of a declared sub-agent' },
        sandboxes: { type: 'array', items: { type: 'string' }, description: 'names of your sandboxes to lend it' },
      },
      required: ['task'],
    },
  },
  handoff_sandbox: {
    name: 'handoff_sandbox',
    description:
      'Passes one of your sandboxes, with its files, to another session for good. The container stays where it is; ' +
      'from then on only that session may use it, and your own later calls to it are denied.',
    input_schema: {
      type: 'object',
      properties: { sandbox: { type: 'string', description: 'the name of your sandbox' }, to: { type: 'string', description: 'the session id to give it to' } },
      required: ['sandbox', 'to'],
    },
  },
  session_events: {
    name: 'session_events',
    description:
      "Reads a slice of this session's own event log (user messages, your replies, tool calls and results), numbered from 0. " +
      'Use it to re-read what happened earlier. Returns JSON {events, nextSeq}.',
    input_schema: {
      type: 'object',
      properties: {
        from: { type: 'integer', minimum: 0, description: 'first event number to return' },
        limit: { type: 'integer', minimum: 1, maximum: 200, description: 'how many events to return' },
      },
    },
  },
};

/** Output sent to the model is capped; the marker says how much was cut. */
export const MAX_TOOL_OUTPUT_CHARS = 32 * 1024;

export function capOutput(output: string, max = MAX_TOOL_OUTPUT_CHARS): string {
  if (output.length <= max) return output;
  const cut = output.length - max;
  return `${output.slice(0, max)}\n[output truncated: ${cut} of ${output.length} characters omitted]`;
}
