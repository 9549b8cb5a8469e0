// Sealing and handover: the run's events sealed into the session archive, the Carry the next run starts from,
// the handover to it (continue-as-new), and the run's end. A run hands over only once every event is sealed.
import { CancellationScope, allHandlersFinished, condition, continueAsNew, patched } from '@temporalio/workflow';
import type { Agent } from '../session/agent';
import { openToolUses } from '../session/context';
import type { Carry, SessionResult, SessionWorkflow, StatusWebhooks } from '../session/contract';
import { eventsDigest } from '../session/digest';
import type { SessionActivities } from './activity-options';
import type { ToolGate } from './approvals';
import type { Budget } from './budget';
import { failureMessage } from './failures';
import type { Handoff } from './handoff';
import type { McpTools } from './mcp-tools';
import type { Outcomes } from './outcome-loop';
import type { SandboxSlots } from './sandbox-slots';
import type { SessionRun } from './session-run';
import { childAnswer, reportToParent, type Subagents } from './subagents';
import type { ThreadSide, Threads } from './threads';

export interface SealingParts {
  agent: Agent;
  run: SessionRun;
  archive: SessionActivities['archive'];
  slots: SandboxSlots;
  mcpTools: McpTools;
  gate: ToolGate;
  handoff: Handoff;
  subagents: Subagents;
  budget: Budget;
  /** The session's outcomes, which the next run carries on with. */
  outcomes: Pick<Outcomes, 'carry'>;
  /** A coordinator's threads, which end with it. */
  threads?: Threads;
  /** In a session thread: its side of the conversation with the coordinator. */
  threadSide?: ThreadSide;
  /** An API session: whether it reports its status changes, once the API has said. */
  statusWebhooks?: () => StatusWebhooks | undefined;
}

export class Sealing {
  constructor(private readonly p: SealingParts) {}

  /** Tool uses without a result: this run's, and those of a round an earlier run handed over in the middle of. */
  private unansweredToolUses(): string[] {
    return [...new Set([...this.p.gate.openIds(), ...openToolUses(this.p.run.events)])];
  }

  /** Closes every call of the round in progress, cancelling its running children first. */
  async closeOpenCalls(message: string): Promise<void> {
    const cut = await this.p.subagents.cancelRunning();
    this.p.run.closeToolUses([...new Set([...this.unansweredToolUses(), ...cut])], message);
    this.p.gate.clear();
  }

  /** What the next run starts from. */
  carry(inTurn?: { round: number }): Carry {
    const { run, gate, slots, mcpTools, subagents, budget } = this.p;
    const listCost = budget.carry();
    const outcomes = this.p.outcomes.carry();
    const statusWebhooks = this.p.statusWebhooks?.();
    return run.toCarry({
      inTurn: inTurn ? { ...inTurn, ...(gate.carry() ? { tools: gate.carry() } : {}) } : undefined,
      ...slots.carry(),
      // A new agent's MCP servers are listed afresh by the next run.
      ...(run.nextAgent ? {} : { mcpTools: mcpTools.carry() }),
      openToolUses: this.unansweredToolUses(),
      ...subagents.snapshot(),
      ...(listCost ? { listCost } : {}),
      ...(outcomes ? { outcomes } : {}),
      ...(statusWebhooks ? { statusWebhooks } : {}),
      ...(this.p.threadSide ? this.p.threadSide.carry() : {}),
    });
  }

  /** Seals every event of this run not sealed yet. A failure is logged as an event; the events stay in history. */
  async seal(): Promise<boolean> {
    const { run } = this.p;
    const through = run.nextSeq() - 1;
    if (through <= run.sealedThrough) return true;
    try {
      // The digest is of the events as this run holds them, which history commits with the seal's scheduling.
      const digest = eventsDigest(run.events.slice(run.sealedThrough + 1 - run.baseSeq, through + 1 - run.baseSeq));
      await this.p.archive.sealEvents({
        sessionId: run.sessionId,
        fromSeq: run.sealedThrough + 1,
        throughSeq: through,
        digest,
      });
      run.sealed(through);
      return true;
    } catch (err) {
      run.append({
        type: 'error',
        kind: 'archive',
        message: `could not seal events ${run.sealedThrough + 1} to ${through} into the session archive: ${failureMessage(err)}`,
      });
      return false;
    }
  }

  /**
   * Continues as new once every handler has finished and every event is sealed. Input that arrives meanwhile
   * is appended and sealed too; the server refuses the handover if more arrives after this task started, and
   * the replay that follows takes it in. Returns (without handing over) if the session is ending or sealing failed.
   */
  async handOver(inTurn?: { round: number }): Promise<void> {
    const { run } = this.p;
    const handover = run.beginHandover();
    try {
      for (;;) {
        await condition(allHandlersFinished);
        if (run.endReason !== undefined) return;
        if (inTurn && handover.interruptReason !== undefined) {
          await this.closeOpenCalls('interrupted before the tool finished');
          run.handoverInterrupted(handover.interruptReason);
          inTurn = undefined;
        }
        if (!(await this.seal())) {
          run.deferHandover();
          return;
        }
        if (run.sealedThrough === run.nextSeq() - 1 && allHandlersFinished() && run.endReason === undefined) break;
      }
    } finally {
      run.endHandover();
    }
    await continueAsNew<SessionWorkflow>({
      agent: run.nextAgent ?? this.p.agent,
      continued: this.carry(inTurn),
      start: 'continued',
    });
  }

  /** The run's end: open calls closed, lent sandboxes returned, sandboxes destroyed, the parent told, the log sealed. */
  async end(reason: string): Promise<SessionResult> {
    const { run, handoff, slots, budget, threads, threadSide } = this.p;
    const parentRef = threadSide ? undefined : run.parentRef;
    const answer = parentRef ? childAnswer(run.events, reason) : undefined;
    await threads?.endAll();
    // A session ending while a handover waited (on an approval, a client or a child) leaves that round's calls open.
    await this.closeOpenCalls('session ended before the tool finished');
    const returned = await handoff.returnLent();
    await CancellationScope.nonCancellable(() => slots.destroyAll());
    if (parentRef && answer) {
      const problem = await reportToParent(parentRef, {
        sessionId: run.sessionId,
        ...answer,
        usage: { ...run.usage },
        ...(budget.tracking ? { costNanoUsd: budget.ownCost() } : {}),
        returned,
      });
      if (problem)
        run.append({
          type: 'error',
          kind: 'subagent',
          message: `could not report to the parent session ${parentRef.sessionId}: ${problem}`,
        });
    }
    await threadSide?.onEnd(reason);
    run.ended(reason);
    await condition(allHandlersFinished);
    // Histories recorded before the archive existed end without sealing.
    if (patched('session-archive')) await CancellationScope.nonCancellable(() => this.seal());
    return { lastSeq: run.nextSeq() - 1, reason };
  }
}
