// Sub-agents: spawn_agent starts a child session (the same sessionWorkflow) as a child workflow with
// parent-close policy ABANDON, so the parent may continue as new while it runs. The child answers one task
// and ends; it reports its answer, usage and any lent sandboxes to the parent's session id by signal, which
// reaches whichever run of the parent is current. The parent's Carry holds the children it still waits for,
// and the parent cancels them explicitly when its turn is interrupted or it ends.
import {
  ParentClosePolicy,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { SubagentActivities } from '../brain/subagent-activities';
import { AgentSchema, childAgentInput, formatIssues, type Agent } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import { SpawnAgentInputSchema } from '../tools/spawn-agent';
import type { Budget } from './budget';
import { failureMessage } from './failures';
import { HandoffError, handedOf, type Handoff } from './handoff';
import {
  SubagentReportSchema,
  subagentFinishedSignal,
  type Carry,
  type HandedSandbox,
  type ParentRef,
  type SessionInput,
  type SessionWorkflow,
  type SubagentRef,
} from '../session/contract';
import { capOutput, toolError, type ToolOutcome } from '../tools/kind';

const MAX_SESSION_ID = 200;

export const zeroUsage = (): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});

export function addUsage(into: Usage, more: Usage): void {
  into.inputTokens += more.inputTokens;
  into.outputTokens += more.outputTokens;
  into.cacheReadInputTokens += more.cacheReadInputTokens;
  into.cacheCreationInputTokens += more.cacheCreationInputTokens;
  if (more.cacheCreation1hInputTokens)
    into.cacheCreation1hInputTokens = (into.cacheCreation1hInputTokens ?? 0) + more.cacheCreation1hInputTokens;
}

