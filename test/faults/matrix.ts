// The fault matrix: a scripted multi-turn session with tool calls, and one fault injected at one phase of it.
// After each cell the session must reach the same final shape as a run without faults (apart from `error`
// events and tool calls lost to infrastructure, which the model makes again), with a gap-free log, at most
// one tool_result per tool_use id, an exact side-effect counter, no orphan container and no failed workflow task.
import { WorkflowHandle } from '@temporalio/client';
import { ArchivedSessionLog, LiveSessionLog, readEvents } from '../../src/log/session-log';
import type { MockStep } from '../../src/dev/model-script';
import { reapOrphans } from '../../src/sandbox/reaper';
import type { SessionEvent } from '../../src/session/events';
import { BRAIN_TASK_QUEUE } from '../../src/session/queues';
import { endSignal, sendMessageUpdate, statusQuery } from '../../src/session/contract';
import { testAgent, testArchive, uniqueId } from '../helpers/env';
import type { FaultStack } from './stack';

export const PHASES = [
  'waiting',
  'model_in_flight',
  'mid_stream',
  'tool_dispatch',
  'execute_in_flight',
  'provisioning',
  'handover',
] as const;
export const FAULTS = [
  'kill_brain',
  'kill_hands',
  'kill_sandbox',
  'restart_docker',
  'restart_temporal',
  'model_429',
  'model_500',
  'model_529',
  'model_timeout',
  'model_drop',
] as const;
export type Phase = (typeof PHASES)[number];
export type Fault = (typeof FAULTS)[number];

export interface CellResult {
  fault: Fault | 'none';
  phase: Phase | 'none';
  pass: boolean;
  /** From the injection to the session's next progress: a model reply or a successful tool result. */
  recoveryMs?: number;
  problems: string[];
  shape: string[];
}

/** The task: four steps that each append to a counter in the workspace, then a look at the counter. */
const STEPS = 4;
const messages = [
  ...Array.from({ length: STEPS }, (_, i) => `step ${i + 1}: \`sleep 1; echo ${i + 1} >> counter.txt\``),
  'check: `cat counter.txt`',
];

const agent = () =>
  testAgent({
    tools: ['bash'],
    sandboxes: { main: { setup: ['sleep 1'], idleStopMinutes: 60 } },
    limits: {
      historyEvents: 100,
      handsScheduleToStartMs: 3000,
      handsHeartbeatTimeoutMs: 3000,
      modelHeartbeatTimeoutMs: 3000,
      modelStreamIdleMs: 3000,
      modelRetry: { initialIntervalMs: 200, maximumIntervalMs: 1000, maxAttempts: 40 },
    },
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isModelFault = (f: Fault) => f.startsWith('model_');

/** The model response a model fault turns into, outside a stream and in the middle of one. */
function modelStep(fault: Fault, midStream: boolean): MockStep {
  const status = { model_429: 429, model_500: 500, model_529: 529 }[fault as 'model_429'];
  if (fault === 'model_drop') return { dropMidStream: true };
  if (fault === 'model_timeout') return midStream ? { chunkDelayMs: 20_000 } : { firstByteDelayMs: 20_000 };
  if (midStream) return { errorMidStream: status };
  return { status, ...(status === 429 ? { retryAfter: 1 } : {}) };
}

/** Retries a client call through a Temporal restart. */
export async function retrying<T>(fn: () => Promise<T>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}

/**
 * What must come out the same with or without a fault: user messages, successful tool outputs and the
 * model's final replies. Errors, infra tool results and the calls the model makes again are left out.
 */
export function shapeOf(events: SessionEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.type === 'user_message') out.push(`user: ${e.text}`);
    if (e.type === 'tool_result' && !e.isError) out.push(`result: ${e.output}`);
    if (e.type === 'assistant_message' && e.stopReason === 'end_turn')
      out.push(`reply: ${e.content.map((b) => String(b.text ?? '')).join('')}`);
    if (e.type === 'session_ended') out.push('ended');
  }
  return out;
}

