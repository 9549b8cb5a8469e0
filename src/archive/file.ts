// The local-disk session archive, for the embedded default (one host): DIR/<session>/<from>-<through>.events|link.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { z } from 'zod';
import type { SessionEvent } from '../session/events';
import {
  SegmentCache,
  decodeEvents,
  decodeValue,
  encodeValue,
  segmentOf,
  sliceSegment,
  type Segment,
  type SessionArchive,
} from './segment';

const LinkSchema = z.object({ sessionId: z.string().min(1) }).strict();
const pad = (n: number) => String(n).padStart(12, '0');
const NAME = /^(\d{12})-(\d{12})\.(events|link)$/;

/**
 * Local-disk archive: DIR/<session>/<from>-<through>.events|link, each file one payload encoded by the same
 * payload codec as the history (so it is encrypted under CODEC_KEY when the history is). Files are written to
 * a temporary name and renamed, so a reader never sees half a segment.
 */
export class FileSessionArchive implements SessionArchive {
  private readonly cache = new SegmentCache();
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
    const segment = segmentOf(events);
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
      else
        out.push({
          kind: 'link',
          ...range,
          sessionId: await this.linkTarget(path.join(this.sessionDir(sessionId), name)),
        });
    }
    return out;
  }

  private async linkTarget(file: string): Promise<string> {
    let target = this.links.get(file);
    if (target === undefined) {
      target = LinkSchema.parse(await decodeValue(this.dataConverter, await fs.readFile(file))).sessionId;
      this.links.set(file, target);
    }
    return target;
  }

  async delete(sessionId: string): Promise<void> {
    const dir = this.sessionDir(sessionId);
    // Idempotent: a delete cut short by a crash leaves part of the directory, which the next one removes.
    await fs.rm(dir, { recursive: true, force: true });
    this.cache.dropPrefix(`${dir}${path.sep}`);
    for (const file of [...this.links.keys()]) if (file.startsWith(`${dir}${path.sep}`)) this.links.delete(file);
  }

  async find(sessionId: string, seq: number): Promise<Segment | undefined> {
    return (await this.segments(sessionId)).find((s) => s.fromSeq <= seq && seq <= s.throughSeq);
  }

  async readSegment(sessionId: string, segment: Segment, from: number, limit: number): Promise<SessionEvent[]> {
    if (segment.kind !== 'events') throw new Error('a link segment holds no events of its own');
    const file = this.fileOf(sessionId, segment);
    let events = this.cache.get(file);
    if (!events) {
      const bytes = await fs.readFile(file);
      events = await decodeEvents(this.dataConverter, bytes);
      this.cache.set(file, events, bytes.length);
    }
    return sliceSegment(events, segment.fromSeq, from, limit);
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
    await fs.writeFile(tmp, await encodeValue(this.dataConverter, value), { mode: 0o600 });
    await fs.rename(tmp, file);
  }
}
