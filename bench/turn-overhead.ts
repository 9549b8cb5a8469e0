// Harness overhead per turn: the same scripted task (each turn: a bash tool call, its result, a text reply) as a
// plain in-process loop over the same model client and sandbox provider, and as a platform session.
import type { WorkflowHandle } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SessionEvent } from '../src/session/events';
import { temporal } from '@temporalio/proto';
import { uniqueId, testAgent } from '../test/helpers/env';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { AnthropicModelClient, type ModelRequest } from '../src/model/model-client';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { SandboxRecipeSchema, type Agent } from '../src/session/agent';
import type { ApiMessage } from '../src/session/context';
import { buildToolSpecs } from '../src/tools/offer';
import { formatBashOutput } from '../src/hands/hands-activities';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { sendMessageUpdate } from '../src/session/contract';
import { SETTINGS, percentile, armStats, endSession, interleave, liveEvents, type BenchResult, type Ctx } from './lib';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
/** How long after the model's last reply of a turn its history is first read: the turn's last workflow task runs meanwhile. */
const TURN_END_MARGIN_MS = 100;

type Arm = 'inprocess' | 'platform' | 'platform_local';
/** Measured turns per arm (quick, full): an execute in gVisor varies by tens of ms from call to call. */
const TURNS = { quick: 20, full: 40 };
export const MODEL_CALLS_PER_TURN = 2;
export const ACTIVITIES_PER_TURN = 3; // callModel, execute, callModel

export const turnText = (i: number) => `step ${i}: please run \`echo turn ${i} && ls /workspace | wc -l\``;

/** The agent of the platform sessions that the in-process loop is compared with. */
export const BENCH_AGENT = () => testAgent({ system: 'You are a test agent.' });

/** The model request a platform session of `agent` sends over `messages`: its model, system prompt, tools, limits, caching. */
export function agentRequest(agent: Agent, sessionId: string, messages: ApiMessage[]): ModelRequest {
  return {
    sessionId,
    model: agent.model,
    system: agent.system,
    messages,
    tools: buildToolSpecs(agent),
    maxTokens: agent.limits.maxOutputTokens,
    cache: agent.promptCaching,
  };
}

export class InProcessLoop {
  private readonly messages: ApiMessage[] = [];
  private sandboxId = '';
  private readonly model: AnthropicModelClient;
  /** The loop's own time in the model client and in execute, per call, for the profile. */
  readonly modelMs: number[] = [];
  readonly executeMs: number[] = [];
  constructor(
    private readonly ctx: Ctx,
    private readonly provider: DockerSandboxProvider,
    readonly id: string,
    /** The platform session's agent: the loop sends the model the same request (model, system, tools, limits). */
    private readonly agent: Agent = BENCH_AGENT(),
  ) {
    this.model = new AnthropicModelClient({ apiKey: 'test-key', baseURL: ctx.stack.mock.url });
  }

  async provision() {
    const r = await this.provider.provision({
      sessionId: this.id,
      name: 'main',
      recipe: SandboxRecipeSchema.parse({}),
      hostId: this.ctx.stack.hostId,
    });
    this.sandboxId = r.sandboxId;
  }

  async turn(text: string): Promise<void> {
    this.messages.push({ role: 'user', content: [{ type: 'text', text }] } as ApiMessage);
    for (let round = 0; round < 10; round++) {
      const tModel = performance.now();
      const reply = await this.model.createMessage(agentRequest(this.agent, this.id, this.messages), {});
      this.modelMs.push(performance.now() - tModel);
      this.messages.push({ role: 'assistant', content: reply.content } as ApiMessage);
      const uses = reply.content.filter((b) => b.type === 'tool_use') as {
        type: 'tool_use';
        id: string;
        input: { command: string };
      }[];
      if (uses.length === 0) return;
      const results = [];
      for (const use of uses) {
        const tExec = performance.now();
        const r = await this.provider.execute(this.sandboxId, {
          key: use.id,
          script: use.input.command,
          timeoutSeconds: 300,
          maxOutputBytes: 32 * 1024,
        });
        this.executeMs.push(performance.now() - tExec);
        results.push({
          type: 'tool_result',
          tool_use_id: use.id,
          content: formatBashOutput(r.output, r.exitCode, r.timedOut, 300),
        });
      }
      this.messages.push({ role: 'user', content: results } as ApiMessage);
    }
    throw new Error('in-process loop: too many tool rounds');
  }

