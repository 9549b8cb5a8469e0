// What every session archive shares: the interface, the segment shape, the payload encoding of a sealed segment,
// and the in-memory cache of decoded segments (a sealed segment never changes, so a decoded one is never stale).
import type { DataConverter } from '@temporalio/common';
import { decodeValue, encodeValue } from '../storage/payload-seal';
import { z } from 'zod';
import { SessionEventSchema, type SessionEvent } from '../session/events';

/** A sealed stretch of a session's log, [fromSeq, throughSeq]: its own events, or a reference to another session's. */
export type Segment =
  | { kind: 'events'; fromSeq: number; throughSeq: number }
  | { kind: 'link'; fromSeq: number; throughSeq: number; sessionId: string };

export interface SessionArchive {
  /** Stores events [fromSeq, fromSeq + events.length). Idempotent: sealing a stored range again changes nothing. */
  seal(sessionId: string, events: readonly SessionEvent[]): Promise<Segment>;
  /** Records that [0, throughSeq] of `sessionId` are events of another session (a fork), without copying them. */
  link(sessionId: string, source: { sessionId: string; throughSeq: number }): Promise<Segment>;
  /** The segment holding `seq`, if one does. */
  find(sessionId: string, seq: number): Promise<Segment | undefined>;
  /** Events [from, from + limit) of one `events` segment. */
  readSegment(sessionId: string, segment: Segment, from: number, limit: number): Promise<SessionEvent[]>;
  /** Every segment of a session, in seq order. */
  segments(sessionId: string): Promise<Segment[]>;
  /**
   * Removes every segment of a session for good (a session delete). Idempotent: deleting a session the archive
   * holds nothing of changes nothing. Segments of other sessions that link to it are left as they are.
   */
  delete(sessionId: string): Promise<void>;
  /** Releases what the archive holds open (a database pool); the archive is not used after. */
  close?(): Promise<void>;
}

/** The segment `events` make, after checking they are contiguous. */
export function segmentOf(events: readonly SessionEvent[]): Segment & { kind: 'events' } {
  if (events.length === 0) throw new Error('nothing to seal');
  const fromSeq = events[0].seq;
  events.forEach((e, i) => {
    if (e.seq !== fromSeq + i) throw new Error(`events to seal are not contiguous at seq ${e.seq}`);
  });
  return { kind: 'events', fromSeq, throughSeq: fromSeq + events.length - 1 };
}

/**
 * One value as the bytes of one Temporal payload, encoded by the data converter's payload codecs: the same
 * encoding as the history, so a segment is encrypted under CODEC_KEY when the history is.
 */
export { decodeValue, encodeValue };

const EventsSchema = z.array(SessionEventSchema);

export async function decodeEvents(dataConverter: DataConverter, bytes: Uint8Array): Promise<SessionEvent[]> {
  return EventsSchema.parse(await decodeValue(dataConverter, bytes)) as SessionEvent[];
}

/**
 * Decoded segments, least recently used out first, bounded by count and by the encoded bytes they came from
 * (a segment may be tens of megabytes: see docs/design/state.md).
 */
export class SegmentCache {
  private readonly entries = new Map<string, { events: SessionEvent[]; bytes: number }>();
  private bytes = 0;

  constructor(
    private readonly maxEntries = 64,
    private readonly maxBytes = 256 * 1024 * 1024,
  ) {}

  get(key: string): SessionEvent[] | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.events;
  }

  set(key: string, events: SessionEvent[], bytes: number): void {
    this.delete(key);
    this.entries.set(key, { events, bytes });
    this.bytes += bytes;
    while (this.entries.size > 1 && (this.entries.size > this.maxEntries || this.bytes > this.maxBytes))
      this.delete(this.entries.keys().next().value as string);
  }

  /** Drops every entry whose key starts with `prefix` (the segments of a deleted session). */
  dropPrefix(prefix: string): void {
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix)) this.delete(key);
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }
}

/** Events [from, from + limit) of a decoded segment that starts at `fromSeq`. */
export function sliceSegment(events: SessionEvent[], fromSeq: number, from: number, limit: number): SessionEvent[] {
  const start = Math.max(0, from - fromSeq);
  return events.slice(start, start + limit);
}