export async function runCell(
  stack: FaultStack,
  fault: Fault | 'none',
  phase: Phase | 'none',
  baseline?: string[],
): Promise<CellResult> {
  const id = uniqueId(`fault-${fault}-${phase}`);
  const problems: string[] = [];
  const mock = stack.mock;
  let injectedAt: number | undefined;
  let injected = false;

  const inject = async () => {
    if (injected || fault === 'none') return;
    injected = true;
    injectedAt = Date.now();
    switch (fault) {
      case 'kill_brain':
        return stack.killBrain();
      case 'kill_hands':
        return stack.killHands();
      case 'kill_sandbox':
        return void (await stack.killSandbox(id));
      case 'restart_docker':
        return void (await stack.restartDocker());
      case 'restart_temporal':
        return stack.restartTemporal();
      default:
        // A model fault outside a model call: the next model response is the fault.
        return mock.script(id, { steps: [modelStep(fault, false)] });
    }
  };

  const handle = () => stack.client.workflow.getHandle(id);
  const log = new ArchivedSessionLog(testArchive(), new LiveSessionLog(stack.client));
  const events = () => retrying(() => readEvents(log, id, 0));
  const lastRequest = () =>
    mock
      .requests(id)
      .filter((r) => r.path === '/v1/messages')
      .pop();

  await retrying(() =>
    stack.client.workflow.start('sessionWorkflow', {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: id,
      args: [{ agent: agent() }],
    }),
  );
  for (const [i, text] of messages.entries()) {
    const turn = i + 1;
    if (turn === 2 && phase === 'waiting') await inject();
    if (turn === 2 && (phase === 'model_in_flight' || phase === 'mid_stream')) {
      const slow: MockStep = phase === 'model_in_flight' ? { firstByteDelayMs: 1500 } : { chunkDelayMs: 250 };
      mock.script(id, {
        steps: [
          fault !== 'none' && isModelFault(fault) ? { ...slow, ...modelStep(fault, phase === 'mid_stream') } : slow,
        ],
      });
    }
    const { seq } = await retrying(() =>
      handle().executeUpdate(sendMessageUpdate, { args: [{ text, messageId: `${id}-${turn}` }] }),
    );
    // Watch for the phase while the turn runs, then wait for it to finish.
    const deadline = Date.now() + 180_000;
    for (;;) {
      if (!injected && fault !== 'none') {
        const armed = await phaseReached(phase, turn, seq);
        if (armed) await inject();
      }
      const status = await handle()
        .query(statusQuery)
        .catch(() => undefined);
      if (status) {
        if (status.state === 'waiting_for_user' && status.lastSeq > seq) break;
      }
      if (Date.now() > deadline) {
        problems.push(`turn ${turn} did not finish within 180 s`);
        break;
      }
      await sleep(25);
    }
    if (problems.length) break;
  }

  async function phaseReached(p: Phase | 'none', turn: number, seq: number): Promise<boolean> {
    switch (p) {
      case 'model_in_flight': {
        const r = lastRequest();
        // For a model fault the in-flight response is itself the fault.
        return turn === 2 && r !== undefined && r.status === 0;
      }
      case 'mid_stream': {
        const r = lastRequest();
        if (turn !== 2 || !r || r.firstByteAt === undefined) return false;
        if (!isModelFault(fault as Fault)) await sleep(300);
        return true;
      }
      case 'tool_dispatch':
      case 'execute_in_flight': {
        if (turn !== 2) return false;
        const ev = await events();
        if (!ev.some((e) => e.seq > seq && e.type === 'tool_use')) return false;
        if (p === 'execute_in_flight') await sleep(600);
        return true;
      }
      case 'provisioning': {
        if (turn !== 1) return false;
        const containers = await stack.provider.docker
          .listContainers({ filters: JSON.stringify({ label: [`managed-agents.session=${id}`] }) })
          .catch(() => []);
        if (containers.length === 0) return false;
        return !(await events()).some((e) => e.type === 'sandbox_provisioned');
      }
      case 'handover': {
        const s = await handle()
          .query(statusQuery)
          .catch(() => undefined);
        return (s?.run ?? 1) > 1;
      }
      default:
        return false;
    }
  }

  if (fault !== 'none' && !injected) problems.push(`the phase ${phase} was never reached, so nothing was injected`);

  // End the session, let the reaper run, and check the aftermath.
  await retrying(() => handle().signal(endSignal, { reason: 'cell done' }));
  await retrying(() => handle().result()).catch((err) =>
    problems.push(`the session did not complete: ${(err as Error).message}`),
  );
  const log2 = await events();
  let recoveryMs: number | undefined;
  if (injectedAt !== undefined) {
    // Progress after the fault: the next model reply or successful tool result appended after the injection.
    const next = log2.find(
      (e) =>
        Date.parse(e.time) >= injectedAt! &&
        (e.type === 'assistant_message' || (e.type === 'tool_result' && !e.isError)),
    );
    if (next) recoveryMs = Math.max(0, Date.parse(next.time) - injectedAt);
  }
  const seqs = log2.map((e) => e.seq);
  if (seqs.some((s, i) => s !== i)) problems.push('the log has a gap in seq');
  const results = new Map<string, number>();
  for (const e of log2) if (e.type === 'tool_result') results.set(e.toolUseId, (results.get(e.toolUseId) ?? 0) + 1);
  for (const [tool, n] of results) if (n > 1) problems.push(`tool_use ${tool} has ${n} results`);
  const shape = shapeOf(log2);
  const counter = shape.find(
    (s) => s.startsWith('result: ') && /^result: (\d+\n)+\[exit 0\]$/.test(s) && s.includes('\n4\n'),
  );
  if (counter !== `result: ${Array.from({ length: STEPS }, (_, i) => i + 1).join('\n')}\n[exit 0]`)
    problems.push(`the counter reads ${JSON.stringify(counter)}`);
  if (baseline && JSON.stringify(shape) !== JSON.stringify(baseline))
    problems.push(
      `final shape differs: ${JSON.stringify(shape.filter((s) => !baseline.includes(s)))} vs ${JSON.stringify(baseline.filter((s) => !shape.includes(s)))}`,
    );
  await reapOrphans({ provider: stack.provider, client: stack.client, hostId: stack.hostId, graceMs: 0 }).catch((err) =>
    problems.push(`reaper failed: ${(err as Error).message}`),
  );
  const left = await stack.provider.docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`managed-agents.session=${id}`] }),
  });
  if (left.length) problems.push(`${left.length} container(s) left after the reaper ran`);
  const failedTasks = await failedWorkflowTasks(stack, id);
  if (failedTasks.length) problems.push(`workflow tasks failed: ${failedTasks.join('; ')}`);
  return { fault, phase, pass: problems.length === 0, recoveryMs, problems, shape };
}

/** WorkflowTaskFailed events in any run of the session (a killed worker times its task out; it never fails one). */
async function failedWorkflowTasks(stack: FaultStack, id: string): Promise<string[]> {
  const out: string[] = [];
  for await (const run of stack.client.workflow.list({ query: `WorkflowId = '${id}'` })) {
    const history = await (stack.client.workflow.getHandle(id, run.runId) as WorkflowHandle).fetchHistory();
    for (const e of history.events ?? []) {
      const failed = e.workflowTaskFailedEventAttributes;
      if (failed) out.push(`${failed.cause ?? 'unknown cause'}: ${failed.failure?.message ?? ''}`.slice(0, 300));
    }
  }
  return out;
}
