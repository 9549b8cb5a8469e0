// Outcomes (`user.define_outcome`) worked toward as a loop. The outcome's description goes to the agent as its task;
// each time the agent's turn ends, a grader (the gradeOutcome activity, a model call of its own) judges the work
// against the rubric. `satisfied` ends the outcome; `needs_revision` gives the agent the grader's explanation and
// another turn, up to `maxIterations` evaluations, after which one last turn acknowledges it
// (`max_iterations_reached`). An interrupt ends it `interrupted`; a turn that fails, the budget, or a grader that
// fails past its attempts end it `failed`, and the session goes idle as after any turn. One outcome is worked on at
// a time. The state is carried from run to run, and the grader's result is in history, so a crash grades nothing twice.
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  isCancellation,
  patched,
  setHandler,
} from '@temporalio/workflow';
import type { Agent } from '../session/agent';
import { defineOutcomeUpdate, OutcomeDefinitionSchema, type OutcomeStatus } from '../session/contract';
import type { SessionEvent, Usage } from '../session/events';
import { Failure } from '../session/failure-types';
import { formatIssues } from '../session/agent';
import {
  MAX_OUTCOMES,
  ONGOING_EVERY_MS,
  isTerminal,
  lastIterationText,
  revisionText,
  taskText,
  type EvaluationResult,
  type OutcomeDefinition,
  type OutcomeState,
} from '../session/outcome-grading';
import { turnEnd } from '../session/turn-end';
import type { SessionActivities } from './activity-options';
import type { Budget } from './budget';
import { failureMessage } from './failures';
import type { SessionRun, TurnEnd } from './session-run';

export interface OutcomeParts {
  agent: Agent;
  run: SessionRun;
  acts: Pick<SessionActivities, 'grader'>;
  budget: Budget;
  carried: readonly OutcomeState[] | undefined;
}

/** What one evaluation came to: the grader's verdict with its usage, or the grader's failure. */
type Graded =
  { verdict: 'satisfied' | 'needs_revision' | 'failed'; explanation: string; usage: Usage } | { failure: string };

export class Outcomes {
  private readonly list: OutcomeState[];

  constructor(private readonly p: OutcomeParts) {
    this.list = (p.carried ?? []).map((o) => ({ ...o }));
  }

  /** The outcome being worked on, if any: at most one is. */
  private get active(): OutcomeState | undefined {
    return this.list.find((o) => !isTerminal(o.result));
  }

  register(): void {
    setHandler(defineOutcomeUpdate, (raw) => this.define(OutcomeDefinitionSchema.parse(raw)), {
      validator: (raw) => {
        const r = OutcomeDefinitionSchema.safeParse(raw);
        if (!r.success)
          throw ApplicationFailure.nonRetryable(`invalid outcome: ${formatIssues(r.error)}`, Failure.Outcome.Invalid);
        this.p.run.assertOpen();
        if (this.p.run.parentRef)
          throw ApplicationFailure.nonRetryable(
            "a sub-agent's session works on its parent's task and takes no outcome",
            Failure.Outcome.Refused,
          );
        const active = this.active;
        if (active)
          throw ApplicationFailure.nonRetryable(
            `outcome ${active.outcomeId} is still being worked on (${active.result}); send user.interrupt to end it, or wait until it is over`,
            Failure.Outcome.Active,
          );
        if (this.list.some((o) => o.outcomeId === r.data.outcomeId))
          throw ApplicationFailure.nonRetryable(`outcome ${r.data.outcomeId} exists already`, Failure.Outcome.Invalid);
        if (this.list.length >= MAX_OUTCOMES)
          throw ApplicationFailure.nonRetryable(
            `a session takes at most ${MAX_OUTCOMES} outcomes`,
            Failure.Outcome.Refused,
          );
      },
    });
  }

  /** Records the outcome and gives the agent its task; the next turn starts work on it. */
  private define(d: OutcomeDefinition): { seq: number } {
    patched('outcomes');
    const { run } = this.p;
    const e = run.append({
      type: 'outcome_defined',
      outcomeId: d.outcomeId,
      description: d.description,
      rubric: d.rubric,
      ...(d.rubricFileId ? { rubricFileId: d.rubricFileId } : {}),
      maxIterations: d.maxIterations,
    });
    this.list.push({
      outcomeId: d.outcomeId,
      description: d.description,
      rubric: d.rubric,
      maxIterations: d.maxIterations,
      definedSeq: e.seq,
      iteration: 0,
      result: 'pending',
      explanation: null,
      completedAt: null,
    });
    run.acceptHarnessMessage(taskText(d.description));
    return { seq: e.seq };
  }

  /**
   * A run that did not take over from a live one (woken after its run died, or forked) gives up the outcome its
   * previous run was working on: `interrupted`, closing the evaluation that was open.
   */
  abandon(reason: string): void {
    const o = this.active;
    if (o) this.record(o, 'interrupted', reason, o.result === 'evaluating');
  }

  /** A turn starts: a pending outcome is being worked on from now. */
  turnStarts(): void {
    const o = this.active;
    if (o?.result === 'pending') o.result = 'running';
  }