/** 32-bit FNV-1a, as hex: a short stable tag for ids too long to repeat whole. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** The child session of one spawn_agent call: the same id on every replay and retry. */
export function childSessionId(parentId: string, toolUseId: string): string {
  const id = `${parentId}.${toolUseId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (id.length <= MAX_SESSION_ID) return id;
  return `${parentId.slice(0, MAX_SESSION_ID - 30)}.sub-${fnv1a(id)}${fnv1a(`${id}#`)}`;
}

/**
 * What a child answers: the text of its last reply; an error event, an interrupt or an end before any reply
 * make the answer an error.
 */
export function childAnswer(events: readonly SessionEvent[], endReason: string): { output: string; isError: boolean } {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.type === 'assistant_message' && e.stopReason !== 'tool_use') {
      const text = e.content
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join('\n')
        .trim();
      return { output: capOutput(text || '(the sub-agent answered with no text)'), isError: false };
    }
    if (e.type === 'error')
      return { output: `the sub-agent stopped with an error (${e.kind}): ${e.message}`, isError: true };
    if (e.type === 'interrupted') return { output: `the sub-agent was interrupted: ${e.reason}`, isError: true };
    if (e.type === 'budget_reached')
      return { output: "the sub-agent stopped: the session's list cost reached its budget", isError: true };
    if (e.type === 'user_message' || e.type === 'session_started') break;
  }
  return { output: `the sub-agent session ended before it answered (${endReason})`, isError: true };
}

/** What the sub-agent calls need of a coordinator's threads (src/workflows/threads.ts). */
export interface ThreadCalls {
  handles(name: string): boolean;
  start(use: { id: string; name: string; input: unknown }): Promise<void>;
  tracks(toolUseId: string): boolean;
  result(toolUseId: string): Promise<ToolOutcome>;
  awaitResult(toolUseId: string, handOverNow: () => boolean): Promise<boolean> | undefined;
  interruptRunning(): Promise<string[]>;
  snapshot(): Pick<Carry, 'threads' | 'threadCalls' | 'threadPosts'>;
  register(): void;
}

export interface SubagentContext {
  sessionId: string;
  agent: Agent;
  append: (e: NewEvent) => unknown;
  /** The session's whole usage (its own and its children's); reports add to it. */
  usage: Usage;
  /** The session's list cost and budget: a child starts with them, and its report adds its cost. */
  budget: Budget;
  handoff: Handoff;
  carried?: Carry;
  /** True once session_ended is in the log: nothing more may be appended. */
  closed: () => boolean;
  /** A coordinator's threads: delegate and message_thread calls go there. */
  threads?: ThreadCalls;
}

export class Subagents {
  /** Children whose spawn_agent result is not in the log yet, by tool_use id. */
  private readonly running: Map<string, SubagentRef>;
  /** spawn_agent calls refused before a child started. */
  private readonly refused = new Map<string, ToolOutcome>();
  private readonly fromChildren: Usage;
  /** Children started by this run, whose close this run sees; others were carried over from an earlier run. */
  private readonly watched = new Set<string>();
  private readonly checks = proxyActivities<SubagentActivities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 3, initialInterval: 1000 },
  });

  constructor(private readonly ctx: SubagentContext) {
    this.running = new Map<string, SubagentRef>((ctx.carried?.subagents ?? []).map((r) => [r.toolUseId, { ...r }]));
    this.fromChildren = { ...(ctx.carried?.subagentUsage ?? zeroUsage()) };
  }

  private outcomeOf(ref: SubagentRef): ToolOutcome {
    const r = ref.result!;
    return r.isError ? toolError(r.output, 'tool') : { output: r.output, isError: false };
  }

  /** A child closed without a report (it failed, or was terminated): its crash stays with it. */
  private async onChildClosed(toolUseId: string, childId: string, why: string): Promise<void> {
    const ref = this.running.get(toolUseId);
    if (!ref || ref.result) return;
    await this.ctx.handoff.reclaimFrom(childId);
    this.ctx.append({ type: 'subagent_finished', sessionId: childId, toolUseId, isError: true });
    ref.result = { output: `the sub-agent session ${childId} stopped without answering: ${why}`, isError: true };
  }

  /**
   * Waits until `ready` holds. A child carried over from an earlier run may close without a word (terminated,
   * failed): it reports before it closes, so a closed child with no report has crashed.
   */
  private async waitFor(ref: SubagentRef, ready: () => boolean): Promise<void> {
    if (this.watched.has(ref.toolUseId) || !patched('subagent-close-check')) return condition(ready);
    while (!(await condition(ready, this.ctx.agent.limits.subagentCheckMs))) {
      const closed = await this.checks.closedSessions({ sessionIds: [ref.sessionId] }).catch((err): string[] => {
        if (isCancellation(err)) throw err;
        return [];
      });
      if (closed.includes(ref.sessionId))
        await this.onChildClosed(ref.toolUseId, ref.sessionId, 'its session closed without a report');
    }
  }

  private async start(use: { id: string; input: unknown }): Promise<void> {
    const { ctx } = this;
    const refuse = (message: string, kind: 'tool' | 'infra' = 'tool') =>
      void this.refused.set(use.id, toolError(message, kind));
    const input = SpawnAgentInputSchema.safeParse(use.input ?? {});
    if (!input.success) return refuse(`invalid input for spawn_agent: ${formatIssues(input.error)}`);
    const { task, agent: name, sandboxes: lend = [] } = input.data;
    const declared = Object.keys(ctx.agent.subagents);
    if (name !== undefined && !declared.includes(name))
      return refuse(
        `no sub-agent named ${name}; this agent declares ${declared.length ? declared.join(', ') : 'none'}`,
      );
    const child = AgentSchema.safeParse(childAgentInput(ctx.agent, name));
    if (!child.success)
      return refuse(`sub-agent ${name ?? '(default)'} is not a valid agent: ${formatIssues(child.error)}`);
    const missing = lend.filter((n) => !(n in child.data.sandboxes));
    if (missing.length)
      return refuse(
        `the sub-agent declares no sandbox named ${missing.join(', ')}, so it could not use what you lend it`,
      );
    const childId = childSessionId(ctx.sessionId, use.id);
    let lent: HandedSandbox[] = [];
    let slots;
    try {
      slots = await ctx.handoff.moveTo([...new Set(lend)], childId);
      lent = slots.map(handedOf);
    } catch (err) {
      if (err instanceof HandoffError) return refuse(`could not lend sandboxes: ${err.message}`);
      throw err;
    }
    const listCost = ctx.budget.forChild();
    const args: SessionInput = {
      agent: child.data,
      message: { text: task },
      parent: { sessionId: ctx.sessionId, toolUseId: use.id },
      ...(lent.length ? { lent } : {}),
      ...(listCost ? { listCost } : {}),
    };
    const taskQueue = name !== undefined ? ctx.agent.subagents[name].taskQueue : undefined;
    let handle;
    try {
      handle = await startChild<SessionWorkflow>('sessionWorkflow', {
        workflowId: childId,
        ...(taskQueue ? { taskQueue } : {}),
        parentClosePolicy: ParentClosePolicy.ABANDON,
        args: [args],
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      await ctx.handoff.undo(slots, childId);
      return refuse(`could not start the sub-agent: ${failureMessage(err)}`, 'infra');
    }
    ctx.append({
      type: 'subagent_started',
      sessionId: childId,
      toolUseId: use.id,
      ...(name !== undefined ? { agent: name } : {}),
    });
    for (const slot of slots) ctx.handoff.markHandedOff(slot, childId);
    this.running.set(use.id, { toolUseId: use.id, sessionId: childId, lent: slots.map((s) => s.name) });
    this.watched.add(use.id);
    // Within this run the child's close is seen directly; a child that reported has closed normally after it.
    void handle.result().then(
      () => this.onChildClosed(use.id, childId, 'it ended without a report'),
      (err) => this.onChildClosed(use.id, childId, failureMessage(err)),
    );
  }

  register(): void {
    setHandler(subagentFinishedSignal, (raw) => this.onReport(raw));
    this.ctx.threads?.register();
  }

  /** Starts a child for each spawn_agent (or thread) call of one reply, in order; they then run in parallel. */
  async startAll(uses: readonly { id: string; name?: string; input: unknown }[]): Promise<void> {
    const { threads } = this.ctx;
    for (const use of uses) {
      if (threads && use.name !== undefined && threads.handles(use.name)) {
        if (patched('session-threads')) await threads.start({ ...use, name: use.name });
      } else await this.start(use);
    }
  }

  /** The spawn_agent result for `toolUseId`, once its child has answered. */
  async result(toolUseId: string): Promise<ToolOutcome> {
    if (this.ctx.threads?.tracks(toolUseId)) return this.ctx.threads.result(toolUseId);
    const early = this.refused.get(toolUseId);
    if (early) {
      this.refused.delete(toolUseId);
      return early;
    }
    const ref = this.running.get(toolUseId);
    if (!ref) return toolError('this sub-agent is no longer tracked by the session', 'infra');
    await this.waitFor(ref, () => ref.result !== undefined);
    this.running.delete(toolUseId);
    return this.outcomeOf(ref);
  }

  /** Whether this run knows the spawn_agent call: its child runs, or it was refused before one started. */
  tracks(toolUseId: string): boolean {
    return this.running.has(toolUseId) || this.refused.has(toolUseId) || !!this.ctx.threads?.tracks(toolUseId);
  }

  /**
   * For a call whose child still runs: resolves true once the child has answered, false as soon as
   * `handOverNow` holds first. Undefined for any other call.
   */
  awaitResult(toolUseId: string, handOverNow: () => boolean): Promise<boolean> | undefined {
    if (this.ctx.threads?.tracks(toolUseId)) return this.ctx.threads.awaitResult(toolUseId, handOverNow);
    const ref = this.running.get(toolUseId);
    if (!ref || ref.result) return undefined;
    return this.waitFor(ref, () => ref.result !== undefined || handOverNow()).then(() => ref.result !== undefined);
  }

  /** The subagentFinished signal: a child's answer, its usage and the sandboxes it hands back. */
  async onReport(raw: unknown): Promise<void> {
    const { ctx } = this;
    const parsed = SubagentReportSchema.safeParse(raw);
    if (!parsed.success) {
      log.warn('subagentFinished signal rejected', { error: formatIssues(parsed.error) });
      return;
    }
    const report = parsed.data;
    if (ctx.closed()) {
      log.warn('subagentFinished signal ignored: session has ended', { sessionId: report.sessionId });
      return;
    }
    if (childSessionId(ctx.sessionId, report.toolUseId) !== report.sessionId) {
      log.warn('subagentFinished signal ignored: not from a child of this session', { sessionId: report.sessionId });
      return;
    }
    addUsage(ctx.usage, report.usage);
    addUsage(this.fromChildren, report.usage);
    const cost = ctx.budget.tracking ? report.costNanoUsd : undefined;
    ctx.budget.addChild(cost);
    ctx.append({
      type: 'subagent_finished',
      sessionId: report.sessionId,
      toolUseId: report.toolUseId,
      isError: report.isError,
      usage: report.usage,
      ...(cost !== undefined ? { costNanoUsd: cost } : {}),
    });
    for (const s of report.returned) await ctx.handoff.receive(report.sessionId, s);
    ctx.handoff.forgetHeldBy(report.sessionId, `session ${report.sessionId} ended without handing it back`);
    const ref = this.running.get(report.toolUseId);
    if (ref && !ref.result) ref.result = { output: report.output, isError: report.isError };
  }

  /** Cancels every child still running; returns the tool_use ids whose results will not be appended. */
  async cancelRunning(): Promise<string[]> {
    // Threads are interrupted, not ended: they stay for the coordinator's next message.
    const ids: string[] = this.ctx.threads ? await this.ctx.threads.interruptRunning() : [];
    for (const ref of [...this.running.values()]) {
      this.running.delete(ref.toolUseId);
      ids.push(ref.toolUseId);
      if (ref.result) continue;
      await getExternalWorkflowHandle(ref.sessionId)
        .cancel()
        .catch((err) =>
          log.warn('could not cancel a sub-agent', { sessionId: ref.sessionId, error: failureMessage(err) }),
        );
    }
    return ids;
  }

  /** What the next run carries. */
  snapshot(): Pick<Carry, 'subagents' | 'subagentUsage' | 'threads' | 'threadCalls' | 'threadPosts'> {
    const { running, fromChildren } = this;
    const threads = this.ctx.threads?.snapshot() ?? {};
    return running.size || fromChildren.inputTokens || fromChildren.outputTokens
      ? { subagents: [...running.values()].map((r) => ({ ...r })), subagentUsage: { ...fromChildren }, ...threads }
      : threads;
  }

  status() {
    return {
      running: [...this.running.values()]
        .filter((r) => !r.result)
        .map((r) => ({ sessionId: r.sessionId, toolUseId: r.toolUseId })),
      usage: { ...this.fromChildren },
    };
  }
}

/** A child session's last act: its answer, usage and the lent sandboxes, to the parent's current run. */
export async function reportToParent(
  parent: ParentRef,
  report: {
    sessionId: string;
    output: string;
    isError: boolean;
    usage: Usage;
    costNanoUsd?: number;
    returned: HandedSandbox[];
  },
): Promise<string | undefined> {
  try {
    await getExternalWorkflowHandle(parent.sessionId).signal(subagentFinishedSignal, {
      ...report,
      toolUseId: parent.toolUseId,
    });
    return undefined;
  } catch (err) {
    if (isCancellation(err)) throw err;
    return failureMessage(err);
  }
}
