// Sentences the model reads in tool results when infrastructure fails it, shared by the workflow that writes them
// and the local model server that recognises them (it calls a lost tool again when asked to), so neither copies
// the other's prose. The empty-reply nudge is EMPTY_REPLY_NUDGE in harness.ts.

/** A sandbox tool whose sandbox could not be made ready. */
export const notProvisioned = (sandbox: string, reason: string) =>
  `sandbox ${sandbox} could not be provisioned: ${reason}`;

/** A sandbox tool whose sandbox died under it; the session forgets the sandbox and provisions a fresh one. */
export const lostWhileRunning = (sandbox: string, reason: string) =>
  `sandbox ${sandbox} was lost while running this tool (${reason}); the next call gets a fresh sandbox`;

/** Whether a tool result says its call was lost to infrastructure (and so may be made again). */
export function lostToInfrastructure(text: string): boolean {
  return text.includes(' could not be provisioned: ') || text.includes(' was lost while running this tool (');
}
