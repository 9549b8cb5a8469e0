// What every tool kind is made of, and what a tool call gives back. One file per kind in this folder defines
// its name, the zod schema its input is parsed with (and the JSON schema the model is offered is derived from),
// where it runs, and the summary line the Web UI shows; registry.ts lists them. See docs/design/architecture.md.
import { z } from 'zod';
import { formatIssues } from '../session/issues';
import { shared } from '../session/shared';

/** A tool as the Messages API offers it to the model. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; [key: string]: unknown };
}

/** `sandbox`: on the hands host, in the sandbox the call is bound to; `workflow`: the session runs it itself. */
export type ToolRuns = 'sandbox' | 'workflow';

/**
 * A command a sandbox kind runs for a call: bash source run in the workspace directory, once per tool_use, its
 * output streamed live and returned as bash's is (then a last line `[exit N]`), within the call's timeout.
 */
export interface SandboxExec {
  script: string;
  env?: Record<string, string>;
  /** Written to the command's stdin, as UTF-8. */
  stdin?: string;
}

/** How a sandbox kind runs, as a pure and deterministic function of its parsed input (this folder is workflow code). */
export type ExecOf<Input> = (input: Input) => SandboxExec;

export interface ToolKind<Input = unknown, Kind extends string = string, Runs extends ToolRuns = ToolRuns> {
  kind: Kind;
  spec: ToolSpec;
  input: z.ZodType<Input, unknown>;
  runs: Runs;
  /** A sandbox tool that needs a repo declared on its sandbox. */
  needsRepo?: boolean;
  /** A sandbox tool's command, if the kind describes it itself; without it, its runner is in hands/tool-runners.ts. */
  exec?: ExecOf<Input>;
  /** The activity summary the Web UI shows for a call, named by the model-facing tool name. */
  summary(name: string, input: unknown): string;
}

/** Integer bounds zod adds to every `.int()`; they say nothing to the model. */
const SAFE_INT_BOUND = Number.MAX_SAFE_INTEGER;

/** Drops what JSON Schema output adds that the model needs not see: `$schema`, and the safe-integer bounds of `.int()`. */
function forModel(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forModel);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema') continue;
    if ((k === 'minimum' || k === 'maximum') && Math.abs(v as number) === SAFE_INT_BOUND) continue;
    out[k] = forModel(v);
  }
  return out;
}

/** The JSON schema of a tool's input, as the model is offered it: derived from the schema the call is parsed with. */
export function inputJsonSchema(input: z.ZodType): ToolSpec['input_schema'] {
  const schema = forModel(z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' })) as ToolSpec['input_schema'];
  return { ...schema, type: 'object', properties: schema.properties ?? {} };
}

interface ToolDef<Input, Kind extends string, Runs extends ToolRuns> {
  kind: Kind;
  runs: Runs;
  needsRepo?: boolean;
  input: z.ZodType<Input, unknown>;
  description: string;
  summary(name: string, input: unknown): string;
}

/**
 * A tool kind from its parts; its spec's input_schema is derived from `input` (field descriptions from `.describe()`).
 * A sandbox kind given `exec` runs that command and needs no entry in TOOL_RUNNERS; its type says it has one.
 */
export function defineTool<Input, Kind extends string>(
  def: ToolDef<Input, Kind, 'sandbox'> & { exec: ExecOf<Input> },
): ToolKind<Input, Kind, 'sandbox'> & { exec: ExecOf<Input> };
export function defineTool<Input, Kind extends string, Runs extends ToolRuns>(
  def: ToolDef<Input, Kind, Runs>,
): ToolKind<Input, Kind, Runs>;
export function defineTool<Input, Kind extends string, Runs extends ToolRuns>(
  def: ToolDef<Input, Kind, Runs> & { exec?: ExecOf<Input> },
): ToolKind<Input, Kind, Runs> {
  const { description, ...rest } = def;
  // Derived once per process: zod keeps `.describe()` in a registry of the evaluation that built the (shared)
  // schema, so a later session's evaluation would derive the schema without its field descriptions.
  const spec = shared(`kind.spec.${def.kind}`, () => ({
    name: def.kind,
    description,
    input_schema: inputJsonSchema(def.input),
  }));
  return { ...rest, spec };
}

/** What a tool call gives back: the tool_result's output, and why it failed if it did. */
export interface ToolOutcome {
  output: string;
  isError: boolean;
  error?: { kind: 'tool' | 'infra' | 'denied'; message: string };
  outputRef?: { sandbox: string; path: string; bytes: number };
}

export function toolError(message: string, kind: 'tool' | 'infra' | 'denied' = 'tool'): ToolOutcome {
  return { output: message, isError: true, error: { kind, message } };
}

/** The tool_result output for input its schema refuses, naming each field. */
export function invalidInput(name: string, error: z.ZodError): string {
  return `invalid input for ${name}: ${formatIssues(error)}`;
}

/** Output sent to the model is capped; the marker says how much was cut. */
export const MAX_TOOL_OUTPUT_CHARS = 32 * 1024;

export function capOutput(output: string, max = MAX_TOOL_OUTPUT_CHARS): string {
  if (output.length <= max) return output;
  const cut = output.length - max;
  return `${output.slice(0, max)}\n[output truncated: ${cut} of ${output.length} characters omitted]`;
}

const MAX_SUMMARY_CHARS = 80;

/** The first non-blank line of a summary, cut to MAX_SUMMARY_CHARS characters. */
export function oneLine(text: string): string {
  const line =
    text
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  return line.length > MAX_SUMMARY_CHARS ? `${line.slice(0, MAX_SUMMARY_CHARS - 1)}…` : line;
}

/** A string field of a tool's raw input, if it is one. */
export function field(input: unknown, name: string): string | undefined {
  const v = input && typeof input === 'object' ? (input as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : undefined;
}
