// SessionLog: reads any slice of a session's log. Here the live run is read by query, with a worker-side cache.
import type { Client } from '@temporalio/client';
import { eventsQuery, type EventsPage } from '../workflows/messages';
import type { SessionEvent } from '../session/events';

/** The minimal contract: read events [from, from+limit) of a session. Events never change once appended. */
export interface SessionLog {
  read(sessionId: string, from: number, limit: number): Promise<EventsPage>;
}

const PAGE = 1000;

/** Reads the live run through the `events` query. */
export class LiveSessionLog implements SessionLog {
  constructor(private readonly client: Client) {}

  async read(sessionId: string, from: number, limit: number): Promise<EventsPage> {
    return this.client.workflow.getHandle(sessionId).query(eventsQuery, { from, limit: Math.min(limit, PAGE) });
  }
}

/**
 * Keeps each session's prefix in memory, so a model call fetches only the events appended since the last one.
 * Safe because the log is append-only: a cached event is never stale.
 */
export class CachedSessionLog {
  private readonly cache = new Map<string, SessionEvent[]>();

  constructor(private readonly inner: SessionLog, private readonly maxSessions = 256) {}

  /** Returns events 0..throughSeq inclusive. */
  async readThrough(sessionId: string, throughSeq: number): Promise<SessionEvent[]> {
    let cached = this.cache.get(sessionId) ?? [];
    this.cache.delete(sessionId);
    while (cached.length <= throughSeq) {
      const page = await this.inner.read(sessionId, cached.length, Math.min(PAGE, throughSeq + 1 - cached.length));
      if (page.events.length === 0) throw new Error(`session ${sessionId} has no event ${cached.length} (wanted through ${throughSeq})`);
      cached = cached.concat(page.events);
    }
    this.cache.set(sessionId, cached);
    if (this.cache.size > this.maxSessions) this.cache.delete(this.cache.keys().next().value as string);
    return cached.slice(0, throughSeq + 1);
  }
}
