// Session threads. A coordinator (an agent with a roster) starts a thread with `delegate`: a child session (the
// same sessionWorkflow, parent-close policy ABANDON) that runs the roster agent, works in the coordinator's
// sandboxes, and stays open after its reply, so `message_thread` can send it follow-ups. Replies come back by
// signal to the coordinator's session id, whichever run is current; the coordinator's log records each thread's
// creation, status and messages. A thread that fails ends alone: its failure is a status and an error result.
import {
  ApplicationFailure,
  ParentClosePolicy,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  startChild,
  uuid4,
} from '@temporalio/workflow';
import type { SubagentActivities } from '../brain/subagent-activities';
import { AgentSchema, formatIssues, type Agent, type BoundTool } from '../session/agent';
import type { NewEvent, Usage } from '../session/events';
import {
  ThreadActionSchema,
  ThreadMessageSchema,
  ThreadReplySchema,
  archiveThreadUpdate,
  interruptSignal,
  threadActionSignal,
  threadMessageSignal,
  threadReplySignal,
  type ThreadAction,
  type Carry,
  type ParentRef,
  type SessionWorkflow,
  type ThreadIdentity,
  type ThreadRef,
} from '../session/contract';
import { Failure } from '../session/failure-types';
import { childThreadId, primaryThreadId } from '../session/thread-ids';
import { DelegateInputSchema, MessageThreadInputSchema } from '../tools/coordinator';
import { toolError, type ToolOutcome } from '../tools/kind';
import type { Budget } from './budget';
import { failureMessage } from './failures';
import type { SessionRun } from './session-run';
import { addUsage, childAnswer, childSessionId, zeroUsage, type ThreadCalls } from './subagents';

export const THREAD_TOOL_KINDS = ['delegate', 'message_thread'] as const;

type Call = { toolUseId: string; threadId: string; result?: { output: string; isError: boolean } };
type Post = { toolUseId: string; threadId: string; settled: boolean };
/** How many settled cross-posts a new run remembers, so a thread's late repeat is still dropped. */
const SETTLED_POSTS_KEPT = 256;

const minus = (a: Usage, b: Usage): Usage => ({
  inputTokens: Math.max(0, a.inputTokens - b.inputTokens),
  outputTokens: Math.max(0, a.outputTokens - b.outputTokens),
  cacheReadInputTokens: Math.max(0, a.cacheReadInputTokens - b.cacheReadInputTokens),
  cacheCreationInputTokens: Math.max(0, a.cacheCreationInputTokens - b.cacheCreationInputTokens),
  ...((a.cacheCreation1hInputTokens ?? 0) > (b.cacheCreation1hInputTokens ?? 0)
    ? { cacheCreation1hInputTokens: (a.cacheCreation1hInputTokens ?? 0) - (b.cacheCreation1hInputTokens ?? 0) }
    : {}),
});

export interface ThreadsContext {
  sessionId: string;
  agent: Agent;
  tools: ReadonlyMap<string, BoundTool>;
  append: (e: NewEvent) => unknown;
  /** The session's whole usage; each reply adds what its thread spent since the last. */
  usage: Usage;
  budget: Budget;
  carried?: Carry;
  closed: () => boolean;
}

