// The blob store on a real PostgreSQL server (the API suites run it on PGlite, in their server's process): content in and out byte for byte across chunk
// boundaries, from a stream as from bytes; sealed at rest; an oversized put leaves nothing; a delete removes it all.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { BlobMissingError, BlobStore, BlobTooLargeError, CHUNK_BYTES } from '../../src/storage/blobs';
import { openDb, type Db } from '../../src/storage/db';
import { freshPostgresDatabase } from '../helpers/api';
import { testDataConverter } from '../helpers/test-keys';

let pg: { url: string; drop(): Promise<void> };
let dataDir: string;
const opened: Db[] = [];

beforeAll(async () => {
  pg = await freshPostgresDatabase();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'blobs-'));
  opened.push(await openDb({ databaseUrl: pg.url, dataDir }));
});
afterAll(async () => {
  await Promise.all(opened.map((d) => d.close().catch(() => undefined)));
  await pg?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const count = async (db: Db, table: string) =>
  Number((await db.query<{ n: number }>(`select count(*)::int as n from ${table}`))[0].n);

describe('the blob store', () => {
  const db = () => opened[0];
  const store = () => new BlobStore(db(), testDataConverter());

  it('returns the bytes it was given across chunk boundaries, with their size and hash', async () => {
    const content = randomBytes(CHUNK_BYTES * 2 + 12345);
    const ref = await store().put('wrkspc_a', content);
    expect(ref).toEqual({
      id: expect.stringMatching(/^blob_/),
      sizeBytes: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
    });
    expect((await store().get(ref.id)).equals(content)).toBe(true);
    expect(await store().stat(ref.id)).toEqual(ref);
    const rows = await db().query<{ n: number }>(`select n from blob_chunks where blob_id = $1 order by n`, [ref.id]);
    expect(rows.map((r) => r.n)).toEqual([0, 1, 2]);
  });

  it('takes a stream of odd-sized pieces, and an empty one', async () => {
    const parts = [randomBytes(7), randomBytes(CHUNK_BYTES - 3), randomBytes(CHUNK_BYTES + 5)];
    async function* gen() {
      for (const p of parts) yield p;
    }
    const ref = await store().put('wrkspc_a', gen());
    expect((await store().get(ref.id)).equals(Buffer.concat(parts))).toBe(true);
    const empty = await store().put('wrkspc_a', Buffer.alloc(0));
    expect(empty.sizeBytes).toBe(0);
    expect((await store().get(empty.id)).length).toBe(0);
  });

  it('seals every chunk: the plain content appears nowhere in the table', async () => {
    const marker = `needle-${randomBytes(8).toString('hex')}`;
    const ref = await store().put('wrkspc_a', Buffer.from(marker.repeat(100)));
    const [row] = await db().query<{ data: string }>(
      `select encode(data, 'escape') as data from blob_chunks where blob_id = $1`,
      [ref.id],
    );
    expect(row.data).not.toContain(marker);
    // Without the key, the bytes do not open.
    await expect(new BlobStore(db()).get(ref.id)).rejects.toThrow();
  });

  it('refuses content over the limit and keeps none of it', async () => {
    const before = [await count(db(), 'blobs'), await count(db(), 'blob_chunks')];
    await expect(store().put('wrkspc_a', randomBytes(CHUNK_BYTES + 10), { maxBytes: CHUNK_BYTES })).rejects.toThrow(
      BlobTooLargeError,
    );
    expect([await count(db(), 'blobs'), await count(db(), 'blob_chunks')]).toEqual(before);
  });

  it('deletes a blob with its chunks, and a read of it then says it is missing', async () => {
    const ref = await store().put('wrkspc_a', randomBytes(CHUNK_BYTES + 1));
    await store().delete(ref.id);
    await store().delete(ref.id);
    expect(await store().stat(ref.id)).toBeUndefined();
    await expect(store().get(ref.id)).rejects.toThrow(BlobMissingError);
    expect(await db().query(`select 1 from blob_chunks where blob_id = $1`, [ref.id])).toEqual([]);
  });
});
