// The live side channel: deltas of work in progress (model tokens, tool output) per session, held in memory
// by the worker doing the work. A preview only: nothing here is durable; the final content is the log's.
import { z } from 'zod';
import { SessionSubscribers } from './subscribers';

/** What a stream previews: the model reply that follows event `throughSeq`, or the output of one tool call. */
export const StreamItemSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('model'), throughSeq: z.number().int().nonnegative() }).strict(),
  z.object({ kind: z.literal('tool'), toolUseId: z.string().min(1).max(200), tool: z.string().max(200) }).strict(),
]);
export type StreamItem = z.infer<typeof StreamItemSchema>;

/**
 * Which content block of a model reply a delta belongs to (`block` is its index in the reply) and what it is:
 * reply text, a tool call (its name and input JSON) or extended thinking (a start only; its text is not previewed).
 * The API maps a reply's text onto `agent.message` previews by it; a watcher shows the text whatever the part.
 */
export const StreamPartSchema = z
  .object({ kind: z.enum(['text', 'tool', 'thinking']), block: z.number().int().nonnegative() })
  .strict();
export type StreamPart = z.infer<typeof StreamPartSchema>;
const PartTextSchema = StreamPartSchema.extend({ text: z.string() }).strict();

/**
 * One frame on the wire. `open` carries everything streamed so far, so a late subscriber misses nothing. A relay
 * (src/stream/relay.ts), which merges the streams of several workers, names the worker on every frame.
 */
export const StreamFrameSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('open'),
      key: z.string(),
      item: StreamItemSchema,
      attempt: z.number().int().positive(),
      worker: z.string(),
      text: z.string(),
      parts: z.array(PartTextSchema).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('delta'),
      key: z.string(),
      text: z.string(),
      worker: z.string().optional(),
      part: StreamPartSchema.optional(),
    })
    .strict(),
  z.object({ type: z.literal('close'), key: z.string(), worker: z.string().optional() }).strict(),
]);
export type StreamFrame = z.infer<typeof StreamFrameSchema>;

export interface Publisher {
  /** Appends `text`; `part` says which block of a model reply it belongs to (a thinking block's start has no text). */
  write(text: string, part?: StreamPart): void;
  close(): void;
}

/** A stream's preview is kept up to this many characters; the rest is in the log once the item finishes. */
export const MAX_PREVIEW_CHARS = 256 * 1024;
const TRUNCATED = '\n[live preview truncated; the whole result arrives in the log]\n';

export const streamKey = (item: StreamItem): string =>
  item.kind === 'model' ? `model:${item.throughSeq}` : `tool:${item.toolUseId}`;

interface Live {
  item: StreamItem;
  attempt: number;
  text: string;
  full: boolean;
  /** The text so far by part, for a model reply whose deltas name theirs. */
  parts: Array<StreamPart & { text: string }>;
}

/** Adds `text` of `part` to `parts` (the last entry when it is the same block). */
export function addPart(parts: Array<StreamPart & { text: string }>, part: StreamPart, text: string): void {
  const last = parts[parts.length - 1];
  if (last && last.block === part.block && last.kind === part.kind) last.text += text;
  else parts.push({ ...part, text });
}

export class StreamHub {
  private readonly live = new Map<string, Map<string, Live>>();
  private readonly subscribers = new SessionSubscribers<StreamFrame>();

  /** `worker` names this worker in frames (its stream URL), so a watcher can tell who streamed what. */
  constructor(public worker = '') {}

  private emit(sessionId: string, frame: StreamFrame): void {
    this.subscribers.emit(sessionId, frame);
  }

  /** Starts (or, for a retried attempt, restarts) the preview of one item of a session. */
  open(sessionId: string, item: StreamItem, attempt: number): Publisher {
    const key = streamKey(item);
    const streams = this.live.get(sessionId) ?? new Map<string, Live>();
    this.live.set(sessionId, streams);
    const entry: Live = { item, attempt, text: '', full: false, parts: [] };
    streams.set(key, entry);
    this.emit(sessionId, { type: 'open', key, item, attempt, worker: this.worker, text: '' });
    return {
      write: (text, part) => {
        if (streams.get(key) !== entry || entry.full || (text === '' && part?.kind !== 'thinking')) return;
        if (entry.text.length + text.length > MAX_PREVIEW_CHARS) {
          entry.full = true;
          text = text.slice(0, Math.max(0, MAX_PREVIEW_CHARS - entry.text.length)) + TRUNCATED;
        }
        entry.text += text;
        if (part) addPart(entry.parts, part, text);
        this.emit(sessionId, { type: 'delta', key, text, ...(part ? { part } : {}) });
      },
      close: () => {
        if (streams.get(key) !== entry) return;
        streams.delete(key);
        if (streams.size === 0) this.live.delete(sessionId);
        this.emit(sessionId, { type: 'close', key });
      },
    };
  }

  /** The session's streams in progress, as `open` frames holding their text so far. */
  snapshot(sessionId: string): StreamFrame[] {
    return [...(this.live.get(sessionId)?.entries() ?? [])].map(([key, e]) => ({
      type: 'open',
      key,
      item: e.item,
      attempt: e.attempt,
      worker: this.worker,
      text: e.text,
      ...(e.parts.length > 0 ? { parts: e.parts.map((p) => ({ ...p })) } : {}),
    }));
  }

  /** Calls `fn` with the session's current streams, then with every frame after them; returns the unsubscribe. */
  subscribe(sessionId: string, fn: (f: StreamFrame) => void): () => void {
    for (const f of this.snapshot(sessionId)) fn(f);
    return this.subscribers.add(sessionId, fn);
  }
}