  /**
   * The turn that began at seq `from` is over: with an outcome being worked on, grade the work (a turn that ended
   * on its own), or end the outcome (a turn cut, failed or stopped at the budget). A turn that hands over is graded
   * by the run that finishes it; one followed by input it has not seen is graded after the turn that answers it.
   */
  async afterTurn(from: number, end: TurnEnd): Promise<void> {
    const o = this.active;
    if (!o || end.kind === 'handover' || !patched('outcomes')) return;
    const { run } = this.p;
    // Defined during this turn (while it waited on an approval, say): the turn's later model calls read the task,
    // so its end is graded; unless the task is still unread, and the next turn starts on it.
    if (o.result === 'pending') {
      if (run.hasInput() && run.endReason === undefined) return;
      o.result = 'running';
    }
    if (run.endReason !== undefined) return this.record(o, 'interrupted', 'the session ended', false);
    let last: SessionEvent | undefined;
    for (let i = run.events.length - 1; i >= 0 && run.events[i].seq >= from; i--)
      if (turnEnd(run.events[i]) !== undefined) {
        last = run.events[i];
        break;
      }
    switch (last && turnEnd(last)) {
      case 'interrupted':
        return this.record(o, 'interrupted', 'interrupted while the agent worked', false);
      case 'retries_exhausted':
        return this.record(
          o,
          'failed',
          `the agent's turn failed: ${last?.type === 'error' ? last.message : 'an error'}`,
          false,
        );
      case 'budget_reached':
        return this.record(o, 'failed', "the session's budget was reached before the work was done", false);
      default:
        // The turn ended on its own (end_turn, or a reply that named no tool to call).
        if (run.hasInput()) return;
        return this.evaluate(o);
    }
  }

  /** One evaluation of `o`, in a scope an interrupt or the end cancels as it cancels a turn. */
  private async evaluate(o: OutcomeState): Promise<void> {
    const { run, budget } = this.p;
    // The grader's call is a model call: at or over the budget, it is not made.
    if (budget.reached()) {
      run.append(budget.reachedEvent());
      return this.record(o, 'failed', "the session's budget was reached before the evaluation", false);
    }
    o.result = 'evaluating';
    const start = run.append({ type: 'outcome_evaluation_started', outcomeId: o.outcomeId, iteration: o.iteration });
    const turn = run.beginTurn();
    let graded: Graded;
    try {
      graded = await turn.scope.run(() => this.grade(o, start.seq - 1));
    } catch (err) {
      if (!isCancellation(err)) throw err;
      this.record(
        o,
        'interrupted',
        run.endReason !== undefined ? 'the session ended during the evaluation' : 'interrupted during the evaluation',
        true,
      );
      run.turnCut(turn);
      run.finishTurn({ kind: 'idle' });
      return;
    }
    if ('failure' in graded) this.record(o, 'failed', `the grader failed: ${graded.failure}`, true);
    else {
      const model = this.p.agent.model;
      run.addUsage(graded.usage);
      const cost = budget.addCall(model, graded.usage);
      const grader = { model, usage: graded.usage, ...(cost !== undefined ? { costNanoUsd: cost } : {}) };
      const iteration = o.iteration;
      if (graded.verdict !== 'needs_revision') this.record(o, graded.verdict, graded.explanation, true, grader);
      else if (iteration + 1 >= o.maxIterations) {
        this.record(o, 'max_iterations_reached', graded.explanation, true, grader);
        run.acceptHarnessMessage(lastIterationText(o.maxIterations, graded.explanation));
      } else {
        this.record(o, 'needs_revision', graded.explanation, true, grader);
        run.acceptHarnessMessage(revisionText(iteration, graded.explanation));
      }
    }
    run.finishTurn({ kind: 'idle' });
  }

  /** The grader's call through seq `throughSeq`, with a heartbeat event while it runs; its failure past its attempts. */
  private async grade(o: OutcomeState, throughSeq: number): Promise<Graded> {
    const { run, agent, acts } = this.p;
    const call = acts.grader.gradeOutcome.executeWithOptions(
      { summary: `grade outcome ${o.outcomeId} (evaluation ${o.iteration + 1})` },
      [
        {
          sessionId: run.sessionId,
          fromSeq: o.definedSeq,
          throughSeq,
          model: agent.model,
          outcome: { description: o.description, rubric: o.rubric ?? '' },
          streamIdleMs: agent.limits.modelStreamIdleMs,
        },
      ],
    );
    let settled = false;
    void call.then(
      () => (settled = true),
      () => (settled = true),
    );
    while (!(await condition(() => settled, ONGOING_EVERY_MS)))
      run.append({ type: 'outcome_evaluation_ongoing', outcomeId: o.outcomeId, iteration: o.iteration });
    try {
      return await call;
    } catch (err) {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      return { failure: failureMessage(err) };
    }
  }

  /** Appends the result of `o`'s current iteration and moves its state on. */
  private record(
    o: OutcomeState,
    result: EvaluationResult,
    explanation: string,
    evaluated: boolean,
    grader?: { model: string; usage: Usage; costNanoUsd?: number },
  ): void {
    const e = this.p.run.append({
      type: 'outcome_evaluated',
      outcomeId: o.outcomeId,
      iteration: o.iteration,
      result,
      explanation,
      evaluated,
      ...(grader ?? {}),
    });
    o.explanation = explanation;
    if (result === 'needs_revision') {
      o.iteration++;
      o.result = 'running';
      return;
    }
    o.result = result;
    o.completedAt = e.time;
    delete o.rubric;
  }

  /** Every outcome, as the status query reports them; undefined when the session has none. */
  status(): OutcomeStatus[] | undefined {
    if (this.list.length === 0) return undefined;
    return this.list.map(({ rubric: _r, definedSeq: _d, ...o }) => ({ ...o }));
  }

  /** What the next run carries; undefined when the session has none. */
  carry(): OutcomeState[] | undefined {
    return this.list.length > 0 ? this.list.map((o) => ({ ...o })) : undefined;
  }
}
