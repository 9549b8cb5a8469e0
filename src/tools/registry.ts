// Every tool kind the platform runs. Adding a tool is adding its file and one line to TOOLS.
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
import { delegate, messageThread } from './coordinator';
import { write } from './write';

/** The one list of tool kinds; each says where it runs. */
const TOOLS = [
  sessionEvents,
  spawnAgent,
  delegate,
  messageThread,
  handoffSandbox,
  bash,
  editor,
  gitPush,
  gitPull,
  read,
  write,
  edit,
  glob,
  grep,
  shell,
] as const;

type AnyTool = (typeof TOOLS)[number];
export type ToolKindName = AnyTool['kind'];
/** Tools that run in the workflow itself, with no sandbox. */
export type BuiltinToolKind = Extract<AnyTool, { runs: 'workflow' }>['kind'];
/** Tools that run in a sandbox; each use is bound to one named sandbox. */
export type SandboxToolKind = Extract<AnyTool, { runs: 'sandbox' }>['kind'];

type NonEmpty<T> = readonly [T, ...T[]];
const kindsThatRun = <K extends string>(runs: ToolKind['runs']) =>
  TOOLS.filter((t) => t.runs === runs).map((t) => t.kind) as unknown as NonEmpty<K>;

export const BUILTIN_TOOLS = kindsThatRun<BuiltinToolKind>('workflow');
export const SANDBOX_TOOLS = kindsThatRun<SandboxToolKind>('sandbox');

export const TOOL_KINDS = Object.fromEntries(TOOLS.map((t) => [t.kind, t])) as { [T in AnyTool as T['kind']]: T };

/** The spec each kind offers the model, under its own name. */
export const TOOL_SPECS = Object.fromEntries(TOOLS.map((t) => [t.kind, t.spec])) as Record<ToolKindName, ToolSpec>;

/** The kind named `kind`, if there is one. */
export function toolKind(kind: string): ToolKind<unknown> | undefined {
  return Object.hasOwn(TOOL_KINDS, kind) ? (TOOL_KINDS[kind as ToolKindName] as ToolKind<unknown>) : undefined;
}

/** What a tool call does, named by the model-facing tool name: `bash: npm test`, `edit: view src/a.ts`. */
export function toolSummary(name: string, kind: string, input: unknown): string {
  const k = toolKind(kind);
  return k ? k.summary(name, input) : oneLine(name);
}
