// SessionLog: reads any slice of a session's log, of any age. Sealed segments come from the session archive
// (following a fork's link to its source), the live tail from the running workflow by query.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { eventsQuery, type EventsPage } from '../session/contract';
import type { SessionArchive } from '../archive';
import type { SessionEvent } from '../session/events';
import { eventsDigest } from '../session/digest';
import { PlatformError } from '../session/platform-error';

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

export class MissingEventsError extends PlatformError {}

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
      const why = error
        ? `the session archive could not be read: ${error.message}`
        : 'they are not in the session archive';
      throw new MissingEventsError(
        `events ${from} to ${page.firstSeq - 1} of session ${sessionId} are not in the live run, and ${why}`,
      );
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
  private async fromArchive(
    sessionId: string,
    from: number,
    limit: number,
  ): Promise<{ page?: EventsPage; error?: Error }> {
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
export async function readEvents(
  log: SessionLog,
  sessionId: string,
  from: number,
  limit = Infinity,
): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  while (out.length < limit) {
    const page = await log.read(sessionId, from + out.length, Math.min(PAGE, limit - out.length));
    if (page.events.length === 0) break;
    out.push(...page.events);
  }
  return out;
}

/** What a model call's input says of the events appended since the previous call of its run: their digest. */
export interface LogTail {
  /** The first event the digest covers; the events before it were read by the run's previous model call. */
  fromSeq: number;
  /** eventsDigest of events fromSeq..throughSeq. */
  digest: string;
}

/** A session's cached stretch of log: events[i] has seq first + i; those after verifiedThrough came from the push. */
interface CachedStretch {
  first: number;
  events: SessionEvent[];
  verifiedThrough: number;
}

/**
 * Keeps a recent contiguous stretch of each session's log in memory, so a model call fetches only the events
 * appended since the last one. Safe because the log is append-only: a cached event is never stale.
 *
 * The brain worker also hands it the events each workflow task appends (`pushed`), before the task's completion
 * goes to the server. They count only once a model call's input vouches for them: the workflow that scheduled
 * the call names a digest of the events since its previous call (`LogTail`), so a call that finds them cached,
 * and the digest matching, reads nothing. Otherwise the pushed events are dropped and read from the log.
 */
export class CachedSessionLog {
  private readonly cache = new Map<string, CachedStretch>();
  /** Reads whose events all came from the cache, and reads that went to the log. */
  readonly stats = { cached: 0, read: 0 };

  constructor(
    readonly inner: SessionLog,
    private readonly maxSessions = 256,
  ) {}

  /**
   * An event a workflow task of this worker appended. Kept only where it continues a session's cached stretch;
   * a later attempt of the task replaces what an earlier one pushed, but never an event a read vouched for.
   */
  pushed(sessionId: string, event: SessionEvent): void {
    const c = this.cache.get(sessionId);
    if (!c || event.seq <= c.verifiedThrough) return;
    const next = c.first + c.events.length;
    if (event.seq > next) return;
    if (event.seq < next) c.events.length = event.seq - c.first;
    c.events.push(event);
  }

  /** Returns events from..through inclusive. */
  async readRange(sessionId: string, from: number, through: number, tail?: LogTail): Promise<SessionEvent[]> {
    const held = this.cache.get(sessionId);
    this.cache.delete(sessionId);
    let c: CachedStretch =
      held && from >= held.first && from <= held.first + held.events.length
        ? held
        : { first: from, events: [], verifiedThrough: from - 1 };
    if (!this.vouched(c, through, tail)) {
      // What the push added stands unconfirmed: read it again from the log.
      if (c.events.length > c.verifiedThrough + 1 - c.first) c.events.length = c.verifiedThrough + 1 - c.first;
      while (c.first + c.events.length <= through) {
        const next = c.first + c.events.length;
        // What a model call fetches is the tail appended since its last call, which the live run holds: no archive
        // lookup (a directory listing, or a database query) for it.
        const n = Math.min(PAGE, through + 1 - next);
        const page = await (this.inner.readTail
          ? this.inner.readTail(sessionId, next, n)
          : this.inner.read(sessionId, next, n));
        if (page.events.length === 0)
          throw new MissingEventsError(`session ${sessionId} has no event ${next} (wanted through ${through})`);
        c.events.push(...page.events);
        c.verifiedThrough = c.first + c.events.length - 1;
      }
      this.stats.read++;
    } else {
      c.verifiedThrough = Math.max(c.verifiedThrough, through);
      this.stats.cached++;
    }
    // Keep only what the next call can use: the window from `from` on.
    if (from > c.first) c = { first: from, events: c.events.slice(from - c.first), verifiedThrough: c.verifiedThrough };
    this.cache.set(sessionId, c);
    if (this.cache.size > this.maxSessions) this.cache.delete(this.cache.keys().next().value as string);
    return c.events.slice(0, through + 1 - from);
  }

  /** Whether the cache holds the events through `through` and the call's tail digest vouches for what was pushed. */
  private vouched(c: CachedStretch, through: number, tail: LogTail | undefined): boolean {
    if (c.first + c.events.length <= through) return false;
    if (c.verifiedThrough >= through) return true;
    if (!tail || tail.fromSeq < c.first || tail.fromSeq > c.verifiedThrough + 1) return false;
    return eventsDigest(c.events.slice(tail.fromSeq - c.first, through + 1 - c.first)) === tail.digest;
  }
}
