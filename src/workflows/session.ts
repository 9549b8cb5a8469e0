// sessionWorkflow: one workflow per session. It owns the append-only event log and runs the decision loop.
//
// Reading order: the start (parse the input, build the run's parts, the start kinds in one switch, the handlers),
// then the loop (wait for input, run a turn, hand over or end), then the end. The parts live in their own files:
// RunState (the log, inbox marks, usage, window, the Carry), SandboxSlots (hands), McpTools, the tool gate
// (approvals, client tools), hand-off and sub-agents; every signal, update and query is in session-handlers.ts.
import { ActivityFailure, ApplicationFailure, CancellationScope, allHandlersFinished, condition, continueAsNew, isCancellation, patched, workflowInfo } from '@temporalio/workflow';
import type { ModelReply } from '../model/client';
import type { CallModelInput } from '../brain/activities';
import { boundTools, buildToolSpecs } from '../tools/offer';
import { toolError, type ToolOutcome } from '../tools/kind';
import { readRunEvents, readsArchive } from '../tools/session-events';
import { createToolGate } from './approvals';
import { shouldReprompt } from './harness';
import { EMPTY_REPLY_NUDGE } from '../session/harness';
import { notProvisioned } from '../session/model-sentences';
import { windowOf } from '../session/context-builder';
import { openToolUses } from '../session/context';
import { modelSummary } from '../session/summaries';
import { trackVisibility } from './visibility';
import { AgentSchema, formatIssues, type Agent } from '../session/agent';
import { eventsDigest } from '../session/digest';
import { SessionInputSchema, type Carry, type SessionInput, type SessionResult, type SessionWorkflow, type PendingTool } from '../session/contract';
import { failureMessage } from './failures';
import { createHandoff } from './handoff';
import { childAnswer, createSubagents, reportToParent } from './subagents';
import { sessionActivities } from './activity-options';
import { RunState } from './run-state';
import { withLoggedRetries } from './model-retry';
import { SandboxSlots } from './sandbox-slots';
import { McpTools } from './mcp-tools';
import { WebTools } from './web-tools';
import { registerSessionHandlers, visibleState } from './session-handlers';
import { Failure } from '../session/failure-types';

/** What a turn ends with: back to waiting for input, or a handover to a new run that resumes at `round`. */
type TurnEnd = { kind: 'idle' } | { kind: 'handover'; round: number };

/** A model call's input carries the digest of at most this many events appended since the previous call. */
const MAX_TAIL_DIGEST_EVENTS = 200;

/**
 * The session runs in a scope a cancellation request cannot cancel: a request (as when a parent session
 * cancels its child) ends the session like the `end` signal, so it still cleans up and seals its log.
 */
export const sessionWorkflow: SessionWorkflow = (rawInput) => CancellationScope.nonCancellable(() => runSession(rawInput));

