// A turn: model calls and tool rounds, from a user message until the model stops calling tools. It runs in a
// scope that an interrupt or the end cancels; it ends idle, or hands over between two rounds.
import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { ModelReply } from '../model/model-client';
import type { Agent, BoundTool } from '../session/agent';
import { EMPTY_REPLY_NUDGE } from '../session/harness';
import type { ToolGate } from './approvals';
import type { Budget } from './budget';
import { failureMessage } from './failures';
import { shouldReprompt } from './harness-rules';
import type { McpTools } from './mcp-tools';
import type { ModelCaller } from './model-caller';
import type { Sealing } from './sealing';
import type { SessionRun, TurnEnd } from './session-run';
import type { Subagents } from './subagents';
import type { ToolUse } from './tool-dispatch';

/** Tool kinds whose calls start or message a child session: spawn_agent, and a coordinator's thread tools. */
const startsChild = (kind: string | undefined) =>
  kind === 'spawn_agent' || kind === 'delegate' || kind === 'message_thread';

export interface TurnParts {
  agent: Agent;
  run: SessionRun;
  tools: ReadonlyMap<string, BoundTool>;
  mcpTools: McpTools;
  model: ModelCaller;
  gate: ToolGate;
  subagents: Subagents;
  sealing: Sealing;
  budget: Budget;
}

export class Turn {
  constructor(private readonly p: TurnParts) {}

  /** Runs a turn from `startRound`; a cut turn closes its open calls and records the interrupt. Says how it ended. */
  async run(startRound: number): Promise<TurnEnd> {
    const { run, sealing } = this.p;
    const turn = run.beginTurn();
    let end: TurnEnd = { kind: 'idle' };
    try {
      end = await turn.scope.run(() => this.rounds(startRound));
    } catch (err) {
      if (!isCancellation(err)) throw err;
      // Children of the cut turn are cancelled; their calls may have begun in an earlier run.
      await sealing.closeOpenCalls(
        run.endReason !== undefined ? 'session ended before the tool finished' : 'interrupted before the tool finished',
      );
      run.turnCut(turn);
    }
    run.finishTurn(end);
    return end;
  }

  /** The turn's rounds from `startRound`, until the model stops calling tools or the run should hand over first. */
  private async rounds(startRound: number): Promise<TurnEnd> {
    const { agent, run, gate, mcpTools, model, subagents, tools, budget } = this.p;
    const limits = agent.limits;
    // A run that took over in the middle of a round finishes its calls first.
    if ((await gate.runRound()) === 'handover') return { kind: 'handover', round: startRound };
    let reprompts = 0;
    for (let round = startRound; ; round++) {
      run.enterRound(round);
      if (round >= limits.maxToolRoundsPerTurn) {
        run.append({
          type: 'error',
          kind: 'limit',
          message: `stopped after ${round} tool rounds in one turn (limits.maxToolRoundsPerTurn)`,
        });
        return { kind: 'idle' };
      }
      // Between two model calls of a long tool loop is a safe place to hand over.
      if (round > startRound && run.shouldHandOver()) return { kind: 'handover', round };
      run.markInputHandled();
      // At or over the budget, the call is not made: the turn stops, and so does every turn until it is raised.
      if (budget.reached()) {
        run.append(budget.reachedEvent());
        return { kind: 'idle' };
      }
      await mcpTools.ensureListed();
      let reply: ModelReply;
      let throughSeq: number;
      try {
        ({ reply, throughSeq } = await model.nextReply());
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (err instanceof ActivityFailure) {
          run.append({ type: 'error', kind: 'model', message: failureMessage(err) });
          return { kind: 'idle' };
        }
        throw err;
      }
      run.addUsage(reply.usage);
      const cost = budget.addCall(agent.model, reply.usage);
      run.append({
        type: 'assistant_message',
        content: reply.content,
        stopReason: reply.stopReason,
        usage: reply.usage,
        throughSeq,
        ...(cost !== undefined ? { costNanoUsd: cost } : {}),
      });

      const toolUses = reply.content.filter((b) => b.type === 'tool_use') as unknown as ToolUse[];
      if (toolUses.length === 0) {
        if (!shouldReprompt(agent.harness, reply.content, reprompts)) return { kind: 'idle' };
        reprompts++;
        run.append({ type: 'user_message', text: EMPTY_REPLY_NUDGE, source: 'harness' });
        continue;
      }
      for (const use of toolUses) run.append({ type: 'tool_use', id: use.id, name: use.name, input: use.input });
      // The round's children start together and run in parallel; one that needs approval starts once approved.
      await subagents.startAll(toolUses.filter((u) => startsChild(tools.get(u.name)?.kind) && !gate.asks(u)));
      gate.startRound(toolUses);
      if ((await gate.runRound()) === 'handover') return { kind: 'handover', round: round + 1 };
    }
  }
}
