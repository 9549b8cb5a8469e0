// Prompt caching, measured on the local Messages API server, which counts cache reads as Anthropic documents.
import { PromptCache, CACHE_MIN_TOKENS } from '../src/dev/prompt-cache';
import { withCacheBreakpoints } from '../src/model/caching';
import { statusQuery } from '../src/session/contract';
import { say, startHarness, startSession, type Harness } from './helpers/env';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const SYSTEM = `You are a meticulous assistant. ${'Follow the house style guide to the letter. '.repeat(120)}`;

async function cacheShare(promptCaching: boolean): Promise<{ share: number; requests: Record<string, unknown>[] }> {
  const handle = await startSession(h, { agent: { system: SYSTEM, promptCaching } });
  for (let i = 0; i < 50; i++)
    await say(handle, i % 5 === 4 ? `turn ${i}: read the log` : `turn ${i}: ${'details '.repeat(20)}`);
  const { usage } = await handle.query(statusQuery);
  const input = usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
  return { share: usage.cacheReadInputTokens / input, requests: h.mock.requests(handle.workflowId).map((r) => r.body) };
}

describe('prompt caching', () => {
  it('reads at least 80% of input tokens from the cache over 50 turns, against none without caching', async () => {
    const on = await cacheShare(true);
    const off = await cacheShare(false);
    expect(on.share).toBeGreaterThanOrEqual(0.8);
    expect(off.share).toBe(0);
    // The stable prefix is byte-identical from request to request.
    const prefix = (b: Record<string, unknown>) => JSON.stringify([b.tools, b.system]);
    expect(new Set(on.requests.map(prefix)).size).toBe(1);
  }, 300_000);

  it('places breakpoints on the last tool, the system prompt and the last block of the conversation', () => {
    const req = withCacheBreakpoints({
      system: 'sys',
      tools: [
        { name: 'a', description: 'a', input_schema: { type: 'object', properties: {} } },
        { name: 'b', description: 'b', input_schema: { type: 'object', properties: {} } },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'one' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'two' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x' },
            { type: 'text', text: 'three' },
          ],
        },
      ],
    });
    expect(req.tools.map((t) => 'cache_control' in t)).toEqual([false, true]);
    expect(req.system).toEqual([{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }]);
    expect(req.messages.flatMap((m) => m.content.map((b) => 'cache_control' in b))).toEqual([
      false,
      false,
      false,
      true,
    ]);
  });

  it('counts reads only for a matching prefix at a breakpoint, and only past the minimum length', () => {
    const cache = new PromptCache();
    const long = 'x'.repeat(CACHE_MIN_TOKENS * 4 + 100);
    const body = (system: string, turns: string[]) => ({
      model: 'm',
      system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
      messages: turns.map((t, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: [
          { type: 'text', text: t, ...(i === turns.length - 1 ? { cache_control: { type: 'ephemeral' } } : {}) },
        ],
      })),
    });
    const first = cache.account(body(long, ['hi']));
    expect(first.cache_read_input_tokens).toBe(0);
    expect(first.cache_creation_input_tokens).toBeGreaterThan(CACHE_MIN_TOKENS);
    const second = cache.account(body(long, ['hi', 'hello', 'more']));
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    // A changed system prompt matches nothing.
    expect(cache.account(body(`${long}!`, ['hi'])).cache_read_input_tokens).toBe(0);
    // Too short to cache at all.
    const short = cache.account(body('short', ['hi']));
    expect(short.cache_creation_input_tokens).toBe(0);
    expect(cache.account(body('short', ['hi'])).cache_read_input_tokens).toBe(0);
  });

  it('drops prefixes whose cache life is over', () => {
    const cache = new PromptCache();
    const long = (tag: string) => ({
      model: 'm',
      system: [
        { type: 'text', text: `${tag}${'x'.repeat(CACHE_MIN_TOKENS * 4)}`, cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: 'hi' }],
    });
    cache.account(long('a'), 0);
    cache.account(long('b'), 1000);
    expect(cache.size).toBe(2);
    // Five minutes after the first: 'a' has expired and is dropped, 'b' (written a second later) is still read.
    const later = cache.account(long('b'), 5 * 60_000 + 500);
    expect(later.cache_read_input_tokens).toBeGreaterThan(CACHE_MIN_TOKENS);
    expect(cache.size).toBe(1);
  });
});
