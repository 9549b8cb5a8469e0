// One feed per session in an API process, however many requests and streams use it: the session's log
// projected incrementally (the projector's state is kept at the seq it reached, so neither a list nor a stream
// refolds from seq 0), and, while anyone streams it, one follower that reads the tail when the session's history
// changes (src/log/history-doorbell.ts) and fans the new events out. With the codec key, the follower takes the
// events of each completed workflow task from the batch its brain worker pushed (src/api/sessions/log-batches.ts) when that
// batch provably continues the log, and reads the log otherwise: the log stays the only source of events.
import type { Client } from '@temporalio/client';
import { followHistory, type CompletedTask } from '../../log/history-doorbell';
import type { SessionEvent } from '../../session/events';
import { streamUrlOf } from '../../stream/token';
import { PushedLog, pushedEvents } from './log-batches';
import type { EventsPage } from '../../session/contract';
import type { SessionLog } from '../../log/session-log';
import { SessionProjector, type ApiSessionEvent } from './projection';

/** Polling interval when the server cannot be long-polled (an old server, a permission refused). */
const FALLBACK_POLL_MS = 150;
/** A follower outlives its last stream this long, for the client that reconnects. */
const LINGER_MS = 15_000;
/** Feeds nobody streams are dropped, oldest first, once the feeds hold more events than this. */
const MAX_CACHED_EVENTS = 500_000;
const PAGE = 1000;
/** A page this big may have been cut for size, not because the log ended there. */
const CUT_BYTES = 512 * 1024;
/** How long a ring waits for the pushed batch of its task (it usually arrives first) before reading the log. */
const PUSH_WAIT_MS = 25;

type Listener = (events: readonly ApiSessionEvent[]) => void;
type TailLog = SessionLog & { readTail?: SessionLog['read'] };

/**
 * What this process's feeds did, for the benchmark: reads of the log and how long the last 1,000 took (ms); rings
 * proven by pushed batches, how many of those waited for a batch, and for the last 1,000 rings, the time from the
 * last task's commit (the server's record of it) to the ring, and from the ring to the pushed events' delivery.
 */
export const feedStats = {
  logReads: 0,
  feeds: 0,
  followers: 0,
  readMs: [] as number[],
  pushedEvents: 0,
  pushedRings: 0,
  pushWaits: 0,
  ringLagMs: [] as number[],
  ringToDeliverMs: [] as number[],
};

const keepLast = (a: number[], v: number) => {
  a.push(v);
  if (a.length > 1000) a.shift();
};

export class SessionFeed {
  private readonly projector: SessionProjector;
  /** Every API event of the log so far, in order. */
  readonly events: ApiSessionEvent[] = [];
  private reading?: Promise<void>;
  private queued?: Promise<void>;
  private readonly listeners = new Set<Listener>();
  private follower?: AbortController;
  private pushed?: PushedLog;
  private linger?: NodeJS.Timeout;
  /** The log holds `session_ended`: nothing more will come. */
  ended = false;
  lastUsed = Date.now();

  constructor(
    readonly sessionId: string,
    private readonly log: TailLog,
    private readonly client: Client,
    private readonly note: (m: string) => void,
    /** The codec key the workers' stream tokens derive from; without it, every ring reads the log. */
    private readonly pushKey?: Buffer,
  ) {
    this.projector = new SessionProjector(sessionId);
  }

  get size(): number {
    return this.events.length;
  }

  /** The next log seq the feed will read. */
  get seq(): number {
    return this.projector.seq;
  }

  get streamed(): boolean {
    return this.listeners.size > 0;
  }

  get following(): boolean {
    return this.follower !== undefined;
  }

  /** A coordinator's threads, as far as the feed has read its log. */
  get threads() {
    return this.projector.threads;
  }

  /** The model's `toolu_…` id behind an `agent.*_use` event id. */
  toolUseIdOf(apiEventId: string): string | undefined {
    return this.projector.toolUseIdOf(apiEventId);
  }

