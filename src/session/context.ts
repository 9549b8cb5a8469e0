// Builds the Messages API conversation from the session log. Pure, so both workflow and activities may use it.
import type { ContentBlock, SessionEvent } from './events';

export interface ApiMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/**
 * Turns events into alternating user/assistant messages the Messages API accepts.
 * Tool results and user text that arrive between two assistant messages merge into one user message,
 * with tool_result blocks first, as the API requires. A turn cut short (interrupt, model error) leaves
 * consecutive user input, which merges the same way.
 */
export function buildMessages(events: readonly SessionEvent[]): ApiMessage[] {
  const messages: ApiMessage[] = [];
  let results: ContentBlock[] = [];
  let texts: ContentBlock[] = [];
  const flushUser = () => {
    if (results.length + texts.length === 0) return;
    messages.push({ role: 'user', content: [...results, ...texts] });
    results = [];
    texts = [];
  };
  for (const e of events) {
    switch (e.type) {
      case 'user_message':
        texts.push({ type: 'text', text: e.text });
        break;
      case 'tool_result':
        results.push({
          type: 'tool_result',
          tool_use_id: e.toolUseId,
          content: e.output.length ? e.output : '(no output)',
          ...(e.isError ? { is_error: true } : {}),
        });
        break;
      case 'assistant_message': {
        flushUser();
        const content = e.content.filter((b) => !(b.type === 'text' && b.text === ''));
        messages.push({ role: 'assistant', content: content.length ? content : [{ type: 'text', text: '(no content)' }] });
        break;
      }
      default:
        break;
    }
  }
  flushUser();
  return messages;
}
