// sessionWorkflow: one workflow per session. It owns the append-only event log and runs the decision loop.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { buildToolSpecs, runBuiltinTool } from './tools';
import type { Agent } from '../session/agent';
import { formatIssues, AgentSchema } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import {
  EventsQueryArgsSchema,
  ReasonSchema,
  SessionInputSchema,
  UserMessageSchema,
  endSignal,
  eventsQuery,
  interruptSignal,
  sendMessageUpdate,
  statusQuery,
  userMessageSignal,
  type SessionInput,
  type SessionState,
  type UserMessage,
} from './messages';

type Activities = ReturnType<typeof createActivities>;

export async function sessionWorkflow(rawInput: SessionInput): Promise<{ lastSeq: number; reason: string }> {
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(`invalid session input: ${formatIssues(parsed.error)}`, 'SessionError.InvalidInput');
  }
  const agent: Agent = AgentSchema.parse(parsed.data.agent);
  const sessionId = workflowInfo().workflowId;

  const retry = agent.limits.modelRetry;
  const model = proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: agent.limits.modelHeartbeatTimeoutMs,
    retry: {
      maximumAttempts: retry.maxAttempts,
      initialInterval: retry.initialIntervalMs,
      backoffCoefficient: retry.backoffCoefficient,
      maximumInterval: retry.maximumIntervalMs,
    },
  });

  const events: SessionEvent[] = [];
  const seenMessageIds = new Map<string, number>();
  const usage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
  let state: SessionState = 'waiting_for_user';
  let lastUserSeq = -1;
  let handledThrough = -1;
  let endReason: string | undefined;
  let turn: { scope: CancellationScope; interruptReason?: string } | undefined;

  const append = (e: NewEvent): SessionEvent => {
    const event = { seq: events.length, ...e, time: new Date().toISOString() } as SessionEvent;
    events.push(event);
    return event;
  };

  const acceptUserMessage = (msg: UserMessage): number => {
    if (msg.messageId !== undefined) {
      const existing = seenMessageIds.get(msg.messageId);
      if (existing !== undefined) return existing;
    }
    const event = append({ type: 'user_message', text: msg.text, ...(msg.messageId ? { messageId: msg.messageId } : {}) });
    if (msg.messageId !== undefined) seenMessageIds.set(msg.messageId, event.seq);
    lastUserSeq = event.seq;
    return event.seq;
  };

  // Before any handler is registered: input that arrived with the start is delivered when its handler is set.
  append({ type: 'session_started', agent: agent as unknown as Record<string, unknown> });
  if (parsed.data.message) acceptUserMessage(parsed.data.message);

  setHandler(userMessageSignal, (raw) => {
    const result = UserMessageSchema.safeParse(raw);
    if (!result.success) {
      log.warn('userMessage signal rejected', { error: formatIssues(result.error) });
      return;
    }
    if (endReason !== undefined) {
      log.warn('userMessage signal ignored: session has ended');
      return;
    }
    acceptUserMessage(result.data);
  });

  setHandler(
    sendMessageUpdate,
    (raw) => ({ seq: acceptUserMessage(UserMessageSchema.parse(raw)) }),
    {
      validator: (raw) => {
        const result = UserMessageSchema.safeParse(raw);
        if (!result.success) throw ApplicationFailure.nonRetryable(`invalid message: ${formatIssues(result.error)}`, 'SessionError.InvalidMessage');
        if (endReason !== undefined) throw ApplicationFailure.nonRetryable('session has ended', 'SessionError.Ended');
      },
    },
  );

  setHandler(interruptSignal, (raw) => {
    const reason = ReasonSchema.safeParse(raw ?? {});
    if (!turn) return;
    turn.interruptReason = (reason.success && reason.data.reason) || 'interrupted by user';
    turn.scope.cancel();
  });

  setHandler(endSignal, (raw) => {
    if (endReason !== undefined) return;
    const reason = ReasonSchema.safeParse(raw ?? {});
    endReason = (reason.success && reason.data.reason) || 'ended by user';
    turn?.scope.cancel();
  });

  setHandler(eventsQuery, (raw) => {
    const args = EventsQueryArgsSchema.parse(raw ?? {});
    const slice = events.slice(args.from, args.from + args.limit);
    return { events: slice, nextSeq: args.from + slice.length };
  });

  setHandler(statusQuery, () => ({ state, lastSeq: events.length - 1, sandboxes: [], usage: { ...usage } }));

  const tools = buildToolSpecs(agent);

  /** Gives every tool_use of the current round that has no result an error result, so the conversation stays valid. */
  const closeDanglingToolUses = (message: string) => {
    const answered = new Set<string>();
    const open: string[] = [];
    for (const e of events) {
      if (e.type === 'tool_use') open.push(e.id);
      if (e.type === 'tool_result') answered.add(e.toolUseId);
    }
    for (const id of open) {
      if (!answered.has(id)) append({ type: 'tool_result', toolUseId: id, output: message, isError: true, error: { kind: 'tool', message } });
    }
  };

  const runTurn = async () => {
    for (let round = 0; ; round++) {
      if (round >= agent.limits.maxToolRoundsPerTurn) {
        append({ type: 'error', kind: 'limit', message: `stopped after ${round} tool rounds in one turn (limits.maxToolRoundsPerTurn)` });
        return;
      }
      handledThrough = lastUserSeq;
      let reply;
      try {
        reply = await model.callModel({
          sessionId,
          throughSeq: events.length - 1,
          model: agent.model,
          system: agent.system,
          tools,
          maxTokens: agent.limits.maxOutputTokens,
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (err instanceof ActivityFailure) {
          const cause = err.cause;
          const detail = cause instanceof ApplicationFailure && cause.type ? `${cause.type}: ${cause.message}` : (cause?.message ?? err.message);
          append({ type: 'error', kind: 'model', message: detail });
          return;
        }
        throw err;
      }
      usage.inputTokens += reply.usage.inputTokens;
      usage.outputTokens += reply.usage.outputTokens;
      usage.cacheReadInputTokens += reply.usage.cacheReadInputTokens;
      usage.cacheCreationInputTokens += reply.usage.cacheCreationInputTokens;
      append({ type: 'assistant_message', content: reply.content, stopReason: reply.stopReason, usage: reply.usage });

      const toolUses = reply.content.filter((b) => b.type === 'tool_use') as unknown as { id: string; name: string; input: unknown }[];
      if (toolUses.length === 0) return;
      for (const use of toolUses) append({ type: 'tool_use', id: use.id, name: use.name, input: use.input });
      for (const use of toolUses) {
        const result = await runBuiltinTool(agent, use, events);
        append({ type: 'tool_result', toolUseId: use.id, ...result });
      }
    }
  };

  while (endReason === undefined) {
    await condition(() => endReason !== undefined || lastUserSeq > handledThrough);
    if (endReason !== undefined) break;
    state = 'running';
    const scope = new CancellationScope();
    turn = { scope };
    try {
      await scope.run(runTurn);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      closeDanglingToolUses(endReason !== undefined ? 'session ended before the tool finished' : 'interrupted before the tool finished');
      if (endReason === undefined) append({ type: 'interrupted', reason: turn.interruptReason ?? 'interrupted' });
      handledThrough = lastUserSeq;
    } finally {
      turn = undefined;
    }
    if (endReason === undefined) state = 'waiting_for_user';
  }

  append({ type: 'session_ended', reason: endReason });
  state = 'ended';
  await condition(allHandlersFinished);
  return { lastSeq: events.length - 1, reason: endReason };
}
