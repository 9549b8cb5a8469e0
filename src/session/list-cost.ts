// List prices and a session's list cost: the price table `agents status` prices usage with, the money a budget is
// set in, and what the session workflow carries to count its spend against a budget. Safe for workflows.
//
// Cost is counted in whole billionths of a US dollar (nano-USD), so a sum of many calls is exact integer
// arithmetic and a budget comparison never turns on float rounding; a budget of N cents is N * 10^7 nano-USD.
import { z } from 'zod';
import type { Usage } from './usage';
import { shared } from './shared';

/**
 * US dollars per million tokens. Cache prices default to Anthropic's documented multipliers of the input price:
 * reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x.
 */
export const PriceSchema = shared('list-cost.PriceSchema', () =>
  z
    .object({
      input: z.number().nonnegative(),
      output: z.number().nonnegative(),
      cacheRead: z.number().nonnegative().optional(),
      cacheWrite: z.number().nonnegative().optional(),
      cacheWrite1h: z.number().nonnegative().optional(),
    })
    .strict(),
);
export type Price = z.infer<typeof PriceSchema>;
export const PriceTableSchema = shared('list-cost.PriceTableSchema', () => z.record(z.string().min(1), PriceSchema));
export type PriceTable = z.infer<typeof PriceTableSchema>;

/** List prices of Anthropic's models; a dated model id (`claude-sonnet-4-5-20250929`) takes its model's price. */
export const DEFAULT_PRICES: PriceTable = {
  'claude-opus-4-5': { input: 5, output: 25 },
  'claude-opus-4-1': { input: 15, output: 75 },
  'claude-opus-4': { input: 15, output: 75 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-sonnet-4': { input: 3, output: 15 },
  'claude-3-7-sonnet': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-3-5-haiku': { input: 0.8, output: 4 },
};

/** The currencies prices are in, and so the only ones a budget can be set in. */
export const PRICED_CURRENCIES = ['USD'] as const;
export type Currency = (typeof PRICED_CURRENCIES)[number];

/** The price of `model`: an exact entry, else the entry it is a dated or `-latest` version of. */
export function priceOf(table: PriceTable, model: string): Price | undefined {
  if (Object.hasOwn(table, model)) return table[model];
  const base = /^(.+)-(\d{8}|latest)$/.exec(model)?.[1];
  return base !== undefined && Object.hasOwn(table, base) ? table[base] : undefined;
}

/** Cost in US dollars of `usage` at `price`; cache writes with a 1-hour TTL at the 1-hour write price. */
export function costOf(usage: Usage, price: Price): number {
  const perToken = (perMillion: number) => perMillion / 1_000_000;
  const oneHour = Math.min(usage.cacheCreation1hInputTokens ?? 0, usage.cacheCreationInputTokens);
  return (
    usage.inputTokens * perToken(price.input) +
    usage.outputTokens * perToken(price.output) +
    usage.cacheReadInputTokens * perToken(price.cacheRead ?? price.input * 0.1) +
    (usage.cacheCreationInputTokens - oneHour) * perToken(price.cacheWrite ?? price.input * 1.25) +
    oneHour * perToken(price.cacheWrite1h ?? price.input * 2)
  );
}

/** Nano-USD in one US cent. */
export const NANO_USD_PER_CENT = 10_000_000;

/** Cost in nano-USD of `usage` at `price`, rounded to a whole nano-USD. */
export function costNanoUsd(usage: Usage, price: Price): number {
  return Math.round(costOf(usage, price) * 1e9);
}

/** A cost in nano-USD as the API's minor units (cents), rounded to the nearest cent. */
export const centsOf = (nanoUsd: number): number => Math.round(nanoUsd / NANO_USD_PER_CENT);

/** The largest budget in cents: its nano-USD stay exact integers. */
export const MAX_BUDGET_CENTS = 100_000_000;

/** An amount of money in minor units (cents), as the API's `BetaMonetaryAmount` holds it. */
export const MoneySchema = shared('list-cost.MoneySchema', () =>
  z
    .object({
      amount: z.number().int().min(1).max(MAX_BUDGET_CENTS),
      currency: z.enum(PRICED_CURRENCIES),
    })
    .strict(),
);
export type Money = z.infer<typeof MoneySchema>;

/**
 * What a session workflow counts its list cost with, from its input or the run before it: the prices of the
 * models it can run, its budget, and what it has spent. A sub-agent starts with its parent's spend as `baseNanoUsd`
 * (in `costNanoUsd` too), so it checks the session's budget and reports only what it spent itself.
 */
export const ListCostStateSchema = shared('list-cost.ListCostStateSchema', () =>
  z
    .object({
      prices: PriceTableSchema,
      /** Absent: no budget (never set, or removed); the cost is still counted. */
      budget: MoneySchema.optional(),
      costNanoUsd: z.number().int().nonnegative().default(0),
      baseNanoUsd: z.number().int().nonnegative().default(0),
      /** A model with no price was called: its cost is unknown, so a budget counts as reached. */
      unpriced: z.boolean().optional(),
    })
    .strict(),
);
export type ListCostState = z.infer<typeof ListCostStateSchema>;
