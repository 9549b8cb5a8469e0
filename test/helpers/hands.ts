// Helpers for sandbox tests: drive tool calls through the model, and look at containers on the engine.
import Docker from 'dockerode';
import type { WorkflowHandle } from '@temporalio/client';
import { resolveDockerHost } from '../../src/host/docker-host';
import { LABEL } from '../../src/sandbox/docker';
import type { EventOf } from '../../src/session/events';
import { sendMessageUpdate } from '../../src/session/contract';
import type { Harness } from './env';
import { waitForEvents, turnDone } from './env';

export async function docker(): Promise<Docker> {
  const host = await resolveDockerHost();
  if (!host) throw new Error('no Docker engine answers: run `npm run setup`');
  return new Docker({ socketPath: host.replace(/^unix:\/\//, '') });
}

export async function sessionContainers(d: Docker, sessionId: string, all = true): Promise<Docker.ContainerInfo[]> {
  return d.listContainers({ all, filters: JSON.stringify({ label: [`${LABEL.session}=${sessionId}`] }) });
}

/**
 * Makes the model call `tool` with `input` once, then reply in text, and returns that call's result.
 * `beforeResult` runs once the tool_use is in the log, while the tool runs.
 */
export async function callTool(
  h: Harness,
  handle: WorkflowHandle,
  tool: string,
  input: Record<string, unknown>,
  opts: { timeoutMs?: number; during?: () => Promise<void> } = {},
): Promise<EventOf<'tool_result'>> {
  h.mock.script(handle.workflowId, { steps: [{ reply: { content: [{ type: 'tool_use', name: tool, input }] } }] });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: `call ${tool}` }] });
  if (opts.during) {
    await waitForEvents(handle, (ev) => ev.some((e) => e.seq > seq && e.type === 'tool_use'), opts.timeoutMs);
    await opts.during();
  }
  const events = await waitForEvents(handle, turnDone(seq), opts.timeoutMs ?? 120_000);
  const result = events.find((e) => e.seq > seq && e.type === 'tool_result');
  if (!result || result.type !== 'tool_result') throw new Error(`no tool_result after seq ${seq}`);
  return result;
}

export const bash = (h: Harness, handle: WorkflowHandle, command: string, opts?: Parameters<typeof callTool>[4]) =>
  callTool(h, handle, 'bash', { command }, opts);
