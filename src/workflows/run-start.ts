// How a run opens, by the kind of start: a new session, a fork, a woken run or a continued one. Runs before any
// handler is registered, so input that arrived with the start is delivered only once its handler is set.
import type { Agent } from '../session/agent';
import type { Budget } from './budget';
import type { SessionInput } from '../session/contract';
import type { Handoff } from './handoff';
import type { SessionRun } from './session-run';

export interface RunOpening {
  input: SessionInput;
  agent: Agent;
  run: SessionRun;
  handoff: Handoff;
  budget: Budget;
  /** A session thread's first message is the coordinator's (its primary thread's id). */
  fromThread?: string;
}

/** Appends what the start kind begins with (and the message the start carried), receiving any lent sandboxes. */
export async function openRun({ input, agent, run, handoff, budget, fromThread }: RunOpening): Promise<void> {
  const { continued: carried, start } = input;
  const { parentRef } = run;
  const append = run.append.bind(run);
  switch (start) {
    case 'new':
      append({
        type: 'session_started',
        agent: agent as unknown as Record<string, unknown>,
        ...(parentRef ? { parent: parentRef } : {}),
        ...(budget.limit && !parentRef ? { budget: budget.limit } : {}),
      });
      for (const s of input.lent ?? [])
        await handoff.receive(parentRef?.sessionId ?? 'unknown', s, parentRef?.sessionId);
      break;
    case 'forked':
      append({
        type: 'session_started',
        agent: agent as unknown as Record<string, unknown>,
        forkedFrom: input.forkedFrom,
      });
      run.closeToolUses(carried?.openToolUses ?? [], 'the session was forked before this tool finished');
      break;
    case 'woken':
      append({
        type: 'error',
        kind: 'session',
        message: `run ${run.run - 1} of this session stopped without handing over; it was woken as run ${run.run}`,
      });
      run.closeToolUses(carried?.openToolUses ?? [], 'the run stopped before this tool finished');
      break;
    case 'continued':
      break;
  }
  if (input.message) run.acceptUserMessage(input.message, fromThread);
}