  async destroy() {
    if (this.sandboxId) await this.provider.destroy(this.sandboxId).catch(() => undefined);
  }
}

/**
 * Where the platform's time goes, from the session's own history (events from `fromEventId` on, i.e. after the
 * warm-up): medians in ms of activity dispatch (scheduled to started) and run time (started to completed) by
 * activity type, workflow task dispatch and processing (started to completed), and the gap from an activity's
 * completion to the next workflow task's start; plus workflow tasks per turn.
 */
export async function profile(handle: WorkflowHandle, turns: number) {
  const E = temporal.api.enums.v1.EventType;
  const history = await handle.fetchHistory();
  const at = new Map<string, number>();
  const typeOf = new Map<string, string>();
  const ms = (t: temporal.api.history.v1.IHistoryEvent) =>
    Number(t.eventTime?.seconds ?? 0) * 1000 + (t.eventTime?.nanos ?? 0) / 1e6;
  const acc = {
    activityScheduleToStart: [] as number[],
    callModelRun: [] as number[],
    executeRun: [] as number[],
    workflowTaskScheduleToStart: [] as number[],
    workflowTaskRun: [] as number[],
    activityCompletedToNextWorkflowTaskStart: [] as number[],
  };
  let pendingActivityDone: number | undefined;
  let workflowTasks = 0;
  /** callModel run times by the call's place in its turn (first, second, ...): the calls of a turn differ in kind. */
  const callModelByCall: number[][] = [];
  let callInTurn = 0;
  // Only the last `turns` turns: a turn starts with the update's workflow task; count from the end.
  const events = history.events ?? [];
  const updates = events.filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
  const fromId = Number(updates[Math.max(0, updates.length - turns)]?.eventId ?? 0) - 3;
  for (const e of events) {
    const id = String(e.eventId);
    at.set(id, ms(e));
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      typeOf.set(id, e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
    if (Number(e.eventId) < fromId) continue;
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) callInTurn = 0;
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED)
      acc.activityScheduleToStart.push(
        ms(e) - (at.get(String(e.activityTaskStartedEventAttributes?.scheduledEventId)) ?? ms(e)),
      );
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      pendingActivityDone = ms(e);
      const a = e.activityTaskCompletedEventAttributes;
      const run = ms(e) - (at.get(String(a?.startedEventId)) ?? ms(e));
      const type = typeOf.get(String(a?.scheduledEventId));
      if (type === 'callModel' || type === 'callModelToolRefs') {
        acc.callModelRun.push(run);
        (callModelByCall[callInTurn++] ??= []).push(run);
      }
      if (type === 'execute') acc.executeRun.push(run);
    }
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      workflowTasks++;
      acc.workflowTaskScheduleToStart.push(
        ms(e) - (at.get(String(e.workflowTaskStartedEventAttributes?.scheduledEventId)) ?? ms(e)),
      );
      if (pendingActivityDone !== undefined)
        acc.activityCompletedToNextWorkflowTaskStart.push(ms(e) - pendingActivityDone);
      pendingActivityDone = undefined;
    }
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
      acc.workflowTaskRun.push(
        ms(e) - (at.get(String(e.workflowTaskCompletedEventAttributes?.startedEventId)) ?? ms(e)),
      );
  }
  const med = (v: number[]) => Math.round(percentile(v, 0.5) * 10) / 10;
  return {
    ...(Object.fromEntries(Object.entries(acc).map(([k, v]) => [k, med(v)])) as Record<keyof typeof acc, number>),
    workflowTasksPerTurn: Math.round((workflowTasks / turns) * 10) / 10,
    callModelRunByCall: callModelByCall.map(med),
  };
}

/**
 * Whether a run's history holds the end of its latest turn: after the last accepted update, MODEL_CALLS_PER_TURN
 * model calls that completed (activities, or local activities' markers) and the workflow task that took the last.
 */
export function turnEnded(events: HistoryEvent[]): boolean {
  const E = temporal.api.enums.v1.EventType;
  let accepted = events.length - 1;
  while (accepted >= 0 && events[accepted].eventType !== E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) accepted--;
  if (accepted < 0) return false;
  const typeOf = new Map<string, string>();
  let calls = 0;
  let taken = false;
  for (const e of events.slice(accepted)) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) typeOf.set(String(e.eventId), scheduled.activityType?.name ?? '');
    const done = e.activityTaskCompletedEventAttributes;
    if (done && typeOf.get(String(done.scheduledEventId))?.startsWith('callModel')) {
      calls++;
      taken = false;
    }
    // A local call's marker is one of the commands of the workflow task that took its result.
    if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity') {
      calls++;
      taken = true;
    }
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) taken = true;
  }
  return calls >= MODEL_CALLS_PER_TURN && taken;
}

