// One-line activity summaries the Web UI shows beside each activity, e.g. `model turn 7` or `bash: npm test`
// (a tool call's line comes from its kind, src/tools/). They are payloads like any other (sealed by the codec)
// but are still kept short and free of tool output.

/** `model turn N`, numbered within the run (`model turn N of run R` after a handover). */
export function modelSummary(turn: number, run: number): string {
  return run > 1 ? `model turn ${turn} of run ${run}` : `model turn ${turn}`;
}
