// The session archive on PostgreSQL (DATABASE_URL): one row per sealed segment, shared by every host's workers,
// the CLI and the API. Schema: migration `archive_segments` in src/storage/migrations.ts.
import type { DataConverter } from '@temporalio/common';
import type { Db, Queryable } from '../storage/db';
import type { SessionEvent } from '../session/events';
import {
  SegmentCache,
  decodeEvents,
  encodeValue,
  segmentOf,
  sliceSegment,
  type Segment,
  type SessionArchive,
} from './segment';

interface Row {
  from_seq: number;
  through_seq: number;
  kind: 'events' | 'link';
  link_session_id: string | null;
}

const COLUMNS = 'from_seq, through_seq, kind, link_session_id';
// The first key of the advisory lock a seal takes on its session (the second is the session id's hash).
const SEAL_LOCK = 0x6d617263;

const toSegment = (r: Row): Segment =>
  r.kind === 'link'
    ? { kind: 'link', fromSeq: r.from_seq, throughSeq: r.through_seq, sessionId: r.link_session_id! }
    : { kind: 'events', fromSeq: r.from_seq, throughSeq: r.through_seq };

/** The segment of `sessionId` holding `seq`: segments never overlap, so it is the one starting nearest below. */
async function covering(q: Queryable, sessionId: string, seq: number): Promise<Segment | undefined> {
  const [row] = await q.query<Row>(
    `select ${COLUMNS} from archive_segments where session_id = $1 and from_seq <= $2 order by from_seq desc limit 1`,
    [sessionId, seq],
  );
  return row && row.through_seq >= seq ? toSegment(row) : undefined;
}

/**
 * Segments as rows keyed by (session_id, from_seq), each `events` row's payload one Temporal payload encoded by
 * the history's payload codec (encrypted under CODEC_KEY when the history is). Rows are written once and never
 * changed; a seal takes a per-session advisory lock, stores only the part of its range no row holds yet and
 * never lets two segments overlap, so sealing a range again, or from two workers at once, stores it once.
 */
export class PostgresSessionArchive implements SessionArchive {
  private readonly cache = new SegmentCache();
  /** Segments found, by session: a sealed segment never changes, so a read inside one needs no query. */
  private readonly known = new Map<string, Segment[]>();
  private opened?: Promise<Db>;

  /** `db` is an open database (left open by close()), or how to open one (closed by close()). */
  constructor(
    private readonly db: Db | (() => Promise<Db>),
    private readonly dataConverter: DataConverter = {},
  ) {}

  private conn(): Promise<Db> {
    if (typeof this.db !== 'function') return Promise.resolve(this.db);
    const open = this.db;
    // A failed open (the server is down) is tried again by the next call.
    this.opened ??= open().catch((err: unknown) => {
      this.opened = undefined;
      throw new Error(`cannot open the session archive in PostgreSQL (DATABASE_URL): ${(err as Error).message}`);
    });
    return this.opened;
  }

  /** Opens the database now (creating and migrating it if needed), so a process can fail at start, not at its first seal. */
  async ready(): Promise<void> {
    await this.conn();
  }

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (opened) await (await opened.catch(() => undefined))?.close();
  }

  async seal(sessionId: string, events: readonly SessionEvent[]): Promise<Segment> {
    const segment = segmentOf(events);
    const whole = await encodeValue(this.dataConverter, events);
    const db = await this.conn();
    await db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [SEAL_LOCK, sessionId]);
      let rest = events;
      while (rest.length > 0) {
        const from = rest[0].seq;
        const held = await covering(tx, sessionId, from);
        if (held) {
          // Already sealed (or, in a fork's linked prefix, the source's): the same events, since a log never changes.
          rest = rest.slice(held.throughSeq + 1 - from);
          continue;
        }
        const [next] = await tx.query<{ from_seq: number }>(
          'select from_seq from archive_segments where session_id = $1 and from_seq > $2 and from_seq <= $3 order by from_seq limit 1',
          [sessionId, from, rest[rest.length - 1].seq],
        );
        const part = next ? rest.slice(0, next.from_seq - from) : rest;
        const payload = part === events ? whole : await encodeValue(this.dataConverter, part);
        await tx.query(
          `insert into archive_segments (session_id, from_seq, through_seq, kind, payload) values ($1, $2, $3, 'events', $4) on conflict (session_id, from_seq) do nothing`,
          [
            sessionId,
            from,
            from + part.length - 1,
            Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
          ],
        );
        rest = rest.slice(part.length);
      }
    });
    return segment;
  }

  async link(sessionId: string, source: { sessionId: string; throughSeq: number }): Promise<Segment> {
    const segment: Segment = { kind: 'link', fromSeq: 0, throughSeq: source.throughSeq, sessionId: source.sessionId };
    const db = await this.conn();
    await db.query(
      `insert into archive_segments (session_id, from_seq, through_seq, kind, link_session_id) values ($1, 0, $2, 'link', $3) on conflict (session_id, from_seq) do nothing`,
      [sessionId, source.throughSeq, source.sessionId],
    );
    return segment;
  }

  async segments(sessionId: string): Promise<Segment[]> {
    const db = await this.conn();
    const rows = await db.query<Row>(
      `select ${COLUMNS} from archive_segments where session_id = $1 order by from_seq`,
      [sessionId],
    );
    return rows.map(toSegment);
  }

  async delete(sessionId: string): Promise<void> {
    const db = await this.conn();
    // Under the seal lock: a seal in progress finishes first, so no segment of it lands after the delete.
    await db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [SEAL_LOCK, sessionId]);
      await tx.query('delete from archive_segments where session_id = $1', [sessionId]);
    });
    this.known.delete(sessionId);
    this.cache.dropPrefix(`${sessionId}\0`);
  }

  async find(sessionId: string, seq: number): Promise<Segment | undefined> {
    const seen = this.known.get(sessionId);
    const hit = seen?.find((s) => s.fromSeq <= seq && seq <= s.throughSeq);
    if (hit) return hit;
    const found = await covering(await this.conn(), sessionId, seq);
    if (found) {
      this.known.delete(sessionId);
      this.known.set(sessionId, [...(seen ?? []).slice(-15), found]);
      if (this.known.size > 256) this.known.delete(this.known.keys().next().value as string);
    }
    return found;
  }

  async readSegment(sessionId: string, segment: Segment, from: number, limit: number): Promise<SessionEvent[]> {
    if (segment.kind !== 'events') throw new Error('a link segment holds no events of its own');
    const key = `${sessionId}\0${segment.fromSeq}`;
    let events = this.cache.get(key);
    if (!events) {
      const db = await this.conn();
      // As base64, not bytea's text form (hex): a third less to send and parse (see bench/README.md, `archive`).
      const [row] = await db.query<{ payload: string; through_seq: number }>(
        `select encode(payload, 'base64') as payload, through_seq from archive_segments where session_id = $1 and from_seq = $2 and kind = 'events'`,
        [sessionId, segment.fromSeq],
      );
      if (!row || row.through_seq !== segment.throughSeq)
        throw new Error(`session ${sessionId} has no sealed segment ${segment.fromSeq}..${segment.throughSeq}`);
      const bytes = Buffer.from(row.payload, 'base64');
      events = await decodeEvents(this.dataConverter, bytes);
      this.cache.set(key, events, bytes.length);
    }
    return sliceSegment(events, segment.fromSeq, from, limit);
  }
}
