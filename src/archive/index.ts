// The session archive: sealed segments of a session's log that outlive the workflow runs they came from.
// The interface is what a blob or SQL store implements; FileSessionArchive keeps segments on local disk.
import fs from 'node:fs/promises';
import path from 'node:path';
import { defaultPayloadConverter, type DataConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { SessionEventSchema, type SessionEvent } from '../session/events';
import { z } from 'zod';

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
}

const LinkSchema = z.object({ sessionId: z.string().min(1) }).strict();
const pad = (n: number) => String(n).padStart(12, '0');
const NAME = /^(\d{12})-(\d{12})\.(events|link)$/;

/**
 * Local-disk archive: DIR/<session>/<from>-<through>.events|link, each file one payload encoded by the same
 * payload codec as the history (so it is encrypted under CODEC_KEY when the history is). Files are written to
 * a temporary name and renamed, so a reader never sees half a segment.
 */
export class FileSessionArchive implements SessionArchive {
  private readonly cache = new Map<string, SessionEvent[]>();
  /** Link targets by file; a segment never changes, so each is decoded once. */
  private readonly links = new Map<string, string>();

  constructor(
    private readonly dir: string,
    private readonly dataConverter: DataConverter = {},
  ) {}

  private sessionDir(sessionId: string): string {
    return path.join(this.dir, encodeURIComponent(sessionId));
  }

  private fileOf(sessionId: string, s: Segment): string {
    return path.join(this.sessionDir(sessionId), `${pad(s.fromSeq)}-${pad(s.throughSeq)}.${s.kind}`);
  }

  async seal(sessionId: string, events: readonly SessionEvent[]): Promise<Segment> {
    if (events.length === 0) throw new Error('nothing to seal');
    const fromSeq = events[0].seq;
    events.forEach((e, i) => {
      if (e.seq !== fromSeq + i) throw new Error(`events to seal are not contiguous at seq ${e.seq}`);
    });
    const segment: Segment = { kind: 'events', fromSeq, throughSeq: fromSeq + events.length - 1 };
    await this.write(sessionId, segment, events);
    return segment;
  }

  async link(sessionId: string, source: { sessionId: string; throughSeq: number }): Promise<Segment> {
    const segment: Segment = { kind: 'link', fromSeq: 0, throughSeq: source.throughSeq, sessionId: source.sessionId };
    await this.write(sessionId, segment, { sessionId: source.sessionId });
    return segment;
  }

  async segments(sessionId: string): Promise<Segment[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.sessionDir(sessionId));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: Segment[] = [];
    for (const name of names.sort()) {
      const m = NAME.exec(name);
      if (!m) continue;
      const range = { fromSeq: Number(m[1]), throughSeq: Number(m[2]) };
      if (m[3] === 'events') out.push({ kind: 'events', ...range });
      else out.push({ kind: 'link', ...range, sessionId: await this.linkTarget(path.join(this.sessionDir(sessionId), name)) });
    }
    return out;
  }

  private async linkTarget(file: string): Promise<string> {
    let target = this.links.get(file);
    if (target === undefined) {
      target = LinkSchema.parse(await this.load(file)).sessionId;
      this.links.set(file, target);
    }
    return target;
  }

  async find(sessionId: string, seq: number): Promise<Segment | undefined> {
    return (await this.segments(sessionId)).find((s) => s.fromSeq <= seq && seq <= s.throughSeq);
  }

  async readSegment(sessionId: string, segment: Segment, from: number, limit: number): Promise<SessionEvent[]> {
    if (segment.kind !== 'events') throw new Error('a link segment holds no events of its own');
    const file = this.fileOf(sessionId, segment);
    let events = this.cache.get(file);
    if (!events) {
      events = z.array(SessionEventSchema).parse(await this.load(file)) as SessionEvent[];
      this.cache.set(file, events);
      if (this.cache.size > 64) this.cache.delete(this.cache.keys().next().value as string);
    }
    const start = Math.max(0, from - segment.fromSeq);
    return events.slice(start, start + limit);
  }

  private async write(sessionId: string, segment: Segment, value: unknown): Promise<void> {
    const file = this.fileOf(sessionId, segment);
    try {
      await fs.access(file);
      return; // sealed before: segments never change
    } catch {
      // not there yet
    }
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    await fs.writeFile(tmp, await this.encode(value), { mode: 0o600 });
    await fs.rename(tmp, file);
  }

  private async encode(value: unknown): Promise<Uint8Array> {
    let payloads: Payload[] = [defaultPayloadConverter.toPayload(value)];
    for (const codec of this.dataConverter.payloadCodecs ?? []) payloads = await codec.encode(payloads);
    return temporal.api.common.v1.Payload.encode(payloads[0]).finish();
  }

  private async load(file: string): Promise<unknown> {
    let payloads: Payload[] = [temporal.api.common.v1.Payload.decode(await fs.readFile(file)) as Payload];
    for (const codec of [...(this.dataConverter.payloadCodecs ?? [])].reverse()) payloads = await codec.decode(payloads);
    return defaultPayloadConverter.fromPayload(payloads[0]);
  }
}

/** The default session archive: DATA_DIR/archive, its segments encoded by the history's payload codec. */
export function sessionArchive(dataDir: string, dataConverter: DataConverter): SessionArchive {
  return new FileSessionArchive(path.join(dataDir, 'archive'), dataConverter);
}
