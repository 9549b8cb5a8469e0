// Helpers for sub-agent and hand-off tests: scripted turns of a parent, and picking events out of a log.
import type { WorkflowHandle } from '@temporalio/client';
import type { EventOf, SessionEvent } from '../../src/session/events';
import type { MockBlock } from '../../src/dev/model-script';
import { sendMessageUpdate } from '../../src/session/contract';
import { turnDone, waitForEvents, type Harness } from './env';

export const spawn = (id: string, input: Record<string, unknown>): MockBlock => ({
  type: 'tool_use',
  id,
  name: 'spawn_agent',
  input,
});

/** Scripts the session's next reply and sends a message; returns the log once that turn has finished. */
export async function turn(
  h: Harness,
  handle: WorkflowHandle,
  content: MockBlock[],
  timeoutMs = 120_000,
): Promise<SessionEvent[]> {
  h.mock.script(handle.workflowId, { steps: [{ reply: { content } }] });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
  return waitForEvents(handle, turnDone(seq), timeoutMs);
}

export const resultOf = (events: SessionEvent[], toolUseId: string) =>
  events.find((e): e is EventOf<'tool_result'> => e.type === 'tool_result' && e.toolUseId === toolUseId);
export const ofType = <T extends SessionEvent['type']>(events: SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);
