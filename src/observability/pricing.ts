// The per-model price table `agents status` turns token usage into cost with; MODEL_PRICES adds or overrides models.
// The table and its arithmetic live in src/session/list-cost.ts, which the session workflow counts its budget with.
import {
  DEFAULT_PRICES,
  PriceSchema,
  PriceTableSchema,
  costOf,
  priceOf,
  type Price,
  type PriceTable,
} from '../session/list-cost';

export { DEFAULT_PRICES, PriceSchema, PriceTableSchema, costOf, priceOf, type Price, type PriceTable };

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
