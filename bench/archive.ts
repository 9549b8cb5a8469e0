// The session archive on PostgreSQL against the local-disk one: reading the oldest 1,000 events of a long session
// (what `agents events --from 0` and a resumed client do) and sealing one segment (what a handover does).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSessionArchive, PostgresSessionArchive, type SessionArchive } from '../src/archive';
import { ArchivedSessionLog, readEvents, type SessionLog } from '../src/log/session-log';
import { openDb } from '../src/storage/db';
import type { SessionEvent } from '../src/session/events';
import { freshPostgresDatabase } from '../test/helpers/api';
import { testDataConverter } from '../test/helpers/env';
import { armStats, interleave, ratio, type BenchResult, type Ctx } from './lib';

const t = '2026-01-01T00:00:00.000Z';
const usage = { inputTokens: 1200, outputTokens: 80, cacheReadInputTokens: 1000, cacheCreationInputTokens: 0 };

/** A tool loop's events: a message, then rounds of reply, tool call and a ~2 KB tool result, from `from` on. */
function sessionEvents(from: number, n: number): SessionEvent[] {
  const out: SessionEvent[] = [];
  for (let seq = from; seq < from + n; seq++) {
    const k = seq % 4;
    if (k === 0)
      out.push({
        seq,
        time: t,
        type: 'user_message',
        text: `message ${seq}: look at the build again and fix what fails`,
      });
    else if (k === 1)
      out.push({
        seq,
        time: t,
        type: 'assistant_message',
        content: [
          { type: 'text', text: `Round ${seq}: ${'I will read the failing test and the code it covers. '.repeat(4)}` },
        ],
        stopReason: 'tool_use',
        usage,
        throughSeq: seq - 1,
      });
    else if (k === 2)
      out.push({
        seq,
        time: t,
        type: 'tool_use',
        id: `toolu_${seq}`,
        name: 'bash',
        input: { command: `npm test -- --grep case-${seq}` },
      });
    else
      out.push({
        seq,
        time: t,
        type: 'tool_result',
        toolUseId: `toolu_${seq - 1}`,
        output: `${`test output line of case ${seq}: ok\n`.repeat(60)}`,
        isError: false,
      });
  }
  return out;
}

const nothingLive: SessionLog = { read: async (_id, from) => ({ events: [], nextSeq: from }) };

export async function runArchive(ctx: Ctx): Promise<BenchResult[]> {
  const segmentEvents = 2000;
  const segmentsPerSession = ctx.quick ? 5 : 20;
  const rounds = ctx.quick ? 10 : 40;
  const pg = await freshPostgresDatabase();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-archive-'));
  const db = await openDb({ databaseUrl: pg.url, dataDir: dir });
  const dc = testDataConverter();
  try {
    // One long session in each archive, sealed segment by segment as its handovers would.
    const id = 'bench-long-session';
    const stores = {
      postgres: new PostgresSessionArchive(db, dc),
      disk: new FileSessionArchive(path.join(dir, 'archive'), dc),
    };
    for (let s = 0; s < segmentsPerSession; s++) {
      const batch = sessionEvents(s * segmentEvents, segmentEvents);
      await stores.postgres.seal(id, batch);
      await stores.disk.seal(id, batch);
    }
    const segmentBytes = (
      await db.query<{ n: number }>(
        'select octet_length(payload)::int as n from archive_segments where session_id = $1 and from_seq = 0',
        [id],
      )
    )[0].n;
    ctx.log(
      `  archive: ${segmentsPerSession * segmentEvents} events in ${segmentsPerSession} segments of ${segmentEvents} (${(segmentBytes / 1024).toFixed(0)} KiB encrypted each)`,
    );
    // Each read is a reader that has not seen the session (an `agents events` process; a fresh archive has no
    // cache), over an open pool; each seal is a new session's first segment of the same size.
    const fresh = (arm: string): SessionArchive =>
      arm.endsWith('postgres')
        ? new PostgresSessionArchive(db, dc)
        : new FileSessionArchive(path.join(dir, 'archive'), dc);
    const toSeal = sessionEvents(0, segmentEvents);
    let sealed = 0;
    const arms = [
      'read_oldest_1000_postgres',
      'read_oldest_1000_disk',
      'seal_segment_postgres',
      'seal_segment_disk',
    ] as const;
    const samples = await interleave(arms, rounds, 2, async (arm) => {
      const archive = fresh(arm);
      const t0 = performance.now();
      if (arm.startsWith('read')) {
        const got = await readEvents(new ArchivedSessionLog(archive, nothingLive), id, 0, 1000);
        if (got.length !== 1000 || got[999].seq !== 999) throw new Error(`read ${got.length} events`);
      } else {
        await archive.seal(`bench-seal-${++sealed}`, toSeal);
      }
      return performance.now() - t0;
    });
    const stats = Object.fromEntries(arms.map((a) => [a, armStats(samples[a])])) as Record<
      (typeof arms)[number],
      ReturnType<typeof armStats>
    >;
    const read = ratio(stats.read_oldest_1000_postgres, stats.read_oldest_1000_disk);
    const seal = ratio(stats.seal_segment_postgres, stats.seal_segment_disk);
    const notes = [
      `One session of ${segmentsPerSession * segmentEvents} events (a tool loop: messages, replies, bash calls, ~2 KB results) sealed in segments of ${segmentEvents} events, ${(segmentBytes / 1024).toFixed(0)} KiB each encrypted under CODEC_KEY, in each archive: PostgreSQL (the project's local server, one pool) and local disk (DATA_DIR/archive).`,
      `read_oldest_1000: events 0..999 through the session log by a reader with an empty cache (one lookup, one segment fetched and decrypted, 1,000 events parsed); seal_segment: one ${segmentEvents}-event segment into a new session.`,
      `${rounds} interleaved rounds after 2 warm-up rounds. PostgreSQL / disk p50: read ${read.p50}, seal ${seal.p50} (p95: ${read.p95}, ${seal.p95}).`,
    ].join(' ');
    return [
      {
        name: 'archive',
        arms: stats,
        notes,
        segmentEvents,
        segmentBytes,
        sessionEvents: segmentsPerSession * segmentEvents,
        ratioTo: { read_oldest_1000_postgres: 'read_oldest_1000_disk', seal_segment_postgres: 'seal_segment_disk' },
      },
    ];
  } finally {
    await db.close();
    await pg.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
