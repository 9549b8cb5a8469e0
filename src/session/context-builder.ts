// ContextBuilder: turns the log into the next model request under a token budget. Pure: the activity gives it
// the events of the current window, it says what to send and, when the request would not fit, where to cut.
import { buildMessages, causalOrder, type ApiMessage } from './context';
import type { EventOf, SessionEvent } from './events';
import type { ToolSpec } from '../tools/kind';

/** The part of the log the model sees: events from `fromSeq` on, after the summary of everything before. */
export interface ContextWindow {
  fromSeq: number;
  /** The latest `context_compacted` summary, covering events before `fromSeq`. */
  summary?: string;
}

export const FULL_WINDOW: ContextWindow = { fromSeq: 0 };

/** Any text longer than this is cut to a head and a tail for the model; the log keeps it whole. */
export const MODEL_TEXT_LIMIT = 32 * 1024;

/** After a compaction, the kept tail of the window aims at this share of the budget. */
export const KEEP_SHARE = 0.5;

/** The marker that makes a request a compaction request (the local model server answers those itself). */
export const COMPACTION_MARKER = 'You are compacting the context of a long agent session.';

export interface BuildContextInput {
  /** The window's events, in order, from `window.fromSeq` through the newest event. */
  events: readonly SessionEvent[];
  window: ContextWindow;
  system?: string;
  tools: ToolSpec[];
  /** The most input tokens a request may take before the window is compacted. */
  budgetTokens: number;
}

export interface BuiltContext {
  /** System prompt blocks: the agent's prompt, then the compaction summary (the stable prefix). */
  system: string[];
  messages: ApiMessage[];
  /** Estimated input tokens of the request. */
  tokens: number;
  overBudget: boolean;
  /** When over budget: the seq the kept tail should start at (everything before it gets summarised). */
  cutSeq?: number;
}

/** The same estimate the local model server uses: about four characters a token. */
export function estimateTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? '').length / 4);
}

export function summaryBlock(window: ContextWindow): string | undefined {
  if (window.summary === undefined) return undefined;
  return (
    `Events 0 to ${window.fromSeq - 1} of this session were compacted into the summary below. ` +
    'They are still in the session log, word for word: re-read any of them with the session_events tool (from, limit).\n\n' +
    `<summary>\n${window.summary}\n</summary>`
  );
}

export function buildContext(input: BuildContextInput): BuiltContext {
  const { window } = input;
  const summary = summaryBlock(window);
  const system = [...(input.system ? [input.system] : []), ...(summary ? [summary] : [])];
  const messages = toMessages(input.events, window);
  const fixed = estimateTokens([system, input.tools]);
  const tokens = fixed + estimateTokens(messages);
  if (tokens <= input.budgetTokens) return { system, messages, tokens, overBudget: false };
  return {
    system,
    messages,
    tokens,
    overBudget: true,
    cutSeq: chooseCut(input.events, window, Math.max(0, input.budgetTokens * KEEP_SHARE - fixed)),
  };
}

/** The window's conversation. A window that starts mid-turn opens with a line that points at the summary. */
export function toMessages(events: readonly SessionEvent[], window: ContextWindow): ApiMessage[] {
  const messages = buildMessages(events, { maxTextChars: MODEL_TEXT_LIMIT });
  if (messages.length > 0 && messages[0].role === 'user') return messages;
  const note =
    window.fromSeq > 0
      ? `(The session continues from event ${window.fromSeq}; earlier events are summarised in the system prompt.)`
      : '(The session starts.)';
  return [{ role: 'user', content: [{ type: 'text', text: note }] }, ...messages];
}

/**
 * Where a compaction may cut: before an assistant message, or before a user message when every earlier tool
 * use has its result. Either way a tool_use and its tool_result end up on the same side. In causal order
 * (`causalOrder`), a cut at seq S is one only where every event before it has a lower seq and every event from
 * it on a seq of S or more, so the folded events (seq < S) are exactly what comes before the kept tail.
 */
export function cutPoints(events: readonly SessionEvent[], window: ContextWindow): number[] {
  return cutPointsOf(causalOrder(events), window);
}

function cutPointsOf(ordered: readonly SessionEvent[], window: ContextWindow): number[] {
  const minFrom: number[] = new Array(ordered.length + 1).fill(Infinity);
  for (let i = ordered.length - 1; i >= 0; i--) minFrom[i] = Math.min(ordered[i].seq, minFrom[i + 1]);
  const open = new Set<string>();
  const out: number[] = [];
  let maxBefore = -Infinity;
  ordered.forEach((e, i) => {
    const splits = maxBefore < e.seq && minFrom[i] === e.seq;
    if (
      splits &&
      e.seq > window.fromSeq &&
      (e.type === 'assistant_message' || (e.type === 'user_message' && open.size === 0))
    )
      out.push(e.seq);
    if (e.type === 'tool_use') open.add(e.id);
    if (e.type === 'tool_result') open.delete(e.toolUseId);
    maxBefore = Math.max(maxBefore, e.seq);
  });
  return out;
}

