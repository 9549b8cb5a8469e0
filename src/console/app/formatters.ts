// Small formatters: ages, token counts, cost at the API's model prices, and folding long text.
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number };
}

/** US dollars per million tokens, as GET /console/prices.json serves them (src/observability/pricing.ts). */
export type Prices = Record<string, { input: number; output: number; cacheRead?: number; cacheWrite?: number }>;

export function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}

export function tokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** The cost of `usage` on `model`, or undefined when the table has no price for it (a dated id takes its model's). */
export function cost(prices: Prices, model: string, usage: Usage): number | undefined {
  const p = prices[model] ?? prices[/^(.+)-(\d{8}|latest)$/.exec(model)?.[1] ?? ''];
  if (!p) return undefined;
  const writes =
    (usage.cache_creation?.ephemeral_5m_input_tokens ?? 0) + (usage.cache_creation?.ephemeral_1h_input_tokens ?? 0);
  const perMillion =
    usage.input_tokens * p.input +
    usage.output_tokens * p.output +
    usage.cache_read_input_tokens * (p.cacheRead ?? p.input * 0.1) +
    writes * (p.cacheWrite ?? p.input * 1.25);
  return perMillion / 1_000_000;
}

export const dollars = (n: number | undefined): string =>
  n === undefined ? '–' : n > 0 && n < 0.01 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`;

export const FOLD_LINES = 12;
export const FOLD_CHARS = 1500;

/** The head of `text` shown while folded, or undefined when it is short enough to show whole. */
export function folded(text: string): { head: string; lines: number } | undefined {
  const lines = text.split('\n');
  if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return undefined;
  return { head: lines.slice(0, FOLD_LINES).join('\n').slice(0, FOLD_CHARS), lines: lines.length };
}

/** A size in bytes, as people read it: 812 B, 4.2 KB, 12 MB (powers of 1,024). */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}
