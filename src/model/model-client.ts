// ModelClient: the minimal contract the brain needs from a model, and its Anthropic SDK implementation.
import Anthropic from '@anthropic-ai/sdk';
import type { ApiMessage } from '../session/context';
import type { ContentBlock, Usage } from '../session/events';
import type { ToolSpec } from '../tools/kind';
import { withCacheBreakpoints } from './caching';

export interface ModelRequest {
  sessionId: string;
  model: string;
  /** One string, or blocks (the agent's prompt, then the compaction summary). */
  system?: string | string[];
  messages: ApiMessage[];
  tools: ToolSpec[];
  maxTokens: number;
  /** Put prompt-caching breakpoints on the request. */
  cache?: boolean;
}

export interface ModelReply {
  content: ContentBlock[];
  stopReason: string | null;
  usage: Usage;
}

/**
 * A piece of the reply as it streams: text, the start of a tool call, a piece of its input JSON, or the start of a
 * thinking block; `index` is the content block's index in the reply, when the stream says it.
 */
export type ModelDelta = (
  | { type: 'text'; text: string }
  | { type: 'tool_use'; name: string }
  | { type: 'tool_input'; json: string }
  | { type: 'thinking' }
) & { index?: number };

export interface ModelCallOptions {
  signal?: AbortSignal;
  /** Called on every stream event, with the delta it carries if any. */
  onProgress?: (delta?: ModelDelta) => void;
}

/**
 * The minimal contract: send one request, stream it, return the final message.
 * `onProgress` is called as stream events arrive; `signal` aborts the call.
 */
export interface ModelClient {
  createMessage(request: ModelRequest, opts: ModelCallOptions): Promise<ModelReply>;
}

function deltaOf(event: Anthropic.MessageStreamEvent): ModelDelta | undefined {
  if (event.type === 'content_block_start' && event.content_block.type === 'tool_use')
    return { type: 'tool_use', name: event.content_block.name, index: event.index };
  if (
    event.type === 'content_block_start' &&
    (event.content_block.type === 'thinking' || event.content_block.type === 'redacted_thinking')
  )
    return { type: 'thinking', index: event.index };
  if (event.type !== 'content_block_delta') return undefined;
  if (event.delta.type === 'text_delta') return { type: 'text', text: event.delta.text, index: event.index };
  if (event.delta.type === 'input_json_delta')
    return { type: 'tool_input', json: event.delta.partial_json, index: event.index };
  return undefined;
}

export class AnthropicModelClient implements ModelClient {
  private readonly client: Anthropic;

  constructor(opts: { apiKey?: string; baseURL?: string } = {}) {
    // Temporal owns retries, so the SDK makes exactly one attempt.
    this.client = new Anthropic({
      apiKey: opts.apiKey ?? 'offline',
      baseURL: opts.baseURL,
      maxRetries: 0,
      timeout: 10 * 60 * 1000,
    });
  }

  async createMessage(request: ModelRequest, opts: ModelCallOptions): Promise<ModelReply> {
    const blocks = (typeof request.system === 'string' ? [request.system] : (request.system ?? [])).filter(
      (t) => t !== '',
    );
    const body = request.cache
      ? withCacheBreakpoints({ ...request, system: blocks })
      : {
          system: blocks.length ? blocks.map((text) => ({ type: 'text' as const, text })) : undefined,
          tools: request.tools,
          messages: request.messages,
        };
    const stream = this.client.messages.stream(
      {
        model: request.model,
        max_tokens: request.maxTokens,
        ...(body.system ? { system: body.system as Anthropic.MessageCreateParams['system'] } : {}),
        messages: body.messages as unknown as Anthropic.MessageParam[],
        ...(body.tools.length ? { tools: body.tools as unknown as Anthropic.Tool[] } : {}),
        metadata: { user_id: request.sessionId },
      },
      { signal: opts.signal },
    );
    for await (const event of stream) opts.onProgress?.(deltaOf(event));
    const message = await stream.finalMessage();
    const oneHour = message.usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
    return {
      content: message.content as unknown as ContentBlock[],
      stopReason: message.stop_reason,
      usage: {
        inputTokens: message.usage.input_tokens,
        outputTokens: message.usage.output_tokens,
        cacheReadInputTokens: message.usage.cache_read_input_tokens ?? 0,
        cacheCreationInputTokens: message.usage.cache_creation_input_tokens ?? 0,
        ...(oneHour ? { cacheCreation1hInputTokens: oneHour } : {}),
      },
    };
  }
}
