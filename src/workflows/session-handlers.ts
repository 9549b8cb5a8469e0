// The session's API as the workflow serves it: every signal, update and query, registered in one place and in
// one order (a handler set late receives what arrived before it, in registration order).
import { ApplicationFailure, CancellationScope, log, patched, setHandler, uuid4 } from '@temporalio/workflow';
import { formatIssues, withAgentTools, type Agent } from '../session/agent';
import { formatRefusal } from '../session/issues';
import { MAX_FILE_BYTES } from '../session/paths';
import type { ToolGate } from './approvals';
import type { Budget } from './budget';
import type { Handoff } from './handoff';
import {
  EventsQueryArgsSchema,
  GetFileSchema,
  PutFileSchema,
  ReasonSchema,
  SessionUpdateSchema,
  UserMessageSchema,
  interruptUpdate,
  updateSessionUpdate,
  endSignal,
  eventsQuery,
  getFileUpdate,
  handoverQuery,
  interruptSignal,
  putFileUpdate,
  sendMessageUpdate,
  statusQuery,
  userMessageSignal,
  type Carry,
} from '../session/contract';
import type { Outcomes } from './outcome-loop';
import type { SessionRun } from './session-run';
import type { SandboxSlots } from './sandbox-slots';
import type { Subagents } from './subagents';
import { Failure } from '../session/failure-types';

export interface SessionParts {
  agent: Agent;
  run: SessionRun;
  slots: SandboxSlots;
  gate: ToolGate;
  handoff: Handoff;
  subagents: Subagents;
  budget: Budget;
  outcomes: Outcomes;
  /** Whether a thread's call cross-posted here waits for the client (a coordinator's; absent otherwise). */
  threadsWaiting?: () => boolean;
  /** The Carry a handover would give the next run now. */
  carry: (inTurn?: { round: number }) => Carry;
}

/**
 * The state a client sees: `requires_action` while a turn waits on a person or the calling application, its own
 * call's answer or, on a coordinator, that of a thread's call cross-posted to it.
 */
export const visibleState = (p: Pick<SessionParts, 'run' | 'gate' | 'threadsWaiting'>) =>
  p.run.state === 'running' && (p.gate.waiting() || p.threadsWaiting?.() === true)
    ? ('requires_action' as const)
    : p.run.state;

/**
 * Refuses a replacement of the agent's tools unless the session is a top-level one waiting for input (not in a
 * turn, not waiting on an approval or a tool result), or when the agent file it would make is invalid.
 */
function checkAgentUpdate(p: SessionParts, tools: Parameters<typeof withAgentTools>[1]): void {
  if (p.run.parentRef)
    throw ApplicationFailure.nonRetryable(
      "a sub-agent's or a thread's tools cannot change: update its session",
      Failure.Session.InvalidMessage,
    );
  const state = visibleState(p);
  if (state !== 'waiting_for_user')
    throw ApplicationFailure.nonRetryable(
      `the session is ${state === 'requires_action' ? 'waiting on a tool call' : state}; its agent's tools can change only while it is idle`,
      Failure.Session.NotIdle,
    );
  try {
    withAgentTools(p.run.nextAgent ?? p.agent, tools);
  } catch (e) {
    throw ApplicationFailure.nonRetryable(
      `invalid agent tools: ${e instanceof Error ? e.message : String(e)}`,
      Failure.Session.InvalidMessage,
    );
  }
}

