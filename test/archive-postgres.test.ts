// The session archive on a real PostgreSQL server: sealed once however often and by however many workers, fork
// links, paging without a query per page, a segment near the largest a run can seal, encrypted at rest, and a
// session delete that removes every segment of the session, on PostgreSQL and on disk alike.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSessionArchive, PostgresSessionArchive, sessionArchive } from '../src/archive';
import { ArchivedSessionLog, readEvents, type SessionLog } from '../src/log/session-log';
import { openDb, type Db } from '../src/storage/db';
import type { SessionEvent } from '../src/session/events';
import { freshPostgresDatabase } from './helpers/api';
import { testDataConverter } from './helpers/test-keys';

const t = '2026-01-01T00:00:00.000Z';
const events = (from: number, n: number, text = (seq: number) => `m${seq}`): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => ({ seq: from + i, time: t, type: 'user_message', text: text(from + i) }));
const nothingLive: SessionLog = { read: async (_id, from) => ({ events: [], nextSeq: from }) };

let pg: { url: string; drop(): Promise<void> };
let dataDir: string;
const opened: Db[] = [];
const open = async () => {
  const db = await openDb({ databaseUrl: pg.url, dataDir });
  opened.push(db);
  return db;
};

beforeAll(async () => {
  pg = await freshPostgresDatabase();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'archive-pg-'));
});
afterAll(async () => {
  await Promise.all(opened.map((d) => d.close().catch(() => undefined)));
  await pg?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A database that counts the statements sent through it. */
function counting(db: Db): Db & { count: number } {
  const c = {
    kind: db.kind,
    count: 0,
    query: <T>(sql: string, params?: unknown[]) => (c.count++, db.query<T>(sql, params)),
    transaction: <T>(fn: (tx: Parameters<Parameters<Db['transaction']>[0]>[0]) => Promise<T>) =>
      db.transaction((tx) => fn({ query: (s, p) => (c.count++, tx.query(s, p)) })),
    close: () => db.close(),
  };
  return c as Db & { count: number };
}

const rowsOf = async (db: Db, id: string) =>
  db.query<{ from_seq: number; through_seq: number; kind: string; sealed_at: Date }>(
    'select from_seq, through_seq, kind, sealed_at from archive_segments where session_id = $1 order by from_seq',
    [id],
  );

describe('PostgresSessionArchive', () => {
  it('seals segments, finds the one holding a seq, lists them in order, and pages through one', async () => {
    const archive = new PostgresSessionArchive(await open(), testDataConverter());
    await archive.seal('s1', events(5, 5));
    await archive.seal('s1', events(0, 5));
    await archive.seal('s1', events(10, 2500));
    expect(await archive.segments('s1')).toEqual([
      { kind: 'events', fromSeq: 0, throughSeq: 4 },
      { kind: 'events', fromSeq: 5, throughSeq: 9 },
      { kind: 'events', fromSeq: 10, throughSeq: 2509 },
    ]);
    expect(await archive.find('s1', 7)).toEqual({ kind: 'events', fromSeq: 5, throughSeq: 9 });
    expect(await archive.find('s1', 2510)).toBeUndefined();
    expect(await archive.find('other', 0)).toBeUndefined();
    const seg = (await archive.find('s1', 1000))!;
    expect((await archive.readSegment('s1', seg, 1000, 3)).map((e) => e.seq)).toEqual([1000, 1001, 1002]);
    expect((await archive.readSegment('s1', seg, 2508, 10)).map((e) => e.seq)).toEqual([2508, 2509]);
    const all = await readEvents(new ArchivedSessionLog(archive, nothingLive), 's1', 0);
    expect(all).toEqual(events(0, 2510));
  });

  it('reads a long segment page by page with one lookup and one fetch, not a query per page', async () => {
    const db = counting(await open());
    await new PostgresSessionArchive(db, testDataConverter()).seal('paged', events(0, 5000));
    const reader = new PostgresSessionArchive(counting(await open()), testDataConverter());
    const rdb = (reader as unknown as { db: Db & { count: number } }).db;
    const got = await readEvents(new ArchivedSessionLog(reader, nothingLive), 'paged', 0, 5000);
    expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect(rdb.count).toBe(2);
  });

  it('seals a range once: sealing it again changes nothing, and a longer range adds only what is new', async () => {
    const db = await open();
    const archive = new PostgresSessionArchive(db, testDataConverter());
    await archive.seal('s2', events(0, 10));
    const before = await rowsOf(db, 's2');
    expect(await archive.seal('s2', events(0, 10))).toEqual({ kind: 'events', fromSeq: 0, throughSeq: 9 });
    expect(await rowsOf(db, 's2')).toEqual(before);
    // A range that starts inside a sealed one and runs past it (a retried wake, say): only 10..14 is new.
    await archive.seal('s2', events(3, 12));
    await archive.seal('s2', events(20, 5));
    // One that runs over the next sealed segment stops short of it, so no two segments overlap.
    await archive.seal('s2', events(12, 15));
    expect((await rowsOf(db, 's2')).map((r) => [r.from_seq, r.through_seq])).toEqual([
      [0, 9],
      [10, 14],
      [15, 19],
      [20, 24],
      [25, 26],
    ]);
    expect(
      await readEvents(
        new ArchivedSessionLog(new PostgresSessionArchive(db, testDataConverter()), nothingLive),
        's2',
        0,
      ),
    ).toEqual(events(0, 27));
    expect(await archive.seal('s2', events(0, 27))).toEqual({ kind: 'events', fromSeq: 0, throughSeq: 26 });
    expect(await rowsOf(db, 's2')).toHaveLength(5);
  });

  it('stores a range once when two workers seal it at the same moment', async () => {
    const [a, b] = [
      new PostgresSessionArchive(await open(), testDataConverter()),
      new PostgresSessionArchive(await open(), testDataConverter()),
    ];
    const batch = events(0, 200);
    await Promise.all([a, b, a, b, a, b].map((x) => x.seal('s3', batch)));
    // Different but overlapping ranges at once still leave segments that do not overlap and hold every event.
    await Promise.all([a.seal('s3', events(200, 50)), b.seal('s3', events(220, 60)), a.seal('s3', events(190, 100))]);
    const rows = await rowsOf(opened[0], 's3');
    for (let i = 1; i < rows.length; i++) expect(rows[i].from_seq).toBe(rows[i - 1].through_seq + 1);
    expect(rows[0]).toMatchObject({ from_seq: 0, through_seq: 199 });
    expect(rows[rows.length - 1].through_seq).toBe(289);
    expect(await readEvents(new ArchivedSessionLog(b, nothingLive), 's3', 0)).toEqual(events(0, 290));
  });

  it("links a fork to its source's prefix without copying it, and reads the fork's log through the link", async () => {
    const archive = new PostgresSessionArchive(await open(), testDataConverter());
    await archive.seal('src', events(0, 20));
    expect(await archive.link('fork', { sessionId: 'src', throughSeq: 9 })).toEqual({
      kind: 'link',
      fromSeq: 0,
      throughSeq: 9,
      sessionId: 'src',
    });
    await archive.link('fork', { sessionId: 'src', throughSeq: 9 });
    const own = events(10, 3, (seq) => `fork ${seq}`);
    await archive.seal('fork', own);
    expect(await archive.segments('fork')).toEqual([
      { kind: 'link', fromSeq: 0, throughSeq: 9, sessionId: 'src' },
      { kind: 'events', fromSeq: 10, throughSeq: 12 },
    ]);
    expect(await archive.find('fork', 4)).toEqual({ kind: 'link', fromSeq: 0, throughSeq: 9, sessionId: 'src' });
    await expect(archive.readSegment('fork', (await archive.find('fork', 4))!, 4, 1)).rejects.toThrow(
      'a link segment holds no events of its own',
    );
    expect(await readEvents(new ArchivedSessionLog(archive, nothingLive), 'fork', 0)).toEqual([
      ...events(0, 10),
      ...own,
    ]);
  });

  it('keeps segments encrypted at rest under CODEC_KEY: the stored bytes never hold an event text', async () => {
    const db = await open();
    const secret = `the-plain-text-${Date.now()}`;
    await new PostgresSessionArchive(db, testDataConverter()).seal(
      'enc',
      events(0, 3, () => secret),
    );
    await new PostgresSessionArchive(db).seal(
      'plain',
      events(0, 3, () => secret),
    );
    const bytes = async (id: string) =>
      Buffer.from(
        (await db.query<{ payload: Buffer }>('select payload from archive_segments where session_id = $1', [id]))[0]
          .payload,
      );
    expect((await bytes('enc')).includes(secret)).toBe(false);
    expect((await bytes('enc')).includes('binary/encrypted')).toBe(true);
    // Without a codec the same events are plain: the check above is not vacuous.
    expect((await bytes('plain')).includes(secret)).toBe(true);
    const back = new PostgresSessionArchive(db, testDataConverter());
    expect(await back.readSegment('enc', (await back.find('enc', 0))!, 0, 3)).toEqual(events(0, 3, () => secret));
  });

  it('seals and reads back a segment near the largest a run can seal (48 MB)', async () => {
    const db = await open();
    const chunk = 'x'.repeat(64 * 1024 - 64);
    const big = events(0, 768, (seq) => `${seq}:${chunk}`);
    await new PostgresSessionArchive(db, testDataConverter()).seal('big', big);
    const [row] = await db.query<{ n: number }>(
      "select octet_length(payload)::int as n from archive_segments where session_id = 'big'",
    );
    expect(row.n).toBeGreaterThan(48 * 1024 * 1024);
    const fresh = new PostgresSessionArchive(db, testDataConverter());
    const seg = (await fresh.find('big', 700))!;
    expect(seg).toEqual({ kind: 'events', fromSeq: 0, throughSeq: 767 });
    const page = await fresh.readSegment('big', seg, 700, 2);
    expect(page.map((e) => (e.type === 'user_message' ? e.text : ''))).toEqual([`700:${chunk}`, `701:${chunk}`]);
  });

  it.each(['postgres', 'file'] as const)(
    "deletes every segment of a session on %s, read or not, idempotently, and leaves other sessions' alone",
    async (kind) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'archive-file-'));
      try {
        const archive =
          kind === 'postgres'
            ? new PostgresSessionArchive(await open(), testDataConverter())
            : new FileSessionArchive(dir, testDataConverter());
        const [gone, kept] = [`del-${kind}-gone`, `del-${kind}-kept`];
        await archive.seal(gone, events(0, 5));
        await archive.seal(gone, events(5, 5));
        await archive.seal(kept, events(0, 3));
        // Read once, so the archive's caches hold it.
        const before = await archive.find(gone, 6);
        expect(await archive.readSegment(gone, before!, 6, 2)).toHaveLength(2);

        await archive.delete(gone);
        await archive.delete(gone);
        expect(await archive.segments(gone)).toEqual([]);
        expect(await archive.find(gone, 6)).toBeUndefined();
        expect(await archive.segments(kept)).toEqual([{ kind: 'events', fromSeq: 0, throughSeq: 2 }]);
        if (kind === 'postgres') expect(await rowsOf(await open(), gone)).toEqual([]);
        else expect(fs.readdirSync(dir)).toEqual([kept]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('opens its pool on first use and releases it on close', async () => {
    const archive = sessionArchive({ dataDir, DATABASE_URL: pg.url }, testDataConverter());
    expect(archive).toBeInstanceOf(PostgresSessionArchive);
    await archive.seal('lazy', events(0, 2));
    expect(await archive.segments('lazy')).toHaveLength(1);
    await archive.close!();
    expect(sessionArchive({ dataDir, DATABASE_URL: undefined }, testDataConverter())).toBeInstanceOf(
      FileSessionArchive,
    );
    // Nothing of the PostgreSQL archive is on local disk.
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });
});
