// Budget: the run's list cost and the session's budget. Every model reply adds its cost at the list prices the
// session was started with (so a replay never depends on a worker's price table); a sub-agent's cost is added
// when it reports. A model call is made only while the cost is below the budget: the spend exceeds the budget
// by at most one call's cost (one per sub-agent running at once, each of which checks its own spend added to its
// parent's at its start).
import { ApplicationFailure } from '@temporalio/workflow';
import type { Usage } from '../session/usage';
import {
  ListCostStateSchema,
  NANO_USD_PER_CENT,
  costNanoUsd,
  priceOf,
  type ListCostState,
  type Money,
} from '../session/list-cost';
import { Failure } from '../session/failure-types';

export class Budget {
  private readonly state: ListCostState | undefined;

  /** `state` undefined: the session counts no cost (started without prices, or recorded before budgets). */
  constructor(state: ListCostState | undefined) {
    this.state = state ? ListCostStateSchema.parse({ ...state, prices: { ...state.prices } }) : undefined;
  }

  /** Whether the session counts its list cost. */
  get tracking(): boolean {
    return this.state !== undefined;
  }

  get limit(): Money | undefined {
    return this.state?.budget;
  }

  /** Whether the budget stops model calls now: the cost has reached it, or a model with no price was called. */
  reached(): boolean {
    const s = this.state;
    if (!s?.budget) return false;
    return s.unpriced === true || s.costNanoUsd >= s.budget.amount * NANO_USD_PER_CENT;
  }

  /** What the log records when a turn stops at the budget. */
  reachedEvent() {
    const s = this.state!;
    return {
      type: 'budget_reached' as const,
      costNanoUsd: s.costNanoUsd,
      budget: s.budget!,
      ...(s.unpriced ? { unpriced: true } : {}),
    };
  }

  /** Adds a model reply's cost; returns it in nano-USD, or undefined when no cost is counted or `model` has no price. */
  addCall(model: string, usage: Usage): number | undefined {
    const s = this.state;
    if (!s) return undefined;
    const price = priceOf(s.prices, model);
    if (!price) {
      s.unpriced = true;
      return undefined;
    }
    const cost = costNanoUsd(usage, price);
    s.costNanoUsd += cost;
    return cost;
  }

  /** Adds what a sub-agent reported it spent. */
  addChild(cost: number | undefined): void {
    if (this.state && cost !== undefined) this.state.costNanoUsd += cost;
  }

  /** Refuses a budget at or below what is spent, or any budget when no cost is counted. */
  checkLimit(budget: Money | null): void {
    if (budget === null) return;
    if (!this.state)
      throw ApplicationFailure.nonRetryable(
        'this session counts no list cost (it was started without prices), so it cannot take a budget',
        Failure.Session.BudgetUntracked,
      );
    if (budget.amount * NANO_USD_PER_CENT <= this.state.costNanoUsd)
      throw ApplicationFailure.nonRetryable(
        `budget ${budget.amount} is at or below the list cost already spent (${this.state.costNanoUsd} nano-USD)`,
        Failure.Session.BudgetNotRaised,
      );
  }

  /** Sets the budget, or removes it (null). */
  setLimit(budget: Money | null): void {
    if (!this.state) return;
    if (budget === null) delete this.state.budget;
    else this.state.budget = { ...budget };
  }

  /** A sub-agent's start: the same prices and budget, and this session's spend so far as its base. */
  forChild(): ListCostState | undefined {
    const s = this.state;
    if (!s) return undefined;
    return {
      prices: { ...s.prices },
      ...(s.budget ? { budget: { ...s.budget } } : {}),
      costNanoUsd: s.costNanoUsd,
      baseNanoUsd: s.costNanoUsd,
    };
  }

  /** What this session spent itself and through its children: its cost less the parent's base. */
  ownCost(): number | undefined {
    return this.state ? this.state.costNanoUsd - this.state.baseNanoUsd : undefined;
  }

  /** What the next run carries. */
  carry(): ListCostState | undefined {
    const s = this.state;
    return s ? { ...s, prices: { ...s.prices }, ...(s.budget ? { budget: { ...s.budget } } : {}) } : undefined;
  }

  /** The status query's view. */
  status(): { costNanoUsd: number; budget?: Money; reached: boolean } | undefined {
    const s = this.state;
    if (!s) return undefined;
    return {
      costNanoUsd: s.costNanoUsd - s.baseNanoUsd,
      ...(s.budget ? { budget: { ...s.budget } } : {}),
      reached: this.reached(),
    };
  }
}
