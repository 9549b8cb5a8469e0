// Prompt caching: breakpoints on the stable prefix (tools, system prompt, latest compaction summary) and on the
// rolling end of the conversation, so each request's prefix is byte-identical to the one before and the cache hits.
import type { ApiMessage } from '../session/context';
import type { ContentBlock } from '../session/events';
import type { ToolSpec } from '../tools/kind';

const EPHEMERAL = { type: 'ephemeral' } as const;

export interface CacheableRequest {
  /** System blocks: the agent's prompt, then the compaction summary. */
  system?: string | string[];
  tools: ToolSpec[];
  messages: ApiMessage[];
}

export interface WithBreakpoints {
  system?: { type: 'text'; text: string; cache_control?: typeof EPHEMERAL }[];
  tools: (ToolSpec & { cache_control?: typeof EPHEMERAL })[];
  messages: ApiMessage[];
}

/**
 * Adds at most three breakpoints (the API allows four): the last tool, the last system block (the summary when
 * there is one, so tools, prompt and summary are one cached prefix), and the last message block.
 */
export function withCacheBreakpoints(req: CacheableRequest): WithBreakpoints {
  const tools = req.tools.map((t, i) => (i === req.tools.length - 1 ? { ...t, cache_control: EPHEMERAL } : t));
  const blocks = (typeof req.system === 'string' ? [req.system] : (req.system ?? [])).filter((t) => t !== '');
  const system = blocks.length
    ? blocks.map((text, i) =>
        i === blocks.length - 1
          ? { type: 'text' as const, text, cache_control: EPHEMERAL }
          : { type: 'text' as const, text },
      )
    : undefined;
  const messages = req.messages.map((m, i) => {
    if (i !== req.messages.length - 1 || m.content.length === 0) return m;
    const content = m.content.map((b, j): ContentBlock =>
      j === m.content.length - 1 ? { ...b, cache_control: EPHEMERAL } : b,
    );
    return { ...m, content };
  });
  return { system, tools, messages };
}
