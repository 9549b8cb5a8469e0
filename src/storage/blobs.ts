// Blobs: the bytes of uploaded files, session outputs, skill bundles and memory contents, kept in the API's database
// (PostgreSQL, shared by every host; PGlite under DATA_DIR for `agents dev`) beside the rows that name them. A blob
// is rows of chunks of at most CHUNK_BYTES, each sealed as one payload by the history's payload codec (AES-256-GCM
// under CODEC_KEY, as the session archive is), so the database holds no content in the clear. Blobs are written
// once and never changed; what names one deletes it with itself. Schema: migration `blobs` in migrations.ts.
import { createHash, randomUUID } from 'node:crypto';
import type { DataConverter } from '@temporalio/common';
import type { Db, Queryable } from './db';
import { decodeValue, encodeValue } from './payload-seal';
import { PlatformError } from '../session/platform-error';

/** The most a chunk row holds: big enough that a file is few rows, small enough that no row strains memory. */
export const CHUNK_BYTES = 1024 * 1024;
/** The most one blob holds (docs/guide/files-memory-skills.md states it): a file upload, an output, a bundle. */
export const MAX_BLOB_BYTES = 100 * 1024 * 1024;

export interface BlobRef {
  id: string;
  sizeBytes: number;
  /** Hex SHA-256 of the plain content. */
  sha256: string;
}

/** Content over the limit a put was given; nothing of it stays stored. */
export class BlobTooLargeError extends PlatformError {
  constructor(readonly limit: number) {
    super(`the content is larger than ${limit} bytes`);
  }
}

/** A blob id no row has (deleted, or never written). */
export class BlobMissingError extends PlatformError {}

type Content = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

async function* pieces(content: Content): AsyncGenerator<Uint8Array> {
  if (content instanceof Uint8Array) yield content;
  else yield* content;
}

/** `content` cut at CHUNK_BYTES boundaries, whatever sizes its pieces come in. */
export async function* chunked(content: Content): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  for await (const piece of pieces(content)) {
    let rest = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
    while (rest.length > 0) {
      const take = Math.min(rest.length, CHUNK_BYTES - heldBytes);
      held.push(rest.subarray(0, take));
      heldBytes += take;
      rest = rest.subarray(take);
      if (heldBytes === CHUNK_BYTES) {
        yield Buffer.concat(held);
        held = [];
        heldBytes = 0;
      }
    }
  }
  if (heldBytes > 0) yield Buffer.concat(held);
}

const asBuffer = (v: unknown): Buffer => {
  if (!(v instanceof Uint8Array)) throw new Error('a blob chunk did not decode to bytes');
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
};

export class BlobStore {
  constructor(
    private readonly db: Db,
    private readonly dataConverter: DataConverter = {},
  ) {}

  /**
   * Stores `content` (bytes, or a stream of them) in one transaction, or in `q`'s when given, and returns its id,
   * size and hash. Past `maxBytes` it throws BlobTooLargeError and stores nothing.
   */
  async put(workspaceId: string, content: Content, opts: { maxBytes?: number; q?: Queryable } = {}): Promise<BlobRef> {
    const limit = opts.maxBytes ?? MAX_BLOB_BYTES;
    const write = async (q: Queryable): Promise<BlobRef> => {
      const id = `blob_${randomUUID().replace(/-/g, '')}`;
      const hash = createHash('sha256');
      let size = 0;
      let n = 0;
      await q.query(`insert into blobs (id, workspace_id, size_bytes, sha256, chunks) values ($1, $2, 0, '', 0)`, [
        id,
        workspaceId,
      ]);
      for await (const chunk of chunked(content)) {
        size += chunk.length;
        if (size > limit) throw new BlobTooLargeError(limit);
        hash.update(chunk);
        const sealed = await encodeValue(this.dataConverter, new Uint8Array(chunk));
        await q.query(`insert into blob_chunks (blob_id, n, data) values ($1, $2, $3)`, [
          id,
          n++,
          Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength),
        ]);
      }
      const sha256 = hash.digest('hex');
      await q.query(`update blobs set size_bytes = $2, sha256 = $3, chunks = $4 where id = $1`, [id, size, sha256, n]);
      return { id, sizeBytes: size, sha256 };
    };
    return opts.q ? write(opts.q) : this.db.transaction(write);
  }

  /** The blob's size and hash, or undefined when there is none of that id. */
  async stat(id: string, q: Queryable = this.db): Promise<BlobRef | undefined> {
    const [row] = await q.query<{ size_bytes: number; sha256: string }>(
      `select size_bytes, sha256 from blobs where id = $1`,
      [id],
    );
    return row ? { id, sizeBytes: Number(row.size_bytes), sha256: row.sha256 } : undefined;
  }

  /** The content, chunk by chunk, opened as it is read: what a download streams without holding it all. */
  async *stream(id: string, q: Queryable = this.db): AsyncGenerator<Buffer> {
    const [row] = await q.query<{ chunks: number }>(`select chunks from blobs where id = $1`, [id]);
    if (!row) throw new BlobMissingError(`no blob ${id}`);
    for (let n = 0; n < row.chunks; n++) {
      const [chunk] = await q.query<{ data: string }>(
        `select encode(data, 'base64') as data from blob_chunks where blob_id = $1 and n = $2`,
        [id, n],
      );
      if (!chunk) throw new BlobMissingError(`blob ${id} lost its chunk ${n}`);
      yield asBuffer(await decodeValue(this.dataConverter, Buffer.from(chunk.data, 'base64')));
    }
  }

  /** The whole content. */
  async get(id: string, q: Queryable = this.db): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const part of this.stream(id, q)) parts.push(part);
    return Buffer.concat(parts);
  }

  /** Removes the blob and its chunks; a blob already gone is no error. */
  async delete(id: string, q: Queryable = this.db): Promise<void> {
    await q.query(`delete from blob_chunks where blob_id = $1`, [id]);
    await q.query(`delete from blobs where id = $1`, [id]);
  }
}
