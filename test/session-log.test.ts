// Reading the log while a run hands over: the archive lookup and the live query can straddle the handover.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileSessionArchive } from '../src/archive';
import { createActivities } from '../src/brain/activities';
import { ArchivedSessionLog, CachedSessionLog, MissingEventsError, readEvents, type SessionLog } from '../src/log/session-log';
import { eventsDigest } from '../src/session/digest';
import type { SessionEvent } from '../src/session/events';
import type { EventsPage } from '../src/session/contract';

const t = '2026-01-01T00:00:00.000Z';
const events = (from: number, n: number): SessionEvent[] => Array.from({ length: n }, (_, i) => ({ seq: from + i, time: t, type: 'user_message', text: `m${from + i}` }));

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
      const live = events(10, 3).filter((e) => e.seq >= from).slice(0, limit);
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
    await expect(new ArchivedSessionLog(archive, live).read('s', 3, 5)).rejects.toThrow('events 3 to 9 of session s are not in the live run, and they are not in the session archive');
  });
});

describe('eventsDigest', () => {
  it('is the same for a copy parsed back from the archive, and differs when any event differs', async () => {
    const archive = new FileSessionArchive(dir);
    const original: SessionEvent[] = [
      { seq: 0, time: t, type: 'user_message', text: 'hi', messageId: 'a' },
      { seq: 1, time: t, type: 'assistant_message', content: [{ type: 'text', text: 'hello' }], stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 }, throughSeq: 0 },
    ];
    await archive.seal('d', original);
    const segment = (await archive.find('d', 0))!;
    const back = await archive.readSegment('d', segment, 0, 2);
    expect(eventsDigest(back)).toBe(eventsDigest(original));
    expect(eventsDigest([original[0], { ...original[1], time: '2026-01-01T00:00:01.000Z' } as SessionEvent])).not.toBe(eventsDigest(original));
    expect(eventsDigest([original[1], original[0]])).not.toBe(eventsDigest(original));
  });
});

describe('sealEvents', () => {
  it('refuses to seal events the live run answered other than the ones history committed, and seals the committed ones', async () => {
    const archive = new FileSessionArchive(dir);
    const committed = events(0, 3);
    // A worker's state that history never committed: the last message was appended at another time.
    let answer: SessionEvent[] = [...committed.slice(0, 2), { ...committed[2], time: '2026-01-01T00:00:09.000Z' } as SessionEvent];
    const live: SessionLog = { read: async (_id, from, limit) => ({ events: answer.slice(from, from + limit), nextSeq: from + Math.min(limit, answer.length - from), firstSeq: 0 }) };
    const acts = createActivities({ model: {} as never, archive, log: new CachedSessionLog(new ArchivedSessionLog(archive, live)) });
    const input = { sessionId: 'stale', fromSeq: 0, throughSeq: 2, digest: eventsDigest(committed) };
    await expect(acts.sealEvents(input)).rejects.toMatchObject({ type: 'ArchiveError.Stale' });
    expect(await archive.segments('stale')).toEqual([]);
    answer = committed;
    await expect(acts.sealEvents(input)).resolves.toEqual({ sealed: 3 });
    expect(await archive.readSegment('stale', (await archive.find('stale', 0))!, 0, 3)).toEqual(committed);
  });
});