/**
 * One platform turn, timed from the client's update to the workflow's time of the turn's final assistant_message.
 * Nothing reads the session while the turn runs: a query is an activation of the worker being measured, and a
 * history long poll, answered at every event, makes the server serve reads of the run between its task's steps
 * (in quick runs, 8.5 ms per activity completion against 5.9 without). The floor's turn has neither: its update
 * returns at its end. So the turn is followed on the model server, in this process, until the reply to its last
 * call is written; its history is read some time after that, and the log once.
 */
export async function platformTurn(stack: Ctx['stack'], handle: WorkflowHandle, text: string): Promise<number> {
  const calls = () => stack.mock.requests(handle.workflowId).filter((r) => r.path === '/v1/messages');
  // Requests are told apart by their place among all the server received: it keeps only the latest ones.
  const before = calls().at(-1)?.n ?? 0;
  const t0 = Date.now();
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
  const deadline = Date.now() + 120_000;
  const late = () => {
    if (Date.now() > deadline) throw new Error(`platform turn: not over within 120 s on ${handle.workflowId}`);
  };
  while (calls().filter((r) => r.n > before)[MODEL_CALLS_PER_TURN - 1]?.doneAt === undefined) {
    late();
    await sleep(10);
  }
  do {
    late();
    await sleep(TURN_END_MARGIN_MS);
  } while (!turnEnded((await handle.fetchHistory()).events ?? []));
  const events = await liveEvents(handle, seq);
  const final = (e: SessionEvent) => e.seq > seq && e.type === 'assistant_message' && e.stopReason !== 'tool_use';
  const last = events.find(final);
  if (!last) throw new Error(`platform turn without its final reply: ${JSON.stringify(events.slice(-4))}`);
  if (!events.some((e) => e.seq > seq && e.type === 'tool_result'))
    throw new Error(`platform turn without a tool call: ${JSON.stringify(events.slice(-4))}`);
  // The workflow's own time for the reply, free of the polling interval.
  return Date.parse(last.time) - t0;
}

