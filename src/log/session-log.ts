// SessionLog: reads any slice of a session's log, of any age. Sealed segments come from the session archive
// (following a fork's link to its source), the live tail from the running workflow by query.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { eventsQuery, type EventsPage } from '../session/contract';
import type { SessionArchive } from '../archive';
import type { SessionEvent } from '../session/events';

/** The minimal contract: read events [from, from+limit) of a session. Events never change once appended. */
export interface SessionLog {
  read(sessionId: string, from: number, limit: number): Promise<EventsPage>;
  /** As `read`, for a reader following the tail: the live run first, the archive only for what it no longer holds. */
  readTail?(sessionId: string, from: number, limit: number): Promise<EventsPage>;
}

const PAGE = 1000;

/** Reads the live run through the `events` query. A session with no workflow reads as empty. */
export class LiveSessionLog implements SessionLog {
  constructor(private readonly client: Client) {}

  async read(sessionId: string, from: number, limit: number): Promise<EventsPage> {
    try {
      return await this.client.workflow.getHandle(sessionId).query(eventsQuery, { from, limit: Math.min(limit, PAGE) });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { events: [], nextSeq: from };
      throw err;
    }
  }
}

export class MissingEventsError extends Error {}

/** The archive first, then the live run. */
export class ArchivedSessionLog implements SessionLog {
  constructor(
    private readonly archive: SessionArchive,
    private readonly live: SessionLog,
  ) {}

  async read(sessionId: string, from: number, limit: number): Promise<EventsPage> {
    const archived = await this.fromArchive(sessionId, from, limit);
    if (archived.page) return archived.page;
    const page = await this.live.read(sessionId, from, limit);
    if (page.firstSeq !== undefined && from < page.firstSeq) {
      // The run that answered started after `from`: the run that held it sealed it into the archive before it
      // handed over, which may have happened between the archive lookup above and the query. Look again.
      const again = await this.fromArchive(sessionId, from, limit);
      if (again.page) return again.page;
      const error = again.error ?? archived.error;
      const why = error ? `the session archive could not be read: ${error.message}` : 'they are not in the session archive';
      throw new MissingEventsError(`events ${from} to ${page.firstSeq - 1} of session ${sessionId} are not in the live run, and ${why}`);
    }
    return page;
  }

  /**
   * As `read`, asking the live run first: for a reader that follows the tail, which no sealed segment holds yet.
   * A run that started after `from` sends it to the archive.
   */
  async readTail(sessionId: string, from: number, limit: number): Promise<EventsPage> {
    const page = await this.live.read(sessionId, from, limit);
    if (page.firstSeq === undefined || from < page.firstSeq) return this.read(sessionId, from, limit);
    return page;
  }

  /** The page at `from` if a sealed segment holds it. A broken archive must not stop reads of the live tail, which never need it. */
  private async fromArchive(sessionId: string, from: number, limit: number): Promise<{ page?: EventsPage; error?: Error }> {
    let segment;
    try {
      segment = await this.archive.find(sessionId, from);
    } catch (err) {
      return { error: err as Error };
    }
    if (!segment) return {};
    const n = Math.min(limit, segment.throughSeq + 1 - from);
    if (segment.kind === 'link') {
      const page = await this.read(segment.sessionId, from, n);
      return { page: { events: page.events, nextSeq: page.nextSeq } };
    }
    const events = await this.archive.readSegment(sessionId, segment, from, n);
    return { page: { events, nextSeq: from + events.length } };
  }
}

/** Reads events [from, from+limit) page by page, as many as there are up to `limit`. */
export async function readEvents(log: SessionLog, sessionId: string, from: number, limit = Infinity): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  while (out.length < limit) {
    const page = await log.read(sessionId, from + out.length, Math.min(PAGE, limit - out.length));
    if (page.events.length === 0) break;
    out.push(...page.events);
  }
  return out;
}

/**
 * Keeps a recent contiguous stretch of each session's log in memory, so a model call fetches only the events
 * appended since the last one. Safe because the log is append-only: a cached event is never stale.
 */
export class CachedSessionLog {
  private readonly cache = new Map<string, SessionEvent[]>();

  constructor(
    readonly inner: SessionLog,
    private readonly maxSessions = 256,
  ) {}

  /** Returns events from..through inclusive. */
  async readRange(sessionId: string, from: number, through: number): Promise<SessionEvent[]> {
    let cached = this.cache.get(sessionId) ?? [];
    this.cache.delete(sessionId);
    const start = cached[0]?.seq ?? from;
    if (from < start || from > start + cached.length) cached = [];
    const first = cached[0]?.seq ?? from;
    while (first + cached.length <= through) {
      const next = first + cached.length;
      // What a model call fetches is the tail appended since its last call, which the live run holds: no archive
      // lookup (a directory listing, or a database query) for it.
      const n = Math.min(PAGE, through + 1 - next);
      const page = await (this.inner.readTail ? this.inner.readTail(sessionId, next, n) : this.inner.read(sessionId, next, n));
      if (page.events.length === 0) throw new MissingEventsError(`session ${sessionId} has no event ${next} (wanted through ${through})`);
      cached = cached.concat(page.events);
    }
    // Keep only what the next call can use: the window from `from` on.
    if (from > first) cached = cached.slice(from - first);
    this.cache.set(sessionId, cached);
    if (this.cache.size > this.maxSessions) this.cache.delete(this.cache.keys().next().value as string);
    return cached.slice(0, through + 1 - from);
  }
}
