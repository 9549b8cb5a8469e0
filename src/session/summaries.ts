// One-line activity summaries the Web UI shows beside each activity, e.g. `model turn 7` or `bash: npm test`.
// They are payloads like any other (sealed by the codec) but are still kept short and free of tool output.

const MAX_SUMMARY_CHARS = 80;

function oneLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return line.length > MAX_SUMMARY_CHARS ? `${line.slice(0, MAX_SUMMARY_CHARS - 1)}…` : line;
}

function field(input: unknown, name: string): string | undefined {
  const v = input && typeof input === 'object' ? (input as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** `model turn N`, numbered within the run (`model turn N of run R` after a handover). */
export function modelSummary(turn: number, run: number): string {
  return run > 1 ? `model turn ${turn} of run ${run}` : `model turn ${turn}`;
}

/** What a tool call does, named by the model-facing tool name: `bash: npm test`, `edit: view src/a.ts`. */
export function toolSummary(name: string, kind: string, input: unknown): string {
  if (kind === 'bash') return oneLine(`${name}: ${field(input, 'command') ?? ''}`);
  if (kind === 'str_replace_based_edit_tool') return oneLine(`${name}: ${field(input, 'command') ?? ''} ${field(input, 'path') ?? ''}`);
  return oneLine(name);
}