  /** Reads what the log appended since the last read; resolves once everything appended before the call is in. */
  catchUp(): Promise<void> {
    this.lastUsed = Date.now();
    if (!this.reading) {
      this.reading = this.readTail().finally(() => (this.reading = undefined));
      return this.reading;
    }
    // A read in flight may have been answered before this call: one more read follows it, for every caller meanwhile.
    this.queued ??= this.reading
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.catchUp();
      });
    return this.queued;
  }

  private async readTail(): Promise<void> {
    for (;;) {
      const from = this.projector.seq;
      feedStats.logReads++;
      const t0 = Date.now();
      // The first read of a feed may start in a sealed segment; later ones follow the live run's tail.
      const page: EventsPage =
        from > 0 && this.log.readTail
          ? await this.log.readTail(this.sessionId, from, PAGE)
          : await this.log.read(this.sessionId, from, PAGE);
      keepLast(feedStats.readMs, Date.now() - t0);
      if (page.events.length === 0) return;
      this.deliver(page.events);
      if (page.events.length < PAGE && JSON.stringify(page.events).length < CUT_BYTES) return;
    }
  }

  /** Projects log events that continue the feed (from its seq on) and fans them out. */
  private deliver(events: readonly SessionEvent[]): void {
    const out = this.projector.push(events);
    for (const e of out) this.events.push(e);
    if (out.some((e) => e.type === 'session.status_terminated')) this.ended = true;
    if (out.length > 0) for (const fn of this.listeners) fn(out);
  }

  /**
   * After the history says `tasks` completed: their events from the pushed batches if those prove what the log
   * appended, else from the log. A read in flight (or queued) reads past these tasks anyway, so it is joined.
   */
  private async onRing(tasks: CompletedTask[], read: () => Promise<void>): Promise<void> {
    const pushed = this.pushed;
    if (!pushed || tasks.length === 0) return read();
    const rungAt = Date.now();
    keepLast(feedStats.ringLagMs, rungAt - tasks[tasks.length - 1].completedAtMs);
    const workers = [...new Set(tasks.map((t) => streamUrlOf(t.identity)).filter((u): u is string => u !== undefined))];
    for (const url of workers) pushed.follow(url);
    let events = pushedEvents(pushed.batches, tasks, this.seq);
    // The batch usually beats the ring here; if not, it is on its way from a worker this feed follows.
    if (!events && workers.some((u) => pushed.following(u))) {
      feedStats.pushWaits++;
      await pushed.nextBatch(PUSH_WAIT_MS);
      events = pushedEvents(pushed.batches, tasks, this.seq);
    }
    if (!events || this.reading) return read();
    feedStats.pushedRings++;
    feedStats.pushedEvents += events.length;
    keepLast(feedStats.ringToDeliverMs, Date.now() - rungAt);
    this.lastUsed = Date.now();
    this.deliver(events);
    pushed.prune(this.seq);
  }

  /** Calls `fn` with each batch of events appended from now on; returns the unsubscribe. */
  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    clearTimeout(this.linger);
    if (!this.follower && !this.ended) this.follow();
    return () => {
      this.listeners.delete(fn);
      if (this.listeners.size > 0) return;
      clearTimeout(this.linger);
      this.linger = setTimeout(() => {
        if (this.listeners.size > 0) return;
        this.follower?.abort();
        this.follower = undefined;
        this.pushed?.close();
        this.pushed = undefined;
      }, LINGER_MS);
      this.linger.unref();
    };
  }

  private follow(): void {
    const ctl = new AbortController();
    this.follower = ctl;
    feedStats.followers++;
    const read = () =>
      this.catchUp().catch((err: Error) =>
        this.note(`api: reading the log of ${this.sessionId} failed: ${err.message.split('\n')[0]}`),
      );
    if (this.pushKey) this.pushed ??= new PushedLog(this.sessionId, this.pushKey);
    // Rings are handled in order: a pushed batch is delivered only after everything rung before it.
    let rings: Promise<void> = Promise.resolve();
    const ringing = followHistory(
      this.client,
      this.sessionId,
      (_r, tasks) => void (rings = rings.then(() => this.onRing(tasks, read))),
      ctl.signal,
    );
    void ringing
      .catch(async (err: Error) => {
        if (ctl.signal.aborted) return;
        this.note(
          `api: cannot long-poll the history of ${this.sessionId} (${err.message.split('\n')[0]}); polling its log every ${FALLBACK_POLL_MS} ms`,
        );
        while (!ctl.signal.aborted && !this.ended) {
          await read();
          await new Promise((r) => setTimeout(r, FALLBACK_POLL_MS));
        }
      })
      .finally(() => {
        feedStats.followers--;
        if (this.follower === ctl) this.follower = undefined;
      });
  }

  close(): void {
    clearTimeout(this.linger);
    this.follower?.abort();
    this.pushed?.close();
  }
}

/** The feeds of one API process. */
export class SessionFeeds {
  private readonly feeds = new Map<string, SessionFeed>();

  constructor(
    private readonly log: SessionLog,
    private readonly client: Client,
    private readonly note: (m: string) => void = () => undefined,
    private readonly pushKey?: Buffer,
  ) {}

  /** The session's feed, caught up with its log. */
  async get(sessionId: string): Promise<SessionFeed> {
    let feed = this.feeds.get(sessionId);
    if (!feed) {
      feed = new SessionFeed(sessionId, this.log, this.client, this.note, this.pushKey);
      this.feeds.set(sessionId, feed);
      feedStats.feeds = this.feeds.size;
      this.evict();
    }
    await feed.catchUp();
    return feed;
  }

  /** The model's id behind a call's event id: from the feed as it stands, else after reading what the log appended since. */
  async toolUseIdOf(sessionId: string, apiEventId: string): Promise<string | undefined> {
    return this.feeds.get(sessionId)?.toolUseIdOf(apiEventId) ?? (await this.get(sessionId)).toolUseIdOf(apiEventId);
  }

  /** Drops the least recently used feeds nobody streams while they hold too many events. */
  private evict(): void {
    let total = 0;
    for (const f of this.feeds.values()) total += f.size;
    if (total <= MAX_CACHED_EVENTS) return;
    for (const f of [...this.feeds.values()].sort((a, b) => a.lastUsed - b.lastUsed)) {
      if (total <= MAX_CACHED_EVENTS) break;
      if (f.streamed || f.following) continue;
      this.feeds.delete(f.sessionId);
      total -= f.size;
    }
    feedStats.feeds = this.feeds.size;
  }

  close(): void {
    for (const f of this.feeds.values()) f.close();
    this.feeds.clear();
  }
}
