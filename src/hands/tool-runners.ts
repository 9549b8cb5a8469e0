// How the hands host runs each sandbox tool kind. A kind that declares its command (`exec`, in src/tools/) runs it
// as bash runs a command; every other sandbox kind has its runner in TOOL_RUNNERS, keyed by kind: a kind with
// neither is a type error, and a call naming no kind is refused. Each runner gets the call's input already parsed
// with its kind's schema, so a tool's input is parsed once on this side.
import type { ExecRequest, ExecResult } from '../sandbox/provider';
import type { ExecOf, SandboxExec, ToolKind, ToolRuns } from '../tools/kind';
import type { SandboxToolKind, TOOL_KINDS } from '../tools/registry';
import type { ExecuteInput, ToolOutput } from './hands-contract';
import type { GitInput } from '../tools/git';
import { EDITOR_PY } from '../sandbox/scripts';
import { FILE_TOOLS_PY } from '../sandbox/file-tools';
import { SHELL_PY } from '../sandbox/shell-program';

/** What a runner may do for the call it runs. */
export interface RunContext {
  call: ExecuteInput;
  /** Runs one command once per tool_use, its output published live for `agents watch`. */
  streamed(req: Omit<ExecRequest, 'key' | 'maxOutputBytes' | 'onOutput' | 'liveBytes'>): Promise<ExecResult>;
  /** Runs a python3 program from `env` once per tool_use, its input as JSON on stdin. */
  python(program: string, env: Record<string, string>, stdin: unknown): Promise<ExecResult>;
  /** git_push or git_pull on the host, with the repo's credential the sandbox never sees. */
  git(op: 'push' | 'pull', input: GitInput): Promise<ToolOutput>;
}

/** The input of a kind, as its schema parses it. */
type InputOf<K extends SandboxToolKind> =
  (typeof TOOL_KINDS)[K] extends ToolKind<infer I, string, 'sandbox'> ? I : never;

/** Sandbox kinds that describe their command themselves, and so have no entry in TOOL_RUNNERS. */
type ExecKind = {
  [K in SandboxToolKind]: (typeof TOOL_KINDS)[K] extends { exec: (input: never) => SandboxExec } ? K : never;
}[SandboxToolKind];
/** Sandbox kinds whose runner TOOL_RUNNERS must hold. */
export type RunnerKind = Exclude<SandboxToolKind, ExecKind>;

export type ToolRunner<I> = (ctx: RunContext, input: I) => Promise<ToolOutput>;

export function formatBashOutput(output: string, exitCode: number, timedOut: boolean, timeoutSeconds: number): string {
  let text = output;
  if (text.length > 0 && !text.endsWith('\n')) text += '\n';
  if (timedOut) text += `[timed out after ${timeoutSeconds} s]\n`;
  return `${text}[exit ${exitCode}]`;
}

/** A tool's result from a command's, naming the file that holds the whole output when it was cut. */
function withOutputRef(r: ExecResult, output: string): ToolOutput {
  return {
    output,
    isError: r.exitCode !== 0,
    ...(r.fullOutputPath ? { outputRef: { path: r.fullOutputPath, bytes: r.outputBytes } } : {}),
  };
}

/** How much longer than its own timeout a shell call's wrapper waits for the shell server. */
const SHELL_GRACE_SECONDS = 15;

/** read, write, edit, glob and grep: FILE_TOOLS_PY, told which tool it runs. */
const fileTool =
  (tool: 'read' | 'write' | 'edit' | 'glob' | 'grep'): ToolRunner<unknown> =>
  async (ctx, input) => {
    const r = await ctx.python('MA_FILES', { MA_FILES: FILE_TOOLS_PY }, { tool, input });
    return withOutputRef(r, r.timedOut ? `${r.output}\n[timed out after ${ctx.call.timeoutSeconds} s]` : r.output);
  };

/** Runs a command as bash does: once per tool_use, streamed, within the call's timeout, then `[exit N]`. */
export async function runExec(ctx: RunContext, exec: SandboxExec): Promise<ToolOutput> {
  const timeoutSeconds = ctx.call.timeoutSeconds;
  const { script, env, stdin } = exec;
  const r = await ctx.streamed({
    script,
    timeoutSeconds,
    ...(env ? { env } : {}),
    ...(stdin !== undefined ? { stdin: Buffer.from(stdin) } : {}),
  });
  return withOutputRef(r, formatBashOutput(r.output, r.exitCode, r.timedOut, timeoutSeconds));
}

export const TOOL_RUNNERS: { [K in RunnerKind]: ToolRunner<InputOf<K>> } = {
  async bash(ctx, input) {
    if (input.command === undefined) return { output: 'tool has been restarted.', isError: false };
    return runExec(ctx, { script: input.command });
  },

  async shell(ctx, input) {
    // timeout_ms may shorten the sandbox's command timeout, never lengthen it: the activity's own timeout follows that one.
    const limitMs = ctx.call.timeoutSeconds * 1000;
    const timeoutMs = input.timeout_ms ? Math.min(Math.ceil(input.timeout_ms), limitMs) : limitMs;
    const { command, restart } = input;
    const r = await ctx.streamed({
      script: 'exec python3 -c "$MA_SHELL"',
      env: { MA_SHELL: SHELL_PY },
      stdin: Buffer.from(JSON.stringify({ command, restart, timeout_ms: timeoutMs })),
      // The shell server enforces timeoutMs; the wrapper's timeout only catches a server that stops answering.
      timeoutSeconds: Math.ceil(timeoutMs / 1000) + SHELL_GRACE_SECONDS,
    });
    if (command === undefined) return { output: r.output, isError: r.exitCode !== 0 };
    return withOutputRef(r, formatBashOutput(r.output, r.exitCode, false, 0));
  },

  async str_replace_based_edit_tool(ctx, input) {
    const r = await ctx.python('MA_EDITOR', { MA_EDITOR: EDITOR_PY }, input);
    return { output: r.output.replace(/\n$/, ''), isError: r.exitCode !== 0 };
  },

  git_push: (ctx, input) => ctx.git('push', input),
  git_pull: (ctx, input) => ctx.git('pull', input),

  read: fileTool('read'),
  write: fileTool('write'),
  edit: fileTool('edit'),
  glob: fileTool('glob'),
  grep: fileTool('grep'),
};

/**
 * The runner of a sandbox kind: its own `exec`, or its entry in TOOL_RUNNERS. None for a kind that does not run in
 * a sandbox, or that has neither; there is no catch-all.
 */
export function sandboxRunner(
  kind: { kind: string; runs: ToolRuns; exec?: ExecOf<never> } | undefined,
): ToolRunner<unknown> | undefined {
  if (kind?.runs !== 'sandbox') return undefined;
  const exec = kind.exec as ExecOf<unknown> | undefined;
  if (exec) return (ctx, input) => runExec(ctx, exec(input));
  return Object.hasOwn(TOOL_RUNNERS, kind.kind)
    ? (TOOL_RUNNERS[kind.kind as RunnerKind] as ToolRunner<unknown>)
    : undefined;
}
