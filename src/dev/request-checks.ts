// The conversation checks the real Messages API makes, with its error messages and error types, and its token count estimate.
import { PlatformError } from '../session/platform-error';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

/** The `error.type` the real API answers an error status with. */
export function errorTypeOf(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** What validateRequest throws: the API answers it with 400 invalid_request_error and this message. */
export class InvalidRequest extends PlatformError {}

/** A message of a request body, unchecked. */
export type Msg = { role: string; content: string | Array<Record<string, unknown>> };

/** A message's content as blocks: a string is one text block. */
export function blocksOf(m: Msg): Array<Record<string, unknown>> {
  return typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
}

/** What the real API answers a conversation ending on an assistant turn, for models without prefill. */
export const PREFILL_REFUSAL =
  'This model does not support assistant message prefill. The conversation must end with a user message.';

/** Consecutive turns of one role combined into one, as the real API does before it checks a conversation. */
export function combineTurns(messages: readonly Msg[]): Msg[] {
  const out: Msg[] = [];
  for (const m of messages) {
    const previous = out[out.length - 1];
    if (previous && previous.role === m.role)
      out[out.length - 1] = { role: m.role, content: [...blocksOf(previous), ...blocksOf(m)] };
    else out.push(m);
  }
  return out;
}

export interface ValidateOptions {
  /** A count_tokens request: no max_tokens, and a trailing assistant turn is allowed. */
  countTokens?: boolean;
  /** The model continues a trailing assistant turn (prefill) instead of refusing it, as older models do. */
  allowPrefill?: boolean;
}

/**
 * The conversation rules the real API enforces with 400 invalid_request_error. Consecutive turns of one role
 * are combined first, as the real API does; a conversation ending on an assistant turn is refused unless the
 * model allows prefill (current models do not).
 */
export function validateRequest(body: Record<string, unknown>, opts: ValidateOptions = {}): void {
  const countTokens = opts.countTokens === true;
  if (typeof body.model !== 'string' || body.model === '') throw new InvalidRequest('model: Field required');
  if (!countTokens && (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1))
    throw new InvalidRequest('max_tokens: Field required and must be a positive integer');
  const sent = body.messages as Msg[] | undefined;
  if (!Array.isArray(sent) || sent.length === 0) throw new InvalidRequest('messages: at least one message is required');
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw new InvalidRequest('tools: Input should be a valid list');
    for (const [i, t] of (body.tools as Record<string, unknown>[]).entries()) {
      if (typeof t?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name))
        throw new InvalidRequest(`tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      if (typeof t.input_schema !== 'object' || t.input_schema === null)
        throw new InvalidRequest(`tools.${i}.input_schema: Field required`);
    }
  }
  sent.forEach((m, i) => {
    if (m?.role !== 'user' && m?.role !== 'assistant')
      throw new InvalidRequest(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof m.content !== 'string' && (!Array.isArray(m.content) || m.content.length === 0))
      throw new InvalidRequest(`messages.${i}.content: must be a string or a non-empty list of content blocks`);
  });
  const messages = combineTurns(sent);
  if (messages[0].role !== 'user') throw new InvalidRequest('messages: first message must use the "user" role');
  let pendingToolUses: string[] = [];
  messages.forEach((m, i) => {
    const blocks = blocksOf(m);
    for (const [j, b] of blocks.entries()) {
      if (b.type === 'text' && (typeof b.text !== 'string' || b.text === ''))
        throw new InvalidRequest(`messages.${i}.content.${j}.text: text content blocks must be non-empty`);
    }
    if (m.role === 'user') {
      const results = blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id as string);
      const missing = pendingToolUses.filter((id) => !results.includes(id));
      if (missing.length)
        throw new InvalidRequest(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      const unexpected = results.filter((id) => !pendingToolUses.includes(id));
      if (unexpected.length)
        throw new InvalidRequest(
          `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(', ')}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
      if (firstOther !== -1 && blocks.slice(firstOther).some((b) => b.type === 'tool_result'))
        throw new InvalidRequest(`messages.${i}: tool_result blocks must come first in the content array`);
      pendingToolUses = [];
    } else {
      pendingToolUses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
      if (pendingToolUses.some((id) => typeof id !== 'string' || id === ''))
        throw new InvalidRequest(`messages.${i}: tool_use blocks need an id`);
      for (const [j, b] of blocks.entries()) {
        if (b.type === 'tool_use' && (typeof b.input !== 'object' || b.input === null || Array.isArray(b.input)))
          throw new InvalidRequest(`messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`);
      }
    }
  });
  if (pendingToolUses.length && messages[messages.length - 1].role === 'assistant')
    throw new InvalidRequest(
      `messages: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${pendingToolUses.join(', ')}`,
    );
  if (!countTokens && !opts.allowPrefill && messages[messages.length - 1].role === 'assistant')
    throw new InvalidRequest(PREFILL_REFUSAL);
}

export function estimateTokens(body: Record<string, unknown>): number {
  return Math.max(1, Math.ceil(JSON.stringify([body.system ?? '', body.messages, body.tools ?? []]).length / 4));
}
