// Every tool kind the platform runs, by kind. Adding a tool is adding its file here and its name to one list.
import { bash } from './bash';
import { edit } from './edit';
import { editor } from './editor';
import { gitPull, gitPush } from './git';
import { glob } from './glob';
import { grep } from './grep';
import { handoffSandbox } from './handoff-sandbox';
import { oneLine, type ToolKind, type ToolSpec } from './kind';
import { read } from './read';
import { sessionEvents } from './session-events';
import { shell } from './shell';
import { spawnAgent } from './spawn-agent';
import { write } from './write';

/** Tools that run in the workflow itself, with no sandbox. */
export const BUILTIN_TOOLS = ['session_events', 'spawn_agent', 'handoff_sandbox'] as const;
/** Tools that run in a sandbox; each use is bound to one named sandbox. */
export const SANDBOX_TOOLS = ['bash', 'str_replace_based_edit_tool', 'git_push', 'git_pull', 'read', 'write', 'edit', 'glob', 'grep', 'shell'] as const;
export type BuiltinToolKind = (typeof BUILTIN_TOOLS)[number];
export type SandboxToolKind = (typeof SANDBOX_TOOLS)[number];
export type ToolKindName = BuiltinToolKind | SandboxToolKind;

export const TOOL_KINDS: Record<ToolKindName, ToolKind<unknown>> = {
  bash,
  str_replace_based_edit_tool: editor,
  git_push: gitPush,
  git_pull: gitPull,
  read,
  write,
  edit,
  glob,
  grep,
  shell,
  spawn_agent: spawnAgent,
  handoff_sandbox: handoffSandbox,
  session_events: sessionEvents,
};

/** The spec each kind offers the model, under its own name. */
export const TOOL_SPECS: Record<ToolKindName, ToolSpec> = Object.fromEntries(Object.entries(TOOL_KINDS).map(([k, t]) => [k, t.spec])) as Record<ToolKindName, ToolSpec>;

/** What a tool call does, named by the model-facing tool name: `bash: npm test`, `edit: view src/a.ts`. */
export function toolSummary(name: string, kind: string, input: unknown): string {
  const k = TOOL_KINDS[kind as ToolKindName] as ToolKind<unknown> | undefined;
  return k ? k.summary(name, input) : oneLine(name);
}