/** The earliest cut whose kept tail fits `keepTokens`; failing that, the latest cut. Undefined if there is none. */
export function chooseCut(
  events: readonly SessionEvent[],
  window: ContextWindow,
  keepTokens: number,
): number | undefined {
  const ordered = causalOrder(events);
  const points = cutPointsOf(ordered, window);
  if (points.length === 0) return undefined;
  let tail = 0;
  let best: number | undefined;
  let p = points.length - 1;
  for (let i = ordered.length - 1; i >= 0 && p >= 0; i--) {
    tail += modelCost(ordered[i]);
    if (ordered[i].seq === points[p]) {
      if (tail <= keepTokens) best = points[p];
      else break;
      p--;
    }
  }
  return best ?? points[points.length - 1];
}

/** Roughly what an event adds to a request. */
function modelCost(e: SessionEvent): number {
  switch (e.type) {
    case 'user_message':
      return estimateTokens(e.text.slice(0, MODEL_TEXT_LIMIT + 200));
    case 'assistant_message':
      return estimateTokens(e.content);
    case 'tool_result':
      return estimateTokens(e.output.slice(0, MODEL_TEXT_LIMIT + 200));
    default:
      return 0;
  }
}

/** The text a compaction call summarises: each event on its own lines, numbered by seq. */
export function renderTranscript(events: readonly SessionEvent[], maxChars: number): string {
  const lines: string[] = [];
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… [${s.length - n} more characters]` : s);
  for (const e of events) {
    switch (e.type) {
      case 'user_message':
        lines.push(`[${e.seq}] user: ${clip(e.text, 4000)}`);
        break;
      case 'assistant_message':
        for (const b of e.content) {
          if (b.type === 'text') lines.push(`[${e.seq}] assistant: ${clip(String(b.text), 4000)}`);
        }
        break;
      case 'tool_use':
        lines.push(`[${e.seq}] tool call ${e.name} (${e.id}): ${clip(JSON.stringify(e.input), 2000)}`);
        break;
      case 'tool_result':
        lines.push(`[${e.seq}] tool result for ${e.toolUseId}${e.isError ? ' (error)' : ''}: ${clip(e.output, 2000)}`);
        break;
      case 'context_compacted':
        lines.push(`[${e.seq}] (an earlier compaction through event ${e.throughSeq})`);
        break;
      case 'error':
      case 'interrupted':
        lines.push(`[${e.seq}] ${e.type}: ${'message' in e ? e.message : e.reason}`);
        break;
      default:
        break;
    }
  }
  const text = lines.join('\n');
  if (text.length <= maxChars) return text;
  const half = Math.floor(maxChars / 2);
  return `${text.slice(0, half)}\n[… ${text.length - maxChars} characters of the transcript left out; the log keeps them …]\n${text.slice(-half)}`;
}

/** The compaction request: the previous summary (if any) and the transcript of the events being folded in. */
export function compactionRequest(
  previous: string | undefined,
  events: readonly SessionEvent[],
  maxChars: number,
): { system: string; text: string } {
  const first = events[0]?.seq ?? 0;
  const last = events[events.length - 1]?.seq ?? first;
  const system =
    `${COMPACTION_MARKER} Write a summary that lets you carry on the work without the original events. ` +
    'Keep the task, decisions, facts learnt, file paths, commands run and their results, errors, and what is still open. ' +
    'Cite event numbers in brackets, e.g. [42], so the exact events can be re-read later. Answer with the summary only.';
  const text =
    (previous ? `The summary so far:\n<summary>\n${previous}\n</summary>\n\n` : '') +
    `Events ${first} to ${last}:\n<events>\n${renderTranscript(events, maxChars)}\n</events>`;
  return { system, text };
}

/** The latest compaction among `events`, as a window. */
export function windowAfter(events: readonly SessionEvent[], current: ContextWindow = FULL_WINDOW): ContextWindow {
  let w = current;
  for (const e of events) {
    if (e.type === 'context_compacted') w = windowOf(e);
  }
  return w;
}

export function windowOf(e: EventOf<'context_compacted'>): ContextWindow {
  return { fromSeq: e.throughSeq + 1, summary: e.summary };
}
