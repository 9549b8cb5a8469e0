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
 * One frame on the wire. `open` carries everything streamed so far, so a late subscriber misses nothing. A relay
 * (src/stream/relay.ts), which merges the streams of several workers, names the worker on every frame.
 */
export const StreamFrameSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('open'), key: z.string(), item: StreamItemSchema, attempt: z.number().int().positive(), worker: z.string(), text: z.string() }).strict(),
  z.object({ type: z.literal('delta'), key: z.string(), text: z.string(), worker: z.string().optional() }).strict(),
  z.object({ type: z.literal('close'), key: z.string(), worker: z.string().optional() }).strict(),
]);
export type StreamFrame = z.infer<typeof StreamFrameSchema>;

export interface Publisher {
  write(text: string): void;
  close(): void;
}

/** A stream's preview is kept up to this many characters; the rest is in the log once the item finishes. */
export const MAX_PREVIEW_CHARS = 256 * 1024;
const TRUNCATED = '\n[live preview truncated; the whole result arrives in the log]\n';

export const streamKey = (item: StreamItem): string => (item.kind === 'model' ? `model:${item.throughSeq}` : `tool:${item.toolUseId}`);

interface Live {
  item: StreamItem;
  attempt: number;
  text: string;
  full: boolean;
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
    const entry: Live = { item, attempt, text: '', full: false };
    streams.set(key, entry);
    this.emit(sessionId, { type: 'open', key, item, attempt, worker: this.worker, text: '' });
    return {
      write: (text) => {
        if (streams.get(key) !== entry || entry.full || text === '') return;
        if (entry.text.length + text.length > MAX_PREVIEW_CHARS) {
          entry.full = true;
          text = text.slice(0, Math.max(0, MAX_PREVIEW_CHARS - entry.text.length)) + TRUNCATED;
        }
        entry.text += text;
        this.emit(sessionId, { type: 'delta', key, text });
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
    return [...(this.live.get(sessionId)?.entries() ?? [])].map(([key, e]) => ({ type: 'open', key, item: e.item, attempt: e.attempt, worker: this.worker, text: e.text }));
  }

  /** Calls `fn` with the session's current streams, then with every frame after them; returns the unsubscribe. */
  subscribe(sessionId: string, fn: (f: StreamFrame) => void): () => void {
    for (const f of this.snapshot(sessionId)) fn(f);
    return this.subscribers.add(sessionId, fn);
  }
}
