// Reading the log while a run hands over: the archive lookup and the live query can straddle the handover.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSessionArchive } from '../src/archive';
import { createActivities } from '../src/brain/brain-activities';
import {
  ArchivedSessionLog,
  CachedSessionLog,
  MissingEventsError,
  readEvents,
  type SessionLog,
} from '../src/log/session-log';
import { eventsDigest, valuesDigest } from '../src/session/digest';
import type { SessionEvent } from '../src/session/events';
import type { EventsPage } from '../src/session/contract';

const t = '2026-01-01T00:00:00.000Z';
const events = (from: number, n: number): SessionEvent[] =>
  Array.from({ length: n }, (_, i) => ({ seq: from + i, time: t, type: 'user_message', text: `m${from + i}` }));

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'session-log-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * The live side of a session whose run 1 (events 0..9) seals 5..9 and hands over to run 2 (from 10) at the
 * moment the reader's query reaches it, as when the archive lookup ran just before the handover.
 */
function handingOver(archive: FileSessionArchive, sessionId: string): SessionLog {
  return {
    async read(_id: string, from: number, limit: number): Promise<EventsPage> {
      await archive.seal(sessionId, events(5, 5));
      const live = events(10, 3)
        .filter((e) => e.seq >= from)
        .slice(0, limit);
      return { events: from < 10 ? [] : live, nextSeq: from < 10 ? from : from + live.length, firstSeq: 10 };
    },
  };
}

describe('ArchivedSessionLog', () => {
  it('finds events sealed by a handover that happened between its archive lookup and its query', async () => {
    const archive = new FileSessionArchive(dir);
    await archive.seal('s', events(0, 5));
    const log = new ArchivedSessionLog(archive, handingOver(archive, 's'));
    expect((await readEvents(log, 's', 0)).map((e) => e.seq)).toEqual(Array.from({ length: 13 }, (_, i) => i));
  });

  it('still reports events that are in neither the archive nor the live run', async () => {
    const archive = new FileSessionArchive(dir);
    const live: SessionLog = { read: async (_id, from) => ({ events: [], nextSeq: from, firstSeq: 10 }) };
    await expect(new ArchivedSessionLog(archive, live).read('s', 3, 5)).rejects.toThrow(MissingEventsError);
    await expect(new ArchivedSessionLog(archive, live).read('s', 3, 5)).rejects.toThrow(
      'events 3 to 9 of session s are not in the live run, and they are not in the session archive',
    );
  });
});

describe('eventsDigest', () => {
  it('is the same for a copy parsed back from the archive, and differs when any event differs', async () => {
    const archive = new FileSessionArchive(dir);
    const original: SessionEvent[] = [
      { seq: 0, time: t, type: 'user_message', text: 'hi', messageId: 'a' },
      {
        seq: 1,
        time: t,
        type: 'assistant_message',
        content: [{ type: 'text', text: 'hello' }],
        stopReason: 'end_turn',
        usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        throughSeq: 0,
      },
    ];
    await archive.seal('d', original);
    const segment = (await archive.find('d', 0))!;
    const back = await archive.readSegment('d', segment, 0, 2);
    expect(eventsDigest(back)).toBe(eventsDigest(original));
    expect(eventsDigest([original[0], { ...original[1], time: '2026-01-01T00:00:01.000Z' } as SessionEvent])).not.toBe(
      eventsDigest(original),
    );
    expect(eventsDigest([original[1], original[0]])).not.toBe(eventsDigest(original));
  });

  it('gives the values it always gave: workflows and the workers that check their digests may run different builds', () => {
    expect(valuesDigest([{ b: 1, a: 'x', c: [1, 'é', null, { z: undefined, y: true }] }])).toBe('561c63fc3e165bdc');
    expect(valuesDigest([])).toBe('811c9dc59e3779b9');
    expect(valuesDigest(['a', 'b'])).toBe('163648a02f6f378d');
  });
});

