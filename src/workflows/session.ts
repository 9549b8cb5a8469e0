// sessionWorkflow: one workflow per session. It owns the append-only event log and runs the decision loop.
//
// Reading order: parse the input, build the run's parts, open the run (the start kinds), register the handlers,
// then the loop: `SessionRun.next()` says what comes next (wait for input, a turn, a handover, the end). The
// parts live in their own files: SessionRun (the run's state and its transitions), Turn (model calls and tool
// rounds), ModelCaller, ToolDispatch, the tool gate (approvals, client tools), Sealing (the archive, the
// handover and the end), SandboxSlots, McpTools, Handoff and Subagents; every handler is in session-handlers.ts.
import { ApplicationFailure, CancellationScope, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import { boundTools, buildToolSpecs } from '../tools/offer';
import { AgentSchema, formatIssues, type Agent } from '../session/agent';
import {
  SessionInputSchema,
  StatusWebhooksSchema,
  statusWebhooksSignal,
  type SessionInput,
  type SessionResult,
  type SessionWorkflow,
} from '../session/contract';
import { Failure } from '../session/failure-types';
import { sessionActivities } from './activity-options';
import { ToolGate, carriedRound } from './approvals';
import { Budget } from './budget';
import { judgeCall } from './judge-call';
import { Handoff } from './handoff';
import { McpTools } from './mcp-tools';
import { ModelCaller } from './model-caller';
import { Outcomes } from './outcome-loop';
import { openRun } from './run-start';
import { SandboxSlots } from './sandbox-slots';
import { Sealing } from './sealing';
import { registerSessionHandlers, visibleState } from './session-handlers';
import { SessionRun } from './session-run';
import { StatusWebhooks } from './status-webhooks';
import { Subagents } from './subagents';
import { ThreadSide, Threads } from './threads';
import { ToolDispatch } from './tool-dispatch';
import { Turn } from './turn';
import { trackVisibility } from './visibility';
import { WebTools } from './web-tools';

/**
 * The session runs in a scope a cancellation request cannot cancel: a request (as when a parent session
 * cancels its child) ends the session like the `end` signal, so it still cleans up and seals its log.
 */
export const sessionWorkflow: SessionWorkflow = (rawInput) =>
  CancellationScope.nonCancellable(() => runSession(rawInput));

async function runSession(rawInput: SessionInput): Promise<SessionResult> {
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid session input: ${formatIssues(parsed.error)}`,
      Failure.Session.InvalidInput,
    );
  const input = parsed.data;
  const agent: Agent = AgentSchema.parse(input.agent);
  const { continued: carried, start } = input;
  const sessionId = workflowInfo().workflowId;
  const acts = sessionActivities(agent.limits);
  // The list cost and budget: from the run before this one, else from the input. Histories recorded before
  // budgets carry neither, and ask no patch.
  const listCost = carried ? carried.listCost : input.listCost;
  const budget = new Budget(listCost !== undefined && patched('session-budget') ? listCost : undefined);

  // The run's parts. None of them issues a command while it is built.
  const run = new SessionRun(sessionId, agent.limits, carried, input.parent);
  const { parentRef } = run;
  const append = run.append.bind(run);
  const closed = () => run.closed();
  // A session thread works in its coordinator's sandboxes and stays open between the coordinator's messages.
  const thread = carried ? carried.thread : input.thread;
  const threadSide =
    thread && parentRef && patched('session-threads')
      ? new ThreadSide(thread, run, parentRef, budget, carried)
      : undefined;
  if (threadSide) run.staysOpen = true;
  const slots = threadSide
    ? new SandboxSlots(threadSide.identity.owner, agent, acts, append, carried, true)
    : new SandboxSlots(sessionId, agent, acts, append, carried);
  slots.rescheduling = (wait) => run.rescheduled(wait);
  const tools = boundTools(agent);
  const toolSpecs = buildToolSpecs(agent);
  const mcpTools = new McpTools(sessionId, agent, acts.mcp, append, toolSpecs, tools, carried?.mcpTools);
  const handoff = new Handoff({ sessionId, append, slots, closed });
  const threads = agent.roster.length
    ? // A fork starts without threads: those in its source's carry belong to the source.
      new Threads({
        sessionId,
        agent,
        tools,
        append,
        usage: run.usage,
        budget,
        carried: start === 'forked' ? undefined : carried,
        closed,
      })
    : undefined;
  const subagents = new Subagents({
    sessionId,
    agent,
    append,
    usage: run.usage,
    budget,
    handoff,
    carried,
    closed,
    threads,
  });
  const webTools = new WebTools(sessionId, agent);
  const { archive } = acts;
  const dispatch = new ToolDispatch({ run, tools, slots, mcpTools, webTools, subagents, handoff, archive });
  const gate = new ToolGate({
    agent,
    run,
    runTool: (use) => dispatch.run(use),
    carried: start === 'continued' ? carriedRound(carried, tools) : undefined,
    awaitExternal: (id) => subagents.awaitResult(id, () => run.shouldHandOver()),
    // The judge's model call counts toward the session's list cost like any other.
    judge: async (use) => {
      const judged = await judgeCall(acts, agent, run, use);
      if (judged.usage) budget.addCall(judged.model, judged.usage);
      return judged;
    },
    ...(threadSide ? { crossPost: (action) => threadSide.crossPost(action) } : {}),
  });
  const outcomes = new Outcomes({ agent, run, acts, budget, carried: carried?.outcomes });
  const sealing = new Sealing({
    agent,
    run,
    archive,
    slots,
    mcpTools,
    gate,
    handoff,
    subagents,
    budget,
    outcomes,
    threads,
    threadSide,
    // Built below, once the run has opened; asked only when the run hands over.
    statusWebhooks: () => webhooks?.carry(),
  });

  // Before any handler is registered: input that arrived with the start is delivered when its handler is set.
  await openRun({ input, agent, run, handoff, budget, fromThread: threadSide?.identity.primaryId });
  if (threadSide && start === 'new') threadSide.opened();
  threadSide?.register();
  // Histories recorded before the search attributes existed carry no upserts.
  if (patched('search-attributes')) {
    const firstUserText = () => (start === 'new' ? run.events.find((e) => e.type === 'user_message')?.text : undefined);
    trackVisibility(agent, () => visibleState({ run, gate }), firstUserText);
  }
  // An API session (`sesn_` ids; not a sub-agent's, not the command line's) reports its status changes to the webhook
  // outbox. A new session starts idle as far as webhooks go; a later run from where its last one was.
  const webhooks =
    sessionId.startsWith('sesn_') && !parentRef && patched('webhook-events')
      ? new StatusWebhooks(
          sessionId,
          () => visibleState({ run, gate }),
          () => run.nextSeq() - 1,
          () => budget.reached(),
          start === 'new' ? 'waiting_for_user' : visibleState({ run, gate }),
          carried ? carried.statusWebhooks : input.statusWebhooks,
        )
      : undefined;
  webhooks?.start();
  setHandler(statusWebhooksSignal, (word) => {
    const parsed = StatusWebhooksSchema.safeParse(word);
    if (parsed.success) webhooks?.tell(parsed.data);
  });
  registerSessionHandlers({
    agent,
    run,
    slots,
    gate,
    handoff,
    subagents,
    budget,
    outcomes,
    ...(threads ? { threadsWaiting: () => threads.waitingOnClient() } : {}),
    carry: (inTurn) => sealing.carry(inTurn),
  });
  // Built after the handlers: ModelCaller asks patched('model-local-activity') as it is built, in history's order.
  const model = new ModelCaller(agent, acts, run, toolSpecs);
  const turn = new Turn({ agent, run, tools, mcpTools, model, gate, subagents, sealing, budget });

  if (agent.provision === 'eager' && (start === 'new' || start === 'forked')) await slots.provisionAll();
  // A woken run gives up on the children its dead run waited for; their calls may have begun in an earlier run.
  if (start === 'woken') {
    const closedAlready = new Set(carried?.openToolUses ?? []);
    run.closeToolUses(
      (await subagents.cancelRunning()).filter((id) => !closedAlready.has(id)),
      'the run stopped before this tool finished',
    );
    // A child whose run stopped mid-task does not pick the task up again: it ends and reports an error.
    if (parentRef) run.endNow('its run stopped before it answered');
  }
  if (start === 'woken') outcomes.abandon('the run stopped before the outcome was reached');
  if (start === 'forked') outcomes.abandon('the session was forked before the outcome was reached');

  for (;;) {
    const step = run.next();
    switch (step.kind) {
      case 'wait':
        // An update of the agent's tools ends the wait too: the run hands over to one built with them.
        await slots.idleUntil(() => run.hasInput() || run.agentChangePending());
        break;
      case 'turn': {
        const from = run.nextSeq();
        outcomes.turnStarts();
        await outcomes.afterTurn(from, await turn.run(step.round));
        await threadSide?.afterTurn();
        break;
      }
      case 'handover':
        await webhooks?.flush();
        await sealing.handOver(step.inTurn);
        break;
      case 'end':
        await webhooks?.end();
        return sealing.end(step.reason);
    }
  }
}
