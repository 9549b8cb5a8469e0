// Helpers for sessions that wait on approvals and client tools.
import type { WorkflowHandle } from '@temporalio/client';
import type { MockStep } from '../../src/dev/model-script';
import { statusQuery, userMessageSignal, type PendingAction, type SessionStatus } from '../../src/session/contract';

/** Polls the status query until `pred` holds for it. */
export async function statusUntil(
  handle: WorkflowHandle,
  pred: (s: SessionStatus) => boolean,
  timeoutMs = 60_000,
): Promise<SessionStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await handle.query(statusQuery);
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`status condition not met within ${timeoutMs} ms: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the session waits on an approval or a client tool, and returns what it waits on. */
export async function requiresAction(handle: WorkflowHandle, timeoutMs?: number): Promise<PendingAction[]> {
  return (await statusUntil(handle, (s) => s.state === 'requires_action' && (s.pending?.length ?? 0) > 0, timeoutMs))
    .pending!;
}

/** Sends user messages one at a time while the session waits, until its run hands over (continue-as-new). */
export async function messagesUntilHandover(handle: WorkflowHandle): Promise<void> {
  for (let i = 0; ((await handle.query(statusQuery)).run ?? 1) < 2; i++) {
    if (i >= 300) throw new Error('no handover after 300 messages');
    await handle.signal(userMessageSignal, { text: `waiting ${i}` });
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A scripted model reply that makes one tool call, after a line of `text` if given. */
export const toolStep = (name: string, input: Record<string, unknown>, text?: string): MockStep => ({
  reply: {
    content: [...(text !== undefined ? [{ type: 'text' as const, text }] : []), { type: 'tool_use', name, input }],
  },
});

/** A scripted reply that reads the session's own log from its start (the one the built-in brain gives a question about the log). */
export const readLogStep: MockStep = toolStep('session_events', { from: 0, limit: 20 }, 'Let me read the session log.');
