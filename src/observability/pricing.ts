// The per-model price table `agents status` turns token usage into cost with; MODEL_PRICES adds or overrides models.
import { z } from 'zod';
import type { Usage } from '../session/events';

/** US dollars per million tokens. Cache prices default to Anthropic's multipliers of the input price. */
export const PriceSchema = z
  .object({
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cacheRead: z.number().nonnegative().optional(),
    cacheWrite: z.number().nonnegative().optional(),
  })
  .strict();
export type Price = z.infer<typeof PriceSchema>;
export const PriceTableSchema = z.record(z.string().min(1), PriceSchema);
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

/** Parses MODEL_PRICES (JSON); returns a message naming what is wrong, or the table. */
export function parsePriceTable(json: string | undefined): { table: PriceTable } | { problem: string } {
  if (json === undefined) return { table: { ...DEFAULT_PRICES } };
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    return { problem: `must be JSON: ${(err as Error).message}` };
  }
  const parsed = PriceTableSchema.safeParse(raw);
  if (!parsed.success)
    return { problem: parsed.error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join(', ') };
  return { table: { ...DEFAULT_PRICES, ...parsed.data } };
}

/** The price of `model`: an exact entry, else the entry it is a dated or `-latest` version of. */
export function priceOf(table: PriceTable, model: string): Price | undefined {
  if (Object.hasOwn(table, model)) return table[model];
  const base = /^(.+)-(\d{8}|latest)$/.exec(model)?.[1];
  return base !== undefined && Object.hasOwn(table, base) ? table[base] : undefined;
}

/** Cost in US dollars of `usage` at `price`. */
export function costOf(usage: Usage, price: Price): number {
  const perToken = (perMillion: number) => perMillion / 1_000_000;
  return (
    usage.inputTokens * perToken(price.input) +
    usage.outputTokens * perToken(price.output) +
    usage.cacheReadInputTokens * perToken(price.cacheRead ?? price.input * 0.1) +
    usage.cacheCreationInputTokens * perToken(price.cacheWrite ?? price.input * 1.25)
  );
}
