// `event_deltas` previews for one stream connection: the workers' live frames of a model reply (relayed by
// src/stream/relay.ts) as the SDK's `event_start` and `event_delta` events. A preview names the id the buffered
// event will carry: a reply to the call that read the log through seq T is appended at seq T + 1 unless the log
// took something else meanwhile, and event ids derive from (session, seq, part). Best effort, never stored.
import type {
  BetaManagedAgentsDeltaEvent,
  BetaManagedAgentsDeltaType,
  BetaManagedAgentsStartEvent,
} from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import type { StreamFrame, StreamPart } from '../../stream/hub';
import { MESSAGE_PART, eventId, thinkingPart, type ApiSessionEvent } from './projection';

export type PreviewEvent = BetaManagedAgentsStartEvent | BetaManagedAgentsDeltaEvent;

/** Ids of buffered events a connection remembers having sent, so a late frame of a concluded preview is dropped. */
const REMEMBERED = 256;

interface Preview {
  attempt: number;
  /** The log seq the reply is expected at. */
  seq: number;
  messageId: string;
  /** The reply's text blocks (by block index) in the order they appear: their index in `agent.message.content`. */
  textBlocks: Map<number, number>;
  thinkingBlocks: Map<number, number>;
  started: boolean;
  /** Concluded (its buffered event was sent, or its request ended): nothing more is sent for it. */
  done: boolean;
}

export class PreviewMapper {
  private readonly previews = new Map<string, Preview>();
  private readonly concluded = new Set<string>();

  constructor(
    private readonly sessionId: string,
    private readonly wanted: ReadonlySet<BetaManagedAgentsDeltaType>,
    /** Whether the buffered event `id` is in the log already (a preview that opens late is not started). */
    private readonly known: (id: string) => boolean,
  ) {}

  /** The previews a relayed frame makes. */
  frame(f: StreamFrame): PreviewEvent[] {
    const out: PreviewEvent[] = [];
    if (f.type === 'open') {
      if (f.item.kind !== 'model') return out;
      const seq = f.item.throughSeq + 1;
      const messageId = eventId(this.sessionId, seq, MESSAGE_PART);
      const prev = this.previews.get(f.key);
      if (prev && prev.attempt > f.attempt) return out;
      const p: Preview = {
        attempt: f.attempt,
        seq,
        messageId,
        textBlocks: new Map(),
        thinkingBlocks: new Map(),
        started: false,
        done: this.concluded.has(messageId) || this.known(messageId),
      };
      this.previews.set(f.key, p);
      for (const part of f.parts ?? []) this.part(p, part, part.text, out);
      return out;
    }
    const p = this.previews.get(f.key);
    if (!p) return out;
    if (f.type === 'close') {
      this.previews.delete(f.key);
      return out;
    }
    if (f.part) this.part(p, f.part, f.text, out);
    return out;
  }

  private part(p: Preview, part: StreamPart, text: string, out: PreviewEvent[]): void {
    if (p.done) return;
    if (part.kind === 'thinking') {
      if (p.thinkingBlocks.has(part.block)) return;
      const k = p.thinkingBlocks.size;
      p.thinkingBlocks.set(part.block, k);
      const id = eventId(this.sessionId, p.seq, thinkingPart(k));
      if (this.wanted.has('agent.thinking') && !this.concluded.has(id))
        out.push({ type: 'event_start', event: { type: 'agent.thinking', id } });
      return;
    }
    if (part.kind !== 'text' || text === '' || !this.wanted.has('agent.message')) return;
    let index = p.textBlocks.get(part.block);
    if (index === undefined) {
      index = p.textBlocks.size;
      p.textBlocks.set(part.block, index);
    }
    // A retried attempt starts the same preview again; its first delta follows a fresh event_start.
    if (!p.started) {
      p.started = true;
      out.push({ type: 'event_start', event: { type: 'agent.message', id: p.messageId } });
    }
    out.push({
      type: 'event_delta',
      event_id: p.messageId,
      delta: { type: 'content_delta', content: { type: 'text', text }, index },
    });
  }

  /** Buffered events written to the connection: each concludes the preview of its id, and a request's end its own. */
  durable(events: readonly ApiSessionEvent[]): void {
    for (const e of events) {
      if (e.type === 'agent.message' || e.type === 'agent.thinking') this.remember(e.id);
      if (e.type !== 'span.model_request_end' && e.type !== 'agent.message') continue;
      for (const p of this.previews.values()) {
        if (
          e.type === 'agent.message'
            ? p.messageId === e.id
            : eventId(this.sessionId, p.seq, 0) === e.model_request_start_id
        )
          p.done = true;
      }
    }
  }

  private remember(id: string): void {
    this.concluded.add(id);
    if (this.concluded.size > REMEMBERED) this.concluded.delete(this.concluded.values().next().value as string);
  }
}
