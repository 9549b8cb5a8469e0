// Builds the Messages API conversation from the session log. Pure, so both workflow and activities may use it.
import type { ContentBlock, SessionEvent } from './events';

export interface ApiMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** The user turn a request gets when the log's last model-visible event is a reply (a log recorded before replies carried `throughSeq`). */
export const CONTINUE_NOTE = '(continue)';

/**
 * The log in causal order: each reply right after the last event its model call read (`throughSeq`), so input
 * that arrived while the call was in flight comes after the reply that did not see it, and is answered next.
 * Replies without `throughSeq` (logs recorded before it existed) stay where they are. Stable otherwise.
 */
export function causalOrder(events: readonly SessionEvent[]): SessionEvent[] {
  const keyOf = (e: SessionEvent) =>
    e.type === 'assistant_message' && e.throughSeq !== undefined && e.throughSeq < e.seq ? e.throughSeq + 0.5 : e.seq;
  const keyed = events.map((e, i) => ({ e, i, k: keyOf(e) }));
  if (keyed.every((x, i) => i === 0 || keyed[i - 1].k <= x.k)) return [...events];
  return keyed.sort((a, b) => a.k - b.k || a.i - b.i).map((x) => x.e);
}

/**
 * Turns events into alternating user/assistant messages the Messages API accepts, in causal order.
 * Tool results and user text that arrive between two assistant messages merge into one user message,
 * with tool_result blocks first, as the API requires. A turn cut short (interrupt, model error) leaves
 * consecutive user input, which merges the same way. Whatever the log holds, the conversation starts and ends
 * with a user turn (a trailing reply would be read as a prefill) and never has two turns of one role in a row.
 */
export function buildMessages(events: readonly SessionEvent[], opts: { maxTextChars?: number } = {}): ApiMessage[] {
  const max = opts.maxTextChars ?? Infinity;
  const messages: ApiMessage[] = [];
  let results: ContentBlock[] = [];
  let texts: ContentBlock[] = [];
  const flushUser = () => {
    if (results.length + texts.length === 0) return;
    messages.push({ role: 'user', content: [...results, ...texts] });
    results = [];
    texts = [];
  };
  for (const e of causalOrder(events)) {
    switch (e.type) {
      case 'user_message':
        texts.push({ type: 'text', text: clipForModel(e.text, max, e.seq) });
        break;
      case 'tool_result':
        results.push({
          type: 'tool_result',
          tool_use_id: e.toolUseId,
          content: e.output.length ? clipForModel(e.output, max, e.seq) : '(no output)',
          ...(e.isError ? { is_error: true } : {}),
        });
        break;
      case 'assistant_message': {
        flushUser();
        const content = e.content.filter((b) => !(b.type === 'text' && b.text === ''));
        const blocks = content.length ? content : [{ type: 'text', text: '(no content)' }];
        const previous = messages[messages.length - 1];
        // Two replies with nothing between them (a log recorded in arrival order) are one assistant turn.
        if (previous?.role === 'assistant') previous.content = [...previous.content, ...blocks];
        else messages.push({ role: 'assistant', content: blocks });
        break;
      }
      default:
        break;
    }
  }
  flushUser();
  if (messages.length > 0 && messages[messages.length - 1].role === 'assistant')
    messages.push({ role: 'user', content: [{ type: 'text', text: CONTINUE_NOTE }] });
  return messages;
}

/** tool_use ids among `events` that have no tool_result among them. */
export function openToolUses(events: readonly SessionEvent[]): string[] {
  const answered = new Set<string>();
  for (const e of events) if (e.type === 'tool_result') answered.add(e.toolUseId);
  return events.flatMap((e) => (e.type === 'tool_use' && !answered.has(e.id) ? [e.id] : []));
}

/**
 * Cuts a text longer than `max` to a head and a tail. The note says where the whole text is: event `seq` of
 * the log, which keeps it unchanged.
 */
export function clipForModel(text: string, max: number, seq: number): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[${text.length - 2 * half} of ${text.length} characters left out here; event ${seq} of the session log holds the whole text]\n${text.slice(-half)}`;
}
