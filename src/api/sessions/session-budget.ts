// A session's budget on the API: the `budget` field of create and update, the rules an update is held to, and the
// prices a session's workflow counts its list cost with (the models it can run, from the API's price table).
import { z } from 'zod';
import type { Agent } from '../../session/agent';
import {
  DEFAULT_PRICES,
  MAX_BUDGET_CENTS,
  NANO_USD_PER_CENT,
  PRICED_CURRENCIES,
  centsOf,
  priceOf,
  type ListCostState,
  type Money,
  type PriceTable,
} from '../../session/list-cost';
import type { SessionStatus } from '../../session/contract';
import type { SessionRow } from '../../storage/repos/sessions-repo';
import { badRequest } from '../api-error';

/**
 * A refused budget, its SDK reason (`budget_create_only`, `budget_not_raised`, `model_not_budgetable`) leading the
 * message: the SDK's `error.details.error_code` is a closed set these reasons are not in.
 */
export const budgetRefused = (reason: string, message: string) => badRequest(`budget: ${reason}: ${message}`);

/** `BetaManagedAgentsBudgetLimit` as a request sends it; the amount is whole minor units, as a string. */
export const BudgetLimitSchema = z.strictObject({
  type: z.literal('limit'),
  max_list_cost: z.strictObject({
    amount: z
      .string()
      .regex(/^(0|[1-9][0-9]*)$/, 'amount is whole minor units as a decimal string with no leading zeros, e.g. "500"')
      .refine((a) => Number(a) >= 1, 'amount must be at least 1 (one cent)')
      .refine((a) => a.length <= 10 && Number(a) <= MAX_BUDGET_CENTS, `amount must be at most ${MAX_BUDGET_CENTS}`),
    currency: z.string().refine((c) => (PRICED_CURRENCIES as readonly string[]).includes(c), {
      error: (i) =>
        `${String(i.input).slice(0, 20)} is not a currency the model prices are in; budgets are in ${PRICED_CURRENCIES.join(', ')}`,
    }),
  }),
});
export type BudgetLimit = z.infer<typeof BudgetLimitSchema>;

/** The response's `budget` shape. */
export const BudgetResponseSchema = z.object({
  type: z.literal('limit'),
  max_list_cost: z.object({ amount: z.string(), currency: z.enum(PRICED_CURRENCIES) }),
});
export type BudgetResponse = z.infer<typeof BudgetResponseSchema>;

export const moneyOf = (b: BudgetLimit): Money => ({
  amount: Number(b.max_list_cost.amount),
  currency: b.max_list_cost.currency as Money['currency'],
});

export const budgetOfMoney = (m: Money): BudgetResponse => ({
  type: 'limit',
  max_list_cost: { amount: String(m.amount), currency: m.currency },
});

/** The session's budget as responses show it. */
export function budgetOfRow(r: SessionRow): BudgetResponse | null {
  if (r.budget_amount === null || r.budget_currency === null) return null;
  return budgetOfMoney({ amount: r.budget_amount, currency: r.budget_currency as Money['currency'] });
}

/** `usage.list_cost` from the status query: the session's list cost, in cents. */
export function listCostOf(status: SessionStatus['listCost']): { amount: string; currency: 'USD' } | undefined {
  return status ? { amount: String(centsOf(status.costNanoUsd)), currency: 'USD' } : undefined;
}

/** Every model a session of `file` can run: its own and each sub-agent's. */
function modelsOf(file: Agent): string[] {
  return [...new Set([file.model, ...Object.values(file.subagents ?? {}).map((s) => s.model ?? file.model)])];
}

/**
 * The list cost a new session counts: the prices of every model it can run, and its budget. A budget needs every
 * model priced (`model_not_budgetable`); without one, a session with an unpriced model counts no cost.
 */
export function listCostFor(
  file: Agent,
  table: PriceTable | undefined,
  budget: BudgetLimit | undefined,
): ListCostState | undefined {
  const prices = table ?? DEFAULT_PRICES;
  const models = modelsOf(file);
  const unpriced = models.filter((m) => priceOf(prices, m) === undefined);
  if (unpriced.length > 0) {
    if (budget)
      throw budgetRefused(
        'model_not_budgetable',
        `model ${unpriced.join(', ')} has no list price, so a budget cannot measure it (MODEL_PRICES adds prices)`,
      );
    return undefined;
  }
  return {
    prices: Object.fromEntries(models.map((m) => [m, priceOf(prices, m)!])),
    ...(budget ? { budget: moneyOf(budget) } : {}),
    costNanoUsd: 0,
    baseNanoUsd: 0,
  };
}

/**
 * The rules of a budget update, against the row and the live status: no budget added to a session created without
 * one or whose budget was removed (`budget_create_only`), none at or below what is spent (`budget_not_raised`), none
 * on a session that counts no cost (`model_not_budgetable`). Removing is allowed whenever a budget is set.
 */
export function checkBudgetUpdate(
  row: SessionRow,
  budget: BudgetLimit | null,
  status: SessionStatus['listCost'] | 'ended',
): void {
  if (status === 'ended') throw badRequest(`budget: session ${row.id} has ended; its budget can no longer change`);
  if (budget === null) return;
  if (row.budget_amount === null)
    throw budgetRefused(
      'budget_create_only',
      row.budget_removed
        ? `session ${row.id}'s budget was removed, and a removed budget cannot be set again`
        : `session ${row.id} was created without a budget; a budget can only be set when a session is created`,
    );
  if (!status)
    throw budgetRefused('model_not_budgetable', `session ${row.id} counts no list cost, so a budget cannot measure it`);
  const amount = Number(budget.max_list_cost.amount);
  if (amount * NANO_USD_PER_CENT <= status.costNanoUsd)
    throw budgetRefused(
      'budget_not_raised',
      `${amount} is at or below the list cost the session has spent (${centsOf(status.costNanoUsd)} in minor units); raise it above that`,
    );
}