export function registerSessionHandlers(p: SessionParts): void {
  const { agent, run, slots, gate, handoff, subagents, budget } = p;
  const assertOpen = () => run.assertOpen();

  handoff.register(assertOpen);
  subagents.register();
  CancellationScope.current().cancelRequested.catch(() => run.requestEnd('cancelled'));

  setHandler(userMessageSignal, (raw) => {
    const result = UserMessageSchema.safeParse(raw);
    if (!result.success) {
      log.warn('userMessage signal rejected', { error: formatIssues(result.error) });
      return;
    }
    if (run.endReason !== undefined) {
      log.warn('userMessage signal ignored: session has ended');
      return;
    }
    run.acceptUserMessage(result.data);
  });

  setHandler(sendMessageUpdate, (raw) => ({ seq: run.acceptUserMessage(UserMessageSchema.parse(raw)) }), {
    validator: (raw) => {
      const result = UserMessageSchema.safeParse(raw);
      if (!result.success)
        throw ApplicationFailure.nonRetryable(
          formatRefusal('invalid message', result.error),
          Failure.Session.InvalidMessage,
        );
      assertOpen();
    },
  });

  setHandler(
    putFileUpdate,
    async (raw) => {
      const req = PutFileSchema.parse(raw);
      const path = slots.fileTarget(req.sandbox, req.path);
      const r = await slots.onFileSandbox(req.sandbox, Failure.Files.Put, (host, sandboxId) =>
        host.putFile({
          sessionId: run.sessionId,
          sandboxId,
          key: `put-${uuid4()}`,
          path,
          contentBase64: req.contentBase64,
        }),
      );
      return { path, bytes: r.bytes };
    },
    {
      validator: (raw) => {
        const r = PutFileSchema.safeParse(raw);
        if (!r.success)
          throw ApplicationFailure.nonRetryable(formatRefusal('invalid putFile', r.error), Failure.Files.Invalid);
        assertOpen();
        slots.fileTarget(r.data.sandbox, r.data.path);
        const bytes = Math.floor((r.data.contentBase64.length * 3) / 4);
        if (bytes > MAX_FILE_BYTES + 2)
          throw ApplicationFailure.nonRetryable(
            `file is about ${bytes} bytes; the limit is ${MAX_FILE_BYTES}`,
            Failure.Files.TooLarge,
          );
      },
    },
  );

  setHandler(
    getFileUpdate,
    async (raw) => {
      const req = GetFileSchema.parse(raw);
      const path = slots.fileTarget(req.sandbox, req.path);
      const r = await slots.onFileSandbox(req.sandbox, Failure.Files.Get, (host, sandboxId) =>
        host.getFile({ sessionId: run.sessionId, sandboxId, key: `get-${uuid4()}`, path }),
      );
      return { path, ...r };
    },
    {
      validator: (raw) => {
        const r = GetFileSchema.safeParse(raw);
        if (!r.success)
          throw ApplicationFailure.nonRetryable(formatRefusal('invalid getFile', r.error), Failure.Files.Invalid);
        assertOpen();
        slots.fileTarget(r.data.sandbox, r.data.path);
      },
    },
  );

  gate.register();
  p.outcomes.register();

  setHandler(interruptSignal, (raw) => {
    const parsedReason = ReasonSchema.safeParse(raw ?? {});
    const reason = (parsedReason.success && parsedReason.data.reason) || 'interrupted by user';
    run.interrupt(reason);
  });

  // The interrupt with an acknowledgement. It cannot wait for a handover in progress (which waits for every
  // handler to finish first); that run appends the interrupt before it hands over.
  setHandler(
    interruptUpdate,
    (raw) => run.interruptAcknowledged(ReasonSchema.parse(raw ?? {}).reason || 'interrupted by user'),
    {
      validator: (raw) => {
        const r = ReasonSchema.safeParse(raw ?? {});
        if (!r.success)
          throw ApplicationFailure.nonRetryable(
            formatRefusal('invalid interrupt', r.error),
            Failure.Session.InvalidMessage,
          );
        assertOpen();
      },
    },
  );

  setHandler(
    updateSessionUpdate,
    (raw) => {
      const { agent: tools, ...update } = SessionUpdateSchema.parse(raw);
      // A new budget lets the next turn call the model again (or stops it): the check reads it before each call.
      if (update.budget !== undefined) budget.setLimit(update.budget);
      // New tools: the run hands over to one built with them before the next turn (see SessionRun.next).
      if (tools && patched('session-agent-update')) run.nextAgent = withAgentTools(run.nextAgent ?? agent, tools.tools);
      return {
        seq: run.append({ type: 'session_updated', ...update, ...(tools ? { agent: tools.snapshot } : {}) }).seq,
      };
    },
    {
      validator: (raw) => {
        const r = SessionUpdateSchema.safeParse(raw);
        if (!r.success)
          throw ApplicationFailure.nonRetryable(
            formatRefusal('invalid session update', r.error),
            Failure.Session.InvalidMessage,
          );
        assertOpen();
        if (r.data.budget !== undefined) budget.checkLimit(r.data.budget);
        if (r.data.agent) checkAgentUpdate(p, r.data.agent.tools);
      },
    },
  );

  setHandler(endSignal, (raw) => {
    if (run.endReason !== undefined) return;
    const reason = ReasonSchema.safeParse(raw ?? {});
    run.requestEnd((reason.success && reason.data.reason) || 'ended by user');
  });

  setHandler(eventsQuery, (raw) => {
    const parsedArgs = EventsQueryArgsSchema.safeParse(raw ?? {});
    // A readable refusal (see READABLE_FAILURE_TYPES): a query's failure reaches a client as its message alone.
    if (!parsedArgs.success)
      throw ApplicationFailure.nonRetryable(
        formatRefusal('invalid events query', parsedArgs.error),
        Failure.Session.InvalidQuery,
      );
    return run.eventsPage(parsedArgs.data);
  });

  setHandler(handoverQuery, () => ({
    agent: run.nextAgent ?? agent,
    carry: p.carry(run.state === 'running' || run.state === 'rescheduling' ? { round: run.currentRound } : undefined),
    firstSeq: run.baseSeq,
  }));

  setHandler(statusQuery, () => ({
    state: visibleState(p),
    lastSeq: run.nextSeq() - 1,
    firstSeq: run.baseSeq,
    run: run.run,
    sandboxes: slots.status(),
    usage: { ...run.usage },
    subagents: subagents.status(),
    pending: gate.pending(),
    ...(budget.tracking ? { listCost: budget.status() } : {}),
    ...(p.outcomes.status() ? { outcomes: p.outcomes.status() } : {}),
  }));
}
