// The price table behind `agents status`: built-in prices, dated model ids, MODEL_PRICES overrides and refusals.
import { loadConfig } from '../src/config';
import { DEFAULT_PRICES, costOf, parsePriceTable, priceOf } from '../src/observability/pricing';
import { formatDuration, spendLine } from '../src/observability/session-stats';
import { centsOf, costNanoUsd } from '../src/session/list-cost';
import { formatEvent } from '../src/session/format';

const usage = {
  inputTokens: 1_000_000,
  outputTokens: 100_000,
  cacheReadInputTokens: 2_000_000,
  cacheCreationInputTokens: 400_000,
};

describe('model prices', () => {
  it('prices a dated or -latest model id as its model, and nothing else', () => {
    expect(priceOf(DEFAULT_PRICES, 'claude-sonnet-4-5-20250929')).toEqual(DEFAULT_PRICES['claude-sonnet-4-5']);
    expect(priceOf(DEFAULT_PRICES, 'claude-opus-4-1-20250805')).toEqual(DEFAULT_PRICES['claude-opus-4-1']);
    expect(priceOf(DEFAULT_PRICES, 'claude-haiku-4-5-latest')).toEqual(DEFAULT_PRICES['claude-haiku-4-5']);
    expect(priceOf(DEFAULT_PRICES, 'claude-sonnet-4-50')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICES, 'toString')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICES, 'some-other-model')).toBeUndefined();
  });

  it('charges cache reads at 0.1x and cache writes at 1.25x the input price unless given', () => {
    // 1 M input at $3, 0.1 M output at $15, 2 M cache reads at $0.30, 0.4 M cache writes at $3.75.
    expect(costOf(usage, { input: 3, output: 15 })).toBeCloseTo(3 + 1.5 + 0.6 + 1.5, 10);
    expect(costOf(usage, { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 })).toBeCloseTo(4.5, 10);
  });

  it('charges 1-hour cache writes at 2x the input price, and counts a cost in whole nano-USD', () => {
    const withHour = { ...usage, cacheCreation1hInputTokens: 100_000 };
    // 0.3 M 5-minute writes at $3.75 and 0.1 M 1-hour writes at $6.
    expect(costOf(withHour, { input: 3, output: 15 })).toBeCloseTo(3 + 1.5 + 0.6 + 1.125 + 0.6, 10);
    expect(costNanoUsd(withHour, { input: 3, output: 15 })).toBe(6_825_000_000);
    const one = { inputTokens: 1, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    expect(costNanoUsd(one, { input: 0.8, output: 4 })).toBe(800);
    expect(centsOf(36_000_000)).toBe(4);
    expect(centsOf(34_999_999)).toBe(3);
  });

  it('shows the list cost against the budget for `agents status`', () => {
    expect(spendLine({ costNanoUsd: 12_000_000, reached: false })).toBe('$0.0120 (no budget)');
    expect(spendLine({ costNanoUsd: 12_000_000, budget: { amount: 3, currency: 'USD' }, reached: false })).toBe(
      '$0.0120 of a $0.03 budget ($0.0180 left)',
    );
    expect(spendLine({ costNanoUsd: 36_000_000, budget: { amount: 3, currency: 'USD' }, reached: true })).toBe(
      '$0.0360 of a $0.03 budget (reached: no model call until it is raised or removed)',
    );
    const stop = { seq: 7, time: 't', type: 'budget_reached' as const, costNanoUsd: 36_000_000 };
    expect(formatEvent({ ...stop, budget: { amount: 3, currency: 'USD' } })).toBe(
      '#7 budget_reached: list cost $0.0360 of a $0.03 budget; no model call until it is raised',
    );
  });

  it('merges MODEL_PRICES over the built-in table and names what is wrong with a bad one', () => {
    const r = parsePriceTable('{"my-model":{"input":1,"output":2},"claude-sonnet-4-5":{"input":9,"output":9}}');
    if (!('table' in r)) throw new Error(r.problem);
    expect(r.table['my-model']).toEqual({ input: 1, output: 2 });
    expect(r.table['claude-sonnet-4-5']).toEqual({ input: 9, output: 9 });
    expect(r.table['claude-haiku-4-5']).toEqual(DEFAULT_PRICES['claude-haiku-4-5']);
    expect(() => loadConfig({ MODEL_PRICES: 'not json' })).toThrow(/MODEL_PRICES must be JSON/);
    expect(() => loadConfig({ MODEL_PRICES: '{"m":{"input":-1,"output":1}}' })).toThrow(/MODEL_PRICES m\.input: /);
    expect(() => loadConfig({ MODEL_PRICES: '{"m":{"input":1,"output":1,"extra":1}}' })).toThrow(
      /MODEL_PRICES .*extra/,
    );
  });

  it('formats durations for a reader', () => {
    expect(formatDuration(4_400)).toBe('4s');
    expect(formatDuration(134_000)).toBe('2m 14s');
    expect(formatDuration(3 * 3_600_000 + 5 * 60_000)).toBe('3h 5m');
  });
});