export async function runTurnOverhead(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const WARMUP = ctx.quick ? 1 : 2;
  const TURNS_RUN = ctx.quick ? TURNS.quick : TURNS.full;
  const dockerHost = await resolveDockerHost();
  if (!dockerHost) throw new Error('no Docker engine');
  const provider = new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage() });
  const worker = await stack.worker();
  const loop = new InProcessLoop(ctx, provider, uniqueId('bench-turn-inprocess'));
  stack.model(loop.id);
  const id = uniqueId('bench-turn-platform');
  stack.model(id);
  // The third arm: the same session with the model call as a local activity (limits.modelCall 'local').
  const localId = uniqueId('bench-turn-local');
  stack.model(localId);
  let handle: WorkflowHandle | undefined;
  let localHandle: WorkflowHandle | undefined;
  try {
    await loop.provision();
    handle = await stack.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: id,
      args: [{ agent: BENCH_AGENT() }],
    });
    const localAgent = BENCH_AGENT();
    localHandle = await stack.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: localId,
      args: [{ agent: { ...localAgent, limits: { ...localAgent.limits, modelCall: 'local' } } }],
    });
    const h = handle;
    const lh = localHandle;
    const samples = await interleave<Arm>(
      ['inprocess', 'platform', 'platform_local'],
      TURNS_RUN,
      WARMUP,
      async (arm, round) => {
        if (arm === 'platform') return platformTurn(stack, h, turnText(round));
        if (arm === 'platform_local') return platformTurn(stack, lh, turnText(round));
        const t0 = Date.now();
        await loop.turn(turnText(round));
        return Date.now() - t0;
      },
      (m) => ctx.log(`  turn_overhead ${m}`),
    );
    const modelContext = worker.status().modelContext;
    const inprocess = armStats(samples.inprocess);
    const platform = armStats(samples.platform);
    const platformLocal = armStats(samples.platform_local);
    const localPerActivity = (platformLocal.p50Ms - inprocess.p50Ms) / ACTIVITIES_PER_TURN;
    const localProf = await profile(lh, TURNS_RUN).catch(() => undefined);
    const addedP50 = platform.p50Ms - inprocess.p50Ms;
    const addedP95 = platform.p95Ms - inprocess.p95Ms;
    const perActivity = addedP50 / ACTIVITIES_PER_TURN;
    const prof = await profile(h, TURNS_RUN).catch(
      (err: Error) => ctx.log(`  turn_overhead: no profile: ${err.message}`) ?? undefined,
    );
    const inModel = percentile(loop.modelMs.slice(-MODEL_CALLS_PER_TURN * TURNS_RUN), 0.5);
    const inExecute = percentile(loop.executeMs.slice(-TURNS_RUN), 0.5);
    const notes = [
      `${TURNS_RUN} turns per arm after ${WARMUP} warm-up turns, interleaved; each turn = model call (bash tool_use) + execute in the same kind of sandbox + model call (text); model first byte ${SETTINGS.modelFirstByteMs} ms, ${SETTINGS.modelChunkDelayMs} ms per chunk, so ${MODEL_CALLS_PER_TURN * SETTINGS.modelFirstByteMs} ms of every turn is the model in both arms.`,
      `The in-process loop calls the same AnthropicModelClient and DockerSandboxProvider.execute directly; the platform turn is timed from the client's sendMessage update to the workflow's time of the final assistant_message.`,
      `Added per turn: p50 ${addedP50.toFixed(1)} ms, p95 ${addedP95.toFixed(1)} ms; per activity (${ACTIVITIES_PER_TURN} per turn): ${perActivity.toFixed(1)} ms at p50 (anchor: Temporal Cloud ~50 ms scheduling per activity; target <= 30 ms on the local server).`,
      prof
        ? `Profile (medians, ms, from the session's history over the measured turns; in-process times from the loop): activity scheduled->started ${prof.activityScheduleToStart}; callModel ran ${prof.callModelRun} against ${inModel.toFixed(1)} for the loop's model call (+${(prof.callModelRun - inModel).toFixed(1)} each, x${MODEL_CALLS_PER_TURN}); execute ran ${prof.executeRun} against ${inExecute.toFixed(1)} (+${(prof.executeRun - inExecute).toFixed(1)}); ${prof.workflowTasksPerTurn} workflow tasks per turn, each ${prof.workflowTaskScheduleToStart} scheduled->started and ${prof.workflowTaskRun} started->completed; activity completed->next workflow task started ${prof.activityCompletedToNextWorkflowTaskStart}.`
        : 'No profile (the history could not be read).',
      modelContext
        ? `Model calls whose context came from the worker's cache, checked against the tail digest their input carries: ${modelContext.cached} of ${modelContext.cached + modelContext.read} (the rest read it by query).`
        : '',
      perActivity > 30
        ? `Above the 30 ms per activity target; README (bench) explains where it goes.`
        : 'Within the 30 ms per activity target.',
      `platform_local: the same session with limits.modelCall 'local' (the model call as a local activity, run inside the workflow task by the worker holding the session, handed the window's events instead of reading them): added per turn p50 ${(platformLocal.p50Ms - inprocess.p50Ms).toFixed(1)} ms, p95 ${(platformLocal.p95Ms - inprocess.p95Ms).toFixed(1)} ms, ${localPerActivity.toFixed(1)} ms per activity at p50${localProf ? `, ${localProf.workflowTasksPerTurn} workflow tasks per turn` : ''}; its price is in docs/guide/scaling.md (the task stays open during the call, so input waits for it, and a dead worker is noticed by the workflow task timeout).`,
    ]
      .filter(Boolean)
      .join(' ');
    return [
      {
        name: 'turn_overhead',
        arms: { inprocess, platform, platform_local: platformLocal },
        notes,
        ratioTo: { platform: 'inprocess', platform_local: 'inprocess' },
        addedPerActivityLocalMs: localPerActivity,
        profileMs: prof
          ? {
              ...prof,
              inprocessModelCall: Math.round(inModel * 10) / 10,
              inprocessExecute: Math.round(inExecute * 10) / 10,
            }
          : undefined,
        addedPerTurnMs: { p50: addedP50, p95: addedP95 },
        modelContext,
        addedPerActivityMs: perActivity,
        activitiesPerTurn: ACTIVITIES_PER_TURN,
      },
    ];
  } finally {
    if (handle) await endSession(handle);
    if (localHandle) await endSession(localHandle);
    await loop.destroy();
    await worker.shutdown().catch(() => undefined);
  }
}