/** The coordinator's side: its threads, and its delegate and message_thread calls waiting for a reply. */
export class Threads implements ThreadCalls {
  private readonly threads: Map<string, ThreadRef>;
  private readonly calls: Map<string, Call>;
  private readonly refused = new Map<string, ToolOutcome>();
  /** Thread calls cross-posted onto this log, by tool_use id: each is posted once, and settled once. */
  private readonly posts: Map<string, Post>;
  /** Threads started by this run, whose close this run sees. */
  private readonly watched = new Set<string>();
  private readonly checks = proxyActivities<SubagentActivities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumAttempts: 3, initialInterval: 1000 },
  });

  constructor(private readonly ctx: ThreadsContext) {
    this.threads = new Map((ctx.carried?.threads ?? []).map((t) => [t.threadId, { ...t }]));
    this.calls = new Map((ctx.carried?.threadCalls ?? []).map((c) => [c.toolUseId, { ...c }]));
    this.posts = new Map((ctx.carried?.threadPosts ?? []).map((p) => [p.toolUseId, { ...p }]));
  }

  /** Whether `name` is a thread tool of this session. */
  handles(name: string): boolean {
    const kind = this.ctx.tools.get(name)?.kind;
    return kind === 'delegate' || kind === 'message_thread';
  }

  tracks(toolUseId: string): boolean {
    return this.calls.has(toolUseId) || this.refused.has(toolUseId);
  }

  private get primaryId(): string {
    return primaryThreadId(this.ctx.sessionId);
  }

  private status(ref: ThreadRef, status: ThreadRef['status'], stopReason?: 'end_turn' | 'retries_exhausted'): void {
    if (ref.status === status && status !== 'idle') return;
    ref.status = status;
    this.ctx.append({
      type: 'thread_status',
      threadId: ref.threadId,
      agent: ref.agent,
      status,
      ...(stopReason ? { stopReason } : {}),
      ...(status !== 'running' && ref.usage.inputTokens + ref.usage.outputTokens > 0
        ? { usage: { ...ref.usage } }
        : {}),
    });
  }

  /** Starts the thread a delegate call asks for, or sends a message_thread call's message. */
  async start(use: { id: string; name: string; input: unknown }): Promise<void> {
    if (this.ctx.tools.get(use.name)?.kind === 'delegate') await this.delegate(use);
    else await this.message(use);
  }

  private refuse(id: string, message: string, kind: 'tool' | 'infra' = 'tool'): void {
    this.refused.set(id, toolError(message, kind));
  }

  private async delegate(use: { id: string; input: unknown }): Promise<void> {
    const { ctx } = this;
    const input = DelegateInputSchema.safeParse(use.input ?? {});
    if (!input.success) return this.refuse(use.id, `invalid input for delegate: ${formatIssues(input.error)}`);
    const entry = ctx.agent.roster.find((r) => r.name === input.data.agent);
    if (!entry)
      return this.refuse(
        use.id,
        `no agent named ${input.data.agent} on your roster; it has ${ctx.agent.roster.map((r) => r.name).join(', ')}`,
      );
    const file = AgentSchema.safeParse(entry.agent);
    if (!file.success)
      return this.refuse(use.id, `roster agent ${entry.name} cannot run: ${formatIssues(file.error)}`, 'infra');
    const threadId = childThreadId(uuid4());
    const workflowId = childSessionId(ctx.sessionId, use.id);
    const listCost = ctx.budget.forChild();
    try {
      const handle = await startChild<SessionWorkflow>('sessionWorkflow', {
        workflowId,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        args: [
          {
            agent: file.data,
            message: { text: input.data.message },
            parent: { sessionId: ctx.sessionId, toolUseId: use.id },
            thread: { id: threadId, agent: entry.name, primaryId: this.primaryId, owner: ctx.sessionId },
            ...(listCost ? { listCost } : {}),
          },
        ],
      });
      this.watched.add(threadId);
      void handle.result().then(
        () => this.onClosed(threadId, 'it ended'),
        (err) => this.onClosed(threadId, failureMessage(err)),
      );
    } catch (err) {
      if (isCancellation(err)) throw err;
      return this.refuse(use.id, `could not start the thread: ${failureMessage(err)}`, 'infra');
    }
    const ref: ThreadRef = {
      threadId,
      sessionId: workflowId,
      agent: entry.name,
      status: 'running',
      usage: zeroUsage(),
    };
    this.threads.set(threadId, ref);
    ctx.append({ type: 'thread_created', threadId, sessionId: workflowId, agent: entry.name });
    ctx.append({ type: 'thread_message', direction: 'sent', threadId, agent: entry.name, text: input.data.message });
    ctx.append({ type: 'thread_status', threadId, agent: entry.name, status: 'running' });
    this.calls.set(use.id, { toolUseId: use.id, threadId });
  }

  private async message(use: { id: string; input: unknown }): Promise<void> {
    const { ctx } = this;
    const input = MessageThreadInputSchema.safeParse(use.input ?? {});
    if (!input.success) return this.refuse(use.id, `invalid input for message_thread: ${formatIssues(input.error)}`);
    const ref = this.threads.get(input.data.thread_id);
    if (!ref) return this.refuse(use.id, `no thread ${input.data.thread_id} in this session`);
    if (ref.archived) return this.refuse(use.id, `thread ${ref.threadId} is archived`);
    if (ref.status === 'terminated') return this.refuse(use.id, `thread ${ref.threadId} has terminated`);
    if (ref.status === 'running' || [...this.calls.values()].some((c) => c.threadId === ref.threadId && !c.result))
      return this.refuse(use.id, `thread ${ref.threadId} is still answering; wait for its reply`);
    try {
      await getExternalWorkflowHandle(ref.sessionId).signal(threadMessageSignal, {
        toolUseId: use.id,
        text: input.data.message,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      return this.refuse(use.id, `could not reach thread ${ref.threadId}: ${failureMessage(err)}`, 'infra');
    }
    ctx.append({
      type: 'thread_message',
      direction: 'sent',
      threadId: ref.threadId,
      agent: ref.agent,
      text: input.data.message,
    });
    this.status(ref, 'running');
    this.calls.set(use.id, { toolUseId: use.id, threadId: ref.threadId });
  }

  private outcomeOf(call: Call): ToolOutcome {
    const ref = this.threads.get(call.threadId);
    const who = `thread ${call.threadId} (${ref?.agent ?? 'unknown'})`;
    const r = call.result!;
    return r.isError
      ? toolError(`${who}: ${r.output}`, 'tool')
      : { output: `${who} replied:\n\n${r.output}`, isError: false };
  }

  /** A thread closed: it terminates, and calls still waiting for it get an error. */
  private onClosed(threadId: string, why: string): void {
    const ref = this.threads.get(threadId);
    if (!ref || this.ctx.closed()) return;
    this.settlePosts(threadId);
    if (ref.status !== 'terminated') this.status(ref, 'terminated');
    for (const c of this.calls.values())
      if (c.threadId === threadId && !c.result)
        c.result = { output: `the thread stopped without replying: ${why}`, isError: true };
  }

  /** Waits until `ready`; a thread carried over from an earlier run may close unseen, so it is asked now and then. */
  private async waitFor(call: Call, ready: () => boolean): Promise<void> {
    if (this.watched.has(call.threadId)) return condition(ready);
    const ref = this.threads.get(call.threadId);
    while (!(await condition(ready, this.ctx.agent.limits.subagentCheckMs))) {
      if (!ref) return;
      const closed = await this.checks.closedSessions({ sessionIds: [ref.sessionId] }).catch((err): string[] => {
        if (isCancellation(err)) throw err;
        return [];
      });
      if (closed.includes(ref.sessionId)) this.onClosed(ref.threadId, 'its session closed');
    }
  }

  async result(toolUseId: string): Promise<ToolOutcome> {
    const early = this.refused.get(toolUseId);
    if (early) {
      this.refused.delete(toolUseId);
      return early;
    }
    const call = this.calls.get(toolUseId);
    if (!call) return toolError('this thread call is no longer tracked by the session', 'infra');
    await this.waitFor(call, () => call.result !== undefined);
    this.calls.delete(toolUseId);
    return this.outcomeOf(call);
  }

  awaitResult(toolUseId: string, handOverNow: () => boolean): Promise<boolean> | undefined {
    const call = this.calls.get(toolUseId);
    if (!call || call.result) return undefined;
    return this.waitFor(call, () => call.result !== undefined || handOverNow()).then(() => call.result !== undefined);
  }

  /** A thread's reply (or its end). */
  private onReply(raw: unknown): void {
    const { ctx } = this;
    const parsed = ThreadReplySchema.safeParse(raw);
    if (!parsed.success) {
      log.warn('threadReply signal rejected', { error: formatIssues(parsed.error) });
      return;
    }
    const r = parsed.data;
    const ref = [...this.threads.values()].find((t) => t.sessionId === r.sessionId);
    if (!ref || ctx.closed()) {
      log.warn('threadReply signal ignored', { sessionId: r.sessionId });
      return;
    }
    // A thread that replies or ends waits for nothing any more (an interrupt may have closed its calls).
    this.settlePosts(ref.threadId);
    addUsage(ctx.usage, minus(r.usage, ref.usage));
    ref.usage = r.usage;
    if (ctx.budget.tracking && r.costNanoUsd !== undefined) {
      ctx.budget.addChild(Math.max(0, r.costNanoUsd - (ref.costNanoUsd ?? 0)));
      ref.costNanoUsd = r.costNanoUsd;
    }
    if (r.toolUseId && !r.isError)
      ctx.append({
        type: 'thread_message',
        direction: 'received',
        threadId: ref.threadId,
        agent: ref.agent,
        text: r.output,
      });
    if (ref.status !== 'terminated') {
      if (r.failed) this.status(ref, 'idle', 'retries_exhausted');
      if (r.ended) this.status(ref, 'terminated');
      else if (r.toolUseId) this.status(ref, 'idle', 'end_turn');
    }
    const call = r.toolUseId ? this.calls.get(r.toolUseId) : undefined;
    if (call && call.threadId === ref.threadId && !call.result) call.result = { output: r.output, isError: r.isError };
    if (r.ended) this.onClosed(ref.threadId, r.output);
  }

  private settle(post: Post): void {
    if (post.settled) return;
    post.settled = true;
    const ref = this.threads.get(post.threadId);
    this.ctx.append({
      type: 'thread_tool_call',
      threadId: post.threadId,
      sessionId: ref?.sessionId ?? '',
      toolUseId: post.toolUseId,
      state: 'settled',
    });
  }

  private settlePosts(threadId: string): void {
    for (const p of this.posts.values()) if (p.threadId === threadId) this.settle(p);
  }

  /** A thread's call waits for the client, or no longer does: its copy goes onto this log, once. */
  private onAction(raw: unknown): void {
    const parsed = ThreadActionSchema.safeParse(raw);
    if (!parsed.success) {
      log.warn('threadAction signal rejected', { error: formatIssues(parsed.error) });
      return;
    }
    const a = parsed.data;
    const ref = [...this.threads.values()].find((t) => t.sessionId === a.sessionId);
    if (!ref || ref.status === 'terminated' || this.ctx.closed()) return;
    const known = this.posts.get(a.toolUseId);
    if (a.state === 'settled') {
      if (known && known.threadId === ref.threadId) this.settle(known);
      return;
    }
    if (known) return;
    this.posts.set(a.toolUseId, { toolUseId: a.toolUseId, threadId: ref.threadId, settled: false });
    this.ctx.append({
      type: 'thread_tool_call',
      threadId: ref.threadId,
      sessionId: ref.sessionId,
      toolUseId: a.toolUseId,
      state: 'waiting',
      ...(a.useSeq !== undefined ? { useSeq: a.useSeq } : {}),
      ...(a.name !== undefined ? { name: a.name } : {}),
      ...(a.input !== undefined ? { input: a.input } : {}),
      ...(a.waitsFor ? { waitsFor: a.waitsFor } : {}),
      ...(a.policy !== undefined ? { policy: a.policy } : {}),
    });
  }

  private endThread(ref: ThreadRef): Promise<void> {
    return getExternalWorkflowHandle(ref.sessionId)
      .cancel()
      .catch((err) => log.warn('could not end a thread', { threadId: ref.threadId, error: failureMessage(err) }));
  }

  register(): void {
    setHandler(threadReplySignal, (raw) => this.onReply(raw));
    setHandler(threadActionSignal, (raw) => this.onAction(raw));
    setHandler(
      archiveThreadUpdate,
      async ({ threadId }) => {
        const ref = this.threads.get(threadId)!;
        ref.archived = true;
        const seq = (this.ctx.append({ type: 'thread_archived', threadId }) as { seq: number }).seq;
        if (ref.status !== 'terminated') {
          this.status(ref, 'terminated');
          this.onClosed(threadId, 'it was archived');
          await this.endThread(ref);
        }
        return { seq };
      },
      {
        validator: (raw) => {
          const id = (raw as { threadId?: unknown })?.threadId;
          if (this.ctx.closed()) throw ApplicationFailure.nonRetryable('session has ended', Failure.Session.Ended);
          if (typeof id !== 'string' || !this.threads.has(id))
            throw ApplicationFailure.nonRetryable(
              `no thread ${String(id)} in this session`,
              Failure.Session.InvalidMessage,
            );
        },
      },
    );
  }

  /** The turn was cut: each thread still answering is interrupted (it stays, idle); returns the calls cut. */
  async interruptRunning(): Promise<string[]> {
    const ids: string[] = [];
    for (const call of [...this.calls.values()]) {
      this.calls.delete(call.toolUseId);
      ids.push(call.toolUseId);
      if (call.result) continue;
      const ref = this.threads.get(call.threadId);
      if (ref && ref.status === 'running')
        await getExternalWorkflowHandle(ref.sessionId)
          .signal(interruptSignal, { reason: 'the coordinator was interrupted' })
          .catch((err) =>
            log.warn('could not interrupt a thread', { threadId: ref.threadId, error: failureMessage(err) }),
          );
    }
    return ids;
  }

  /** The coordinator ends: every thread still open ends with it. */
  async endAll(): Promise<void> {
    for (const ref of this.threads.values()) {
      if (ref.status === 'terminated') continue;
      this.status(ref, 'terminated');
      await this.endThread(ref);
    }
  }

  /** Whether a thread's call cross-posted here still waits for the client's answer. */
  waitingOnClient(): boolean {
    for (const p of this.posts.values()) if (!p.settled) return true;
    return false;
  }

  snapshot(): Pick<Carry, 'threads' | 'threadCalls' | 'threadPosts'> {
    if (!this.threads.size) return {};
    const posts = [...this.posts.values()];
    const open = posts.filter((p) => !p.settled);
    const settled = posts.filter((p) => p.settled).slice(-SETTLED_POSTS_KEPT);
    return {
      threads: [...this.threads.values()].map((t) => ({ ...t })),
      threadCalls: [...this.calls.values()].map((c) => ({ ...c })),
      ...(posts.length ? { threadPosts: [...open, ...settled].map((p) => ({ ...p })) } : {}),
    };
  }
}

/** The thread's side: it answers the coordinator's messages, one turn each, and stays open between them. */
export class ThreadSide {
  /** The coordinator's call the current turn answers. */
  private request: string | undefined;

  constructor(
    readonly identity: ThreadIdentity,
    private readonly run: SessionRun,
    private readonly parent: ParentRef,
    private readonly budget: Budget,
    carried: Carry | undefined,
  ) {
    this.request = carried ? carried.threadRequest : parent.toolUseId;
  }

  /** A call of this thread waits for the client, or no longer does: the coordinator cross-posts it. */
  async crossPost(action: Omit<ThreadAction, 'sessionId'>): Promise<void> {
    try {
      await getExternalWorkflowHandle(this.parent.sessionId).signal(threadActionSignal, {
        sessionId: this.run.sessionId,
        ...action,
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('could not cross-post a call to the coordinator', {
        toolUseId: action.toolUseId,
        error: failureMessage(err),
      });
    }
  }

  carry(): Pick<Carry, 'thread' | 'threadRequest'> {
    return { thread: this.identity, ...(this.request ? { threadRequest: this.request } : {}) };
  }

  private appendStatus(status: 'running' | 'idle' | 'terminated', stopReason?: 'end_turn' | 'retries_exhausted') {
    this.run.append({
      type: 'thread_status',
      threadId: this.identity.id,
      agent: this.identity.agent,
      status,
      ...(stopReason ? { stopReason } : {}),
    });
  }

  /** A new thread's first message came with its start: it is running. */
  opened(): void {
    this.appendStatus('running');
  }

  register(): void {
    setHandler(threadMessageSignal, (raw) => {
      const parsed = ThreadMessageSchema.safeParse(raw);
      if (!parsed.success || this.run.endReason !== undefined) {
        log.warn('threadMessage signal ignored', parsed.success ? {} : { error: formatIssues(parsed.error) });
        return;
      }
      this.request = parsed.data.toolUseId;
      this.run.acceptUserMessage({ text: parsed.data.text }, this.identity.primaryId);
      this.appendStatus('running');
    });
  }

  private async report(answer: { output: string; isError: boolean }, ended: boolean, failed: boolean) {
    const cost = this.budget.tracking ? this.budget.ownCost() : undefined;
    try {
      await getExternalWorkflowHandle(this.parent.sessionId).signal(threadReplySignal, {
        sessionId: this.run.sessionId,
        ...(this.request ? { toolUseId: this.request } : {}),
        ...answer,
        ended,
        ...(failed ? { failed } : {}),
        usage: { ...this.run.usage },
        ...(cost !== undefined ? { costNanoUsd: cost } : {}),
      });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // A thread ended by its coordinator's end finds the coordinator closed: nothing is left to tell it.
      if (!ended)
        this.run.append({
          type: 'error',
          kind: 'subagent',
          message: `could not reply to the coordinator ${this.parent.sessionId}: ${failureMessage(err)}`,
        });
    }
    this.request = undefined;
  }

  /** After a turn: a finished one is the reply; one that ended in an error ends the thread (the end reports it). */
  async afterTurn(): Promise<void> {
    const { run } = this;
    if (run.state !== 'waiting_for_user' || run.endReason !== undefined || !this.request) return;
    const last = [...run.events].reverse().find((e) => e.type === 'error' || e.type === 'assistant_message');
    if (last?.type === 'error') {
      run.requestEnd('failed');
      return;
    }
    const answer = childAnswer(run.events, 'idle');
    if (!answer.isError)
      run.append({
        type: 'thread_message',
        direction: 'sent',
        threadId: this.identity.primaryId,
        text: answer.output,
      });
    this.appendStatus('idle', 'end_turn');
    await this.report(answer, false, false);
  }

  /** The thread's end: the coordinator learns it, with the pending call's answer if one waits. */
  async onEnd(reason: string): Promise<void> {
    const answer = this.request
      ? childAnswer(this.run.events, reason)
      : { output: `the thread ended (${reason})`, isError: true };
    const failed = reason === 'failed';
    if (failed) this.appendStatus('idle', 'retries_exhausted');
    this.appendStatus('terminated');
    await this.report(answer, true, failed);
  }
}