async function runSession(rawInput: SessionInput): Promise<SessionResult> {
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(`invalid session input: ${formatIssues(parsed.error)}`, Failure.Session.InvalidInput);
  }
  const agent: Agent = AgentSchema.parse(parsed.data.agent);
  const sessionId = workflowInfo().workflowId;
  const limits = agent.limits;
  const carried: Carry | undefined = parsed.data.continued;
  const startKind = parsed.data.start;
  const acts = sessionActivities(limits);
  const { archive } = acts;

  const rs = new RunState(sessionId, limits, carried, parsed.data.parent);
  const { events, parentRef } = rs;
  const append = rs.append.bind(rs);
  const assertOpen = () => rs.assertOpen();
  const closed = () => rs.closed();
  const slots = new SandboxSlots(sessionId, agent, acts, append, carried);
  const tools = boundTools(agent);
  const toolSpecs = buildToolSpecs(agent);
  const mcpTools = new McpTools(sessionId, agent, acts.mcp, append, toolSpecs, tools, carried?.mcpTools);
  const webTools = new WebTools(sessionId, agent);
  const handoff = createHandoff({ sessionId, append, slots, closed });
  const subagents = createSubagents({ sessionId, agent, append, usage: rs.usage, handoff, carried, closed });

  /**
   * The round a previous run handed over in the middle of. A run recorded before the gate carried only the
   * spawn_agent calls still waiting for their children (`waiting`); they pass the gate as already allowed.
   */
  function carriedRound(): PendingTool[] | undefined {
    const inTurn = carried?.inTurn;
    if (inTurn?.tools || !inTurn?.waiting) return inTurn?.tools;
    const spawnName = [...tools].find(([, t]) => t.kind === 'spawn_agent')?.[0] ?? 'spawn_agent';
    return inTurn.waiting.map((id) => ({ id, name: spawnName, input: {}, decision: { allow: true, by: 'policy' } }));
  }

  /** Approvals, client tools and sub-agents: every tool call of a round passes this gate. */
  const gate = createToolGate({
    agent,
    append,
    events,
    runTool: (use) => runTool(use),
    shouldHandOver: () => rs.shouldHandOver(),
    assertOpen,
    carried: startKind === 'continued' ? carriedRound() : undefined,
    awaitExternal: (id) => subagents.awaitResult(id, () => rs.shouldHandOver()),
  });

  // Before any handler is registered: input that arrived with the start is delivered when its handler is set.
  switch (startKind) {
    case 'new':
      append({ type: 'session_started', agent: agent as unknown as Record<string, unknown>, ...(parentRef ? { parent: parentRef } : {}) });
      for (const s of parsed.data.lent ?? []) await handoff.receive(parentRef?.sessionId ?? 'unknown', s, parentRef?.sessionId);
      break;
    case 'forked':
      append({ type: 'session_started', agent: agent as unknown as Record<string, unknown>, forkedFrom: parsed.data.forkedFrom });
      rs.closeToolUses(carried?.openToolUses ?? [], 'the session was forked before this tool finished');
      break;
    case 'woken':
      append({ type: 'error', kind: 'session', message: `run ${rs.run - 1} of this session stopped without handing over; it was woken as run ${rs.run}` });
      rs.closeToolUses(carried?.openToolUses ?? [], 'the run stopped before this tool finished');
      break;
    case 'continued':
      break;
  }
  if (parsed.data.message) rs.acceptUserMessage(parsed.data.message);
  // Histories recorded before the search attributes existed carry no upserts.
  if (patched('search-attributes')) {
    const firstUserText = () => (startKind === 'new' ? events.find((e) => e.type === 'user_message')?.text : undefined);
    trackVisibility(agent, () => visibleState({ rs, gate }), firstUserText);
  }

  /** Tool uses without a result: this run's, and those of a round an earlier run handed over in the middle of. */
  const unansweredToolUses = () => [...new Set([...gate.openIds(), ...openToolUses(events)])];
  /** Closes every call of the round in progress, cancelling its running children first. */
  const closeDanglingToolUses = async (message: string) => {
    const cut = await subagents.cancelRunning();
    rs.closeToolUses([...new Set([...unansweredToolUses(), ...cut])], message);
    gate.clear();
  };

  /** What the next run starts from. */
  const snapshot = (inTurn?: { round: number }): Carry =>
    rs.toCarry({
      inTurn: inTurn ? { ...inTurn, ...(gate.carry() ? { tools: gate.carry() } : {}) } : undefined,
      ...slots.carry(),
      mcpTools: mcpTools.carry(),
      openToolUses: unansweredToolUses(),
      ...subagents.snapshot(),
    });

  registerSessionHandlers({ agent, rs, slots, gate, handoff, subagents, snapshot });

  /** Seals every event of this run not sealed yet. A failure is logged as an event; the events stay in history. */
  const sealAll = async (): Promise<boolean> => {
    const through = rs.nextSeq() - 1;
    if (through <= rs.sealedThrough) return true;
    try {
      // The digest is of the events as this run holds them, which history commits with the seal's scheduling.
      const digest = eventsDigest(events.slice(rs.sealedThrough + 1 - rs.baseSeq, through + 1 - rs.baseSeq));
      await archive.sealEvents({ sessionId, fromSeq: rs.sealedThrough + 1, throughSeq: through, digest });
      rs.sealedThrough = through;
      return true;
    } catch (err) {
      append({ type: 'error', kind: 'archive', message: `could not seal events ${rs.sealedThrough + 1} to ${through} into the session archive: ${failureMessage(err)}` });
      return false;
    }
  };

  /**
   * Continues as new once every handler has finished and every event is sealed. Input that arrives meanwhile
   * is appended and sealed too; the server refuses the handover if more arrives after this task started, and
   * the replay that follows takes it in. Returns (without handing over) if the session is ending or sealing failed.
   */
  const handOver = async (inTurn?: { round: number }): Promise<void> => {
    const handover: { interruptReason?: string } = {};
    rs.handover = handover;
    try {
      for (;;) {
        await condition(allHandlersFinished);
        if (rs.endReason !== undefined) return;
        if (inTurn && handover.interruptReason !== undefined) {
          await closeDanglingToolUses('interrupted before the tool finished');
          append({ type: 'interrupted', reason: handover.interruptReason });
          rs.handledThrough = rs.lastUserSeq;
          inTurn = undefined;
        }
        if (!(await sealAll())) {
          rs.handoverRetryAtSeq = rs.nextSeq() + 50;
          return;
        }
        if (rs.sealedThrough === rs.nextSeq() - 1 && allHandlersFinished() && rs.endReason === undefined) break;
      }
    } finally {
      rs.handover = undefined;
    }
    await continueAsNew<typeof sessionWorkflow>({ agent, continued: snapshot(inTurn), start: 'continued' });
  };

  const runTool = async (use: { id: string; name: string; input: unknown }): Promise<ToolOutcome> => {
    const bound = tools.get(use.name);
    if (!bound) return webTools.run(use) ?? mcpTools.run(use) ?? toolError(`unknown tool: ${use.name}`);
    if (bound.sandbox !== undefined) return slots.runTool(use, bound);
    if (bound.kind === 'spawn_agent') {
      // A call that waited for approval starts its child only now.
      if (!subagents.tracks(use.id)) await subagents.startAll([use]);
      return subagents.result(use.id);
    }
    if (bound.kind === 'handoff_sandbox') return handoff.tool(use.input);
    if (readsArchive(use.input, rs.baseSeq)) {
      // An older slice lives in the archive: read it there.
      try {
        return await archive.readSessionEvents({ sessionId, input: use.input });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return toolError(`could not read the session log: ${failureMessage(err)}`, 'infra');
      }
    }
    return readRunEvents(use, events, rs.baseSeq);
  };

  /**
   * A local model call (limits.modelCall 'local') is handed the run's events of its window: a local activity's input
   * is never written to history, and the worker running it is the one holding the run, whose task stays open
   * meanwhile (a query for them would wait for it). Only a window reaching back before the run is read, from the archive.
   */
  const local = limits.modelCall === 'local' && patched('model-local-activity');
  /** The last seq a model call of this run read (undefined before the first one). */
  let modelReadThrough: number | undefined;
  /**
   * The digest of what was appended since the run's previous model call, for a call reading through `throughSeq`:
   * the worker that ran that call, and was handed each task's new events, checks them against it instead of
   * reading them back. Absent for a run's first call and after a long stretch (the worker reads the log then).
   */
  const tailOf = (throughSeq: number) => {
    if (local || modelReadThrough === undefined || throughSeq - modelReadThrough > MAX_TAIL_DIGEST_EVENTS || !patched('model-tail-digest')) return {};
    const fromSeq = modelReadThrough + 1;
    return { tail: { fromSeq, digest: eventsDigest(events.slice(fromSeq - rs.baseSeq, throughSeq + 1 - rs.baseSeq)) } };
  };
  /** A model request; histories recorded before retries were logged leave every retry to Temporal, unseen. */
  const withRetries = <T>(call: (proxies: Pick<typeof acts, 'model' | 'localModel'>) => Promise<T>): Promise<T> =>
    patched('model-retry-event') ? withLoggedRetries(() => call(acts.loggedRetries), rs, append, limits.modelRetry) : call(acts);
  const callModel = (summary: { summary: string }, request: CallModelInput) =>
    withRetries((p) => {
      if (!local) return p.model.callModel.executeWithOptions(summary, [request]);
      const from = Math.max(request.window?.fromSeq ?? 0, rs.baseSeq);
      return p.localModel.callModel.executeWithOptions(summary, [{ ...request, events: events.slice(from - rs.baseSeq, request.throughSeq + 1 - rs.baseSeq) }]);
    });
  /** One model reply over the current window, compacting the window first when it is over budget; with the last seq its call read. */
  const nextReply = async (): Promise<{ reply: ModelReply; throughSeq: number }> => {
    const request = () => {
      const throughSeq = rs.nextSeq() - 1;
      return { sessionId, throughSeq, model: agent.model, system: agent.system, tools: toolSpecs, maxTokens: limits.maxOutputTokens, caching: agent.promptCaching, window: rs.window, streamIdleMs: limits.modelStreamIdleMs, ...tailOf(throughSeq) };
    };
    const summary = { summary: modelSummary(++rs.modelCalls, rs.run) };
    const firstRequest = request();
    const first = await callModel(summary, { ...firstRequest, contextTokens: limits.contextTokens });
    modelReadThrough = firstRequest.throughSeq;
    if (first.compact === undefined) return { reply: first, throughSeq: firstRequest.throughSeq };
    const cutSeq = first.compact.cutSeq;
    const compactRequest = request();
    const c = await withRetries((p) => p.model.compactContext.executeWithOptions({ summary: 'compact context' }, [{ ...compactRequest, cutSeq }]));
    modelReadThrough = compactRequest.throughSeq;
    const event = append({ type: 'context_compacted', throughSeq: cutSeq - 1, summary: c.summary, tokensBefore: c.tokensBefore, tokensAfter: c.tokensAfter });
    if (event.type === 'context_compacted') rs.window = windowOf(event);
    // Over budget even now (one huge tail): send it anyway rather than compact in a loop.
    const secondRequest = request();
    const second = await callModel(summary, secondRequest);
    modelReadThrough = secondRequest.throughSeq;
    if (second.compact !== undefined) throw new Error('callModel asked for a compaction without a budget');
    return { reply: second, throughSeq: secondRequest.throughSeq };
  };

  /** Runs a turn from `startRound`, until the model stops calling tools or the run should hand over first. */
  const runTurn = async (startRound: number): Promise<TurnEnd> => {
    // A run that took over in the middle of a round finishes its calls first.
    if ((await gate.runRound()) === 'handover') return { kind: 'handover', round: startRound };
    let reprompts = 0;
    for (let round = startRound; ; round++) {
      rs.currentRound = round;
      if (round >= limits.maxToolRoundsPerTurn) {
        append({ type: 'error', kind: 'limit', message: `stopped after ${round} tool rounds in one turn (limits.maxToolRoundsPerTurn)` });
        return { kind: 'idle' };
      }
      // Between two model calls of a long tool loop is a safe place to hand over.
      if (round > startRound && rs.shouldHandOver()) return { kind: 'handover', round };
      rs.handledThrough = rs.lastUserSeq;
      await mcpTools.ensureListed();
      let reply: ModelReply;
      let throughSeq: number;
      try {
        ({ reply, throughSeq } = await nextReply());
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (err instanceof ActivityFailure) {
          append({ type: 'error', kind: 'model', message: failureMessage(err) });
          return { kind: 'idle' };
        }
        throw err;
      }
      rs.addUsage(reply.usage);
      append({ type: 'assistant_message', content: reply.content, stopReason: reply.stopReason, usage: reply.usage, throughSeq });

      const toolUses = reply.content.filter((b) => b.type === 'tool_use') as unknown as { id: string; name: string; input: unknown }[];
      if (toolUses.length === 0) {
        if (!shouldReprompt(agent.harness, reply.content, reprompts)) return { kind: 'idle' };
        reprompts++;
        append({ type: 'user_message', text: EMPTY_REPLY_NUDGE, source: 'harness' });
        continue;
      }
      for (const use of toolUses) append({ type: 'tool_use', id: use.id, name: use.name, input: use.input });
      // The round's children start together and run in parallel; one that needs approval starts once approved.
      await subagents.startAll(toolUses.filter((u) => tools.get(u.name)?.kind === 'spawn_agent' && !gate.asks(u)));
      gate.startRound(toolUses);
      if ((await gate.runRound()) === 'handover') return { kind: 'handover', round: round + 1 };
    }
  };

  if (agent.provision === 'eager' && (startKind === 'new' || startKind === 'forked')) {
    for (const name of Object.keys(agent.sandboxes)) {
      try {
        await slots.ensure(name);
      } catch (err) {
        append({ type: 'error', kind: 'sandbox', message: notProvisioned(name, failureMessage(err)) });
      }
    }
  }

  // A woken run gives up on the children its dead run waited for; their calls may have begun in an earlier run.
  if (startKind === 'woken') {
    const closedAlready = new Set(carried?.openToolUses ?? []);
    rs.closeToolUses((await subagents.cancelRunning()).filter((id) => !closedAlready.has(id)), 'the run stopped before this tool finished');
  }

  /** A run that took over mid-turn goes straight on with that turn. */
  let resumeRound = carried?.inTurn?.round;
  // A child whose run stopped mid-task does not pick the task up again: it ends and reports an error.
  if (parentRef && startKind === 'woken') rs.endReason = 'its run stopped before it answered';
  while (rs.endReason === undefined) {
    if (resumeRound === undefined && rs.shouldHandOver()) await handOver();
    for (; resumeRound === undefined; ) {
      const deadline = slots.nextIdleDeadline();
      const wake = () => rs.endReason !== undefined || rs.lastUserSeq > rs.handledThrough;
      if (deadline === undefined) {
        await condition(wake);
        break;
      }
      if (await condition(wake, Math.max(1, deadline - Date.now()))) break;
      await slots.stopIdle();
    }
    if (rs.endReason !== undefined) break;
    rs.state = 'running';
    const scope = new CancellationScope();
    const turn: { scope: CancellationScope; interruptReason?: string } = { scope };
    rs.turn = turn;
    const startRound = resumeRound ?? 0;
    resumeRound = undefined;
    let end: TurnEnd = { kind: 'idle' };
    try {
      end = await scope.run(() => runTurn(startRound));
    } catch (err) {
      if (!isCancellation(err)) throw err;
      // Children of the cut turn are cancelled; their calls may have begun in an earlier run.
      await closeDanglingToolUses(rs.endReason !== undefined ? 'session ended before the tool finished' : 'interrupted before the tool finished');
      if (rs.endReason === undefined) append({ type: 'interrupted', reason: turn.interruptReason ?? 'interrupted' });
      rs.handledThrough = rs.lastUserSeq;
    } finally {
      rs.turn = undefined;
    }
    if (end.kind === 'handover') {
      await handOver({ round: end.round });
      // Still here: the session is ending, or the archive failed; this run carries on with the turn.
      if (rs.endReason === undefined) resumeRound = end.round;
      continue;
    }
    if (rs.endReason === undefined) rs.state = 'waiting_for_user';
    // A child session answers one task: its turn's last reply is the answer, and it ends.
    if (parentRef && rs.endReason === undefined) rs.endReason = 'answered';
  }

  const endReason = rs.endReason;
  const answer = parentRef ? childAnswer(events, endReason) : undefined;
  // A session ending while a handover waited (on an approval, a client or a child) leaves that round's calls open.
  await closeDanglingToolUses('session ended before the tool finished');
  const returned = await handoff.returnLent();
  await CancellationScope.nonCancellable(() => slots.destroyAll());
  if (parentRef && answer) {
    const problem = await reportToParent(parentRef, { sessionId, ...answer, usage: { ...rs.usage }, returned });
    if (problem) append({ type: 'error', kind: 'subagent', message: `could not report to the parent session ${parentRef.sessionId}: ${problem}` });
  }
  append({ type: 'session_ended', reason: endReason });
  rs.state = 'ended';
  await condition(allHandlersFinished);
  // Histories recorded before the archive existed end without sealing.
  if (patched('session-archive')) await CancellationScope.nonCancellable(sealAll);
  return { lastSeq: rs.nextSeq() - 1, reason: endReason };
}
