// Prompt-cache accounting for the local server: which part of a request's prefix is read from or written to the cache.
import { createHash } from 'node:crypto';
import { blocksOf, type Msg } from './request-checks';

/** Minimum cacheable prefix (Sonnet and Opus models), how far back a breakpoint looks, and the cache's life. */
export const CACHE_MIN_TOKENS = 1024;
const CACHE_LOOKBACK_BLOCKS = 20;
const CACHE_TTL_MS = 5 * 60_000;

export interface CacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/**
 * Prompt-cache accounting as Anthropic documents it: the request is a sequence of blocks (tools, system,
 * messages); a `cache_control` breakpoint caches the prefix up to it when that prefix is long enough; a later
 * request reads the longest cached prefix found at one of its breakpoints or up to 20 blocks before one.
 */
export class PromptCache {
  /** Each cached prefix's hash and when it expires. */
  private readonly entries = new Map<string, number>();
  private nextSweep = 0;

  /** How many prefixes are cached (expired ones included until the next sweep). */
  get size(): number {
    return this.entries.size;
  }

  account(body: Record<string, unknown>, now = Date.now()): CacheUsage {
    // Expired prefixes are dropped once per cache lifetime, so a server left running keeps bounded memory.
    if (now >= this.nextSweep) {
      for (const [key, expires] of this.entries) if (expires <= now) this.entries.delete(key);
      this.nextSweep = now + CACHE_TTL_MS;
    }
    const blocks = flattenForCache(body);
    const hashes: string[] = [];
    const totals: number[] = [];
    let h = createHash('sha256').update(String(body.model)).digest('hex');
    let total = 0;
    for (const b of blocks) {
      h = createHash('sha256').update(h).update(b.json).digest('hex');
      total += Math.max(1, Math.ceil(b.json.length / 4));
      hashes.push(h);
      totals.push(total);
    }
    const live = (key: string) => (this.entries.get(key) ?? 0) > now;
    let read = 0;
    blocks.forEach((b, i) => {
      if (!b.breakpoint) return;
      for (let j = i; j >= Math.max(0, i - CACHE_LOOKBACK_BLOCKS); j--) {
        if (live(hashes[j])) {
          read = Math.max(read, totals[j]);
          this.entries.set(hashes[j], now + CACHE_TTL_MS);
          break;
        }
      }
    });
    let written = read;
    blocks.forEach((b, i) => {
      if (!b.breakpoint || totals[i] < CACHE_MIN_TOKENS) return;
      if (!live(hashes[i])) written = Math.max(written, totals[i]);
      this.entries.set(hashes[i], now + CACHE_TTL_MS);
    });
    const creation = written - read;
    return {
      input_tokens: total - read - creation,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: creation,
    };
  }
}

function flattenForCache(body: Record<string, unknown>): { json: string; breakpoint: boolean }[] {
  const out: { json: string; breakpoint: boolean }[] = [];
  const push = (prefix: string, block: Record<string, unknown>) => {
    const { cache_control, ...rest } = block;
    out.push({ json: `${prefix}${JSON.stringify(rest)}`, breakpoint: cache_control !== undefined });
  };
  for (const t of (body.tools as Record<string, unknown>[] | undefined) ?? []) push('tool:', t);
  const system = body.system;
  if (typeof system === 'string') push('system:', { type: 'text', text: system });
  else if (Array.isArray(system)) for (const b of system as Record<string, unknown>[]) push('system:', b);
  for (const m of (body.messages as Msg[] | undefined) ?? []) for (const b of blocksOf(m)) push(`${m.role}:`, b);
  return out;
}