describe('sealEvents', () => {
  it('refuses to seal events the live run answered other than the ones history committed, and seals the committed ones', async () => {
    const archive = new FileSessionArchive(dir);
    const committed = events(0, 3);
    // A worker's state that history never committed: the last message was appended at another time.
    let answer: SessionEvent[] = [
      ...committed.slice(0, 2),
      { ...committed[2], time: '2026-01-01T00:00:09.000Z' } as SessionEvent,
    ];
    const live: SessionLog = {
      read: async (_id, from, limit) => ({
        events: answer.slice(from, from + limit),
        nextSeq: from + Math.min(limit, answer.length - from),
        firstSeq: 0,
      }),
    };
    const acts = createActivities({
      model: {} as never,
      archive,
      log: new CachedSessionLog(new ArchivedSessionLog(archive, live)),
    });
    const input = { sessionId: 'stale', fromSeq: 0, throughSeq: 2, digest: eventsDigest(committed) };
    await expect(acts.sealEvents(input)).rejects.toMatchObject({ type: 'ArchiveError.Stale' });
    expect(await archive.segments('stale')).toEqual([]);
    answer = committed;
    await expect(acts.sealEvents(input)).resolves.toEqual({ sealed: 3 });
    expect(await archive.readSegment('stale', (await archive.find('stale', 0))!, 0, 3)).toEqual(committed);
  });
});

describe('CachedSessionLog with pushed events', () => {
  /** A live run holding `held` events that counts its reads. */
  const counting = (held: () => SessionEvent[]) => {
    const reads: number[] = [];
    const log: SessionLog = {
      read: async (_id, from, limit) => {
        reads.push(from);
        const page = held()
          .filter((e) => e.seq >= from)
          .slice(0, limit);
        return { events: page, nextSeq: from + page.length, firstSeq: 0 };
      },
    };
    return { log, reads };
  };
  const tail = (all: SessionEvent[], fromSeq: number, through: number) => ({
    fromSeq,
    digest: eventsDigest(all.slice(fromSeq, through + 1)),
  });

  it('answers a call from what the worker was handed when the tail digest vouches for it, reading nothing', async () => {
    const committed = events(0, 6);
    const { log, reads } = counting(() => committed.slice(0, 3));
    const cache = new CachedSessionLog(log);
    expect((await cache.readRange('s', 0, 2)).map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(reads).toEqual([0]);
    for (const e of committed.slice(3)) cache.pushed('s', e);
    expect(await cache.readRange('s', 0, 5, tail(committed, 3, 5))).toEqual(committed);
    expect(reads).toEqual([0]);
    expect(cache.stats).toEqual({ cached: 1, read: 1 });
  });

  it('reads the log again when what was pushed differs from what the digest names, or when no digest comes', async () => {
    const committed = events(0, 6);
    const { log, reads } = counting(() => committed);
    const cache = new CachedSessionLog(log);
    await cache.readRange('s', 0, 2);
    // A task attempt whose completion the server refused: its events were never committed.
    cache.pushed('s', { ...committed[3], text: 'never committed' } as SessionEvent);
    cache.pushed('s', committed[4]);
    expect(await cache.readRange('s', 0, 4, tail(committed, 3, 4))).toEqual(committed.slice(0, 5));
    expect(reads).toEqual([0, 3]);
    cache.pushed('s', committed[5]);
    expect(await cache.readRange('s', 0, 5)).toEqual(committed);
    expect(reads).toEqual([0, 3, 5]);
  });

  it('keeps only pushed events that continue the cached stretch, and a later attempt replaces an earlier one', async () => {
    const committed = events(0, 4);
    const { log, reads } = counting(() => committed);
    const cache = new CachedSessionLog(log);
    cache.pushed('s', committed[0]); // nothing cached for s yet: dropped
    await cache.readRange('s', 0, 1);
    cache.pushed('s', committed[3]); // a gap: dropped
    cache.pushed('s', { ...committed[2], text: 'first attempt' } as SessionEvent);
    cache.pushed('s', committed[2]); // the task's next attempt
    cache.pushed('s', committed[3]);
    cache.pushed('s', { ...committed[1], text: 'an event a read vouched for stays' } as SessionEvent);
    expect(await cache.readRange('s', 0, 3, tail(committed, 2, 3))).toEqual(committed);
    expect(reads).toEqual([0]);
  });

  it('does not take a digest for events before the last call it vouched for', async () => {
    const committed = events(0, 4);
    const { log, reads } = counting(() => committed);
    const cache = new CachedSessionLog(log);
    await cache.readRange('s', 0, 1);
    cache.pushed('s', committed[2]);
    cache.pushed('s', committed[3]);
    // The digest starts past the last vouched-for event (another worker ran the call in between): read.
    expect(await cache.readRange('s', 0, 3, tail(committed, 3, 3))).toEqual(committed);
    expect(reads).toEqual([0, 2]);
  });
});
