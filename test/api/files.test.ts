// client.beta.files: uploads streamed into the blob store, metadata, pages, `ids` and `scope_id`, downloads of a
// session's outputs byte for byte, the SDK's own errors (not downloadable, expired, quota), deletes, workspaces,
// and every malformed upload answered with a 400 that stores nothing.
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BlobStore } from '../../src/storage/blobs';
import { createDataConverter } from '../../src/codec';
import { deleteSessionFiles, saveSessionOutput, sessionOutputs } from '../../src/storage/repos/files-repo';
import type { Db } from '../../src/storage/db';
import { TEST_CODEC_KEY } from '../helpers/test-keys';
import { STORAGES, startTestApi, type TestApi } from '../helpers/api';
import { expectOneLineError, runAgents } from '../helpers/cli';

const MAX = 4096;
const messageOf = (e: unknown) => (e as { error?: { error?: { message?: string } } }).error?.error?.message ?? '';

async function rejection(p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await p;
  } catch (e) {
    return e as InstanceType<typeof Anthropic.APIError>;
  }
  throw new Error('expected the request to fail');
}

/** A raw request to the API (what the SDK never sends). */
async function raw(api: TestApi, key: string, init: RequestInit, url = '/v1/files') {
  const res = await fetch(`${api.url}${url}`, { ...init, headers: { 'x-api-key': key, ...(init.headers ?? {}) } });
  return { status: res.status, body: (await res.json()) as { error?: { type: string; message: string } } };
}

describe.each(STORAGES)('files on %s', (storage) => {
  let api: TestApi;
  let client: Anthropic;
  let key: string;
  let tmp: string;
  beforeAll(async () => {
    api = await startTestApi(storage, ['default', 'other'], undefined, undefined, { FILES_MAX_BYTES: String(MAX) });
    key = await api.key();
    client = new Anthropic({ apiKey: key, baseURL: api.url, maxRetries: 0 });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'files-test-'));
  });
  afterAll(async () => {
    fs.rmSync(tmp, { recursive: true, force: true });
    await api?.stop();
  });

  /** Blobs stored, on PostgreSQL (the embedded database belongs to the server's process): none may outlive a refusal. */
  const blobCount = async () =>
    api.db ? Number((await api.db.query<{ n: number }>('select count(*)::int as n from blobs'))[0].n) : undefined;

  /** Every file of the workspace, through the SDK's pages. */
  const allIds = async (c = client) => {
    const ids: string[] = [];
    for await (const f of c.beta.files.list({ limit: 2 })) ids.push(f.id);
    return ids;
  };

  it('uploads from a read stream and from toFile, with the metadata the SDK declares', async () => {
    const local = path.join(tmp, 'notes.md');
    fs.writeFileSync(local, '# notes\n');
    const a = await client.beta.files.upload({ file: fs.createReadStream(local) });
    expect(a).toEqual({
      id: expect.stringMatching(/^file_/),
      type: 'file',
      filename: 'notes.md',
      mime_type: 'text/markdown',
      size_bytes: 8,
      created_at: expect.any(String),
      downloadable: false,
      expires_at: null,
      scope: null,
    });
    expect(new Date(a.created_at).toISOString()).toBe(a.created_at);

    const b = await client.beta.files.upload({
      file: await toFile(Buffer.from('{"a":1}'), 'dir/data.json', { type: 'application/json' }),
      expires_in_seconds: 3600,
    });
    expect(b).toMatchObject({ filename: 'data.json', mime_type: 'application/json', size_bytes: 7 });
    const ttl = new Date(b.expires_at!).getTime() - new Date(b.created_at).getTime();
    expect(ttl).toBeGreaterThanOrEqual(3599_000);
    expect(ttl).toBeLessThanOrEqual(3601_000);
    expect(await client.beta.files.retrieveMetadata(b.id)).toEqual(b);
  });

  it('names a file without a name unnamed plus its extension, and keeps only the last path component', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('%PDF-1.4')], { type: 'application/pdf' }), '');
    const res = await fetch(`${api.url}/v1/files`, { method: 'POST', body: form, headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ filename: 'unnamed.pdf', mime_type: 'application/pdf' });
    const bare = await fetch(`${api.url}/v1/files`, {
      method: 'POST',
      body: '--xyz\r\nContent-Disposition: form-data; name="file"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n--xyz--\r\n',
      headers: { 'x-api-key': key, 'content-type': 'multipart/form-data; boundary=xyz' },
    });
    expect(await bare.json()).toMatchObject({ filename: 'unnamed.png', mime_type: 'image/png' });
    const f = await client.beta.files.upload({ file: await toFile(Buffer.from('x'), '..\\..\\evil\\run.sh') });
    expect(f).toMatchObject({ filename: 'run.sh', mime_type: 'application/x-sh' });
  });

  it('lists newest first in pages, by ids (one page, de-duplicated, unknown ids left out) and refuses ids with paging', async () => {
    const made = [];
    for (const n of ['1.txt', '2.txt', '3.txt'])
      made.push(await client.beta.files.upload({ file: await toFile(Buffer.from(n), n) }));
    const ids = await allIds();
    expect(ids.slice(0, 3)).toEqual(made.map((f) => f.id).reverse());
    const first = await client.beta.files.list({ limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.next_page).toEqual(expect.any(String));

    const some = await client.beta.files.list({ ids: [made[0].id, made[2].id, made[0].id, 'file_nope', 'not an id'] });
    expect(some.data.map((f) => f.id)).toEqual([made[2].id, made[0].id]);
    expect(some.next_page).toBeNull();

    const both = await rejection(client.beta.files.list({ ids: [made[0].id], limit: 5 }));
    expect(both).toBeInstanceOf(Anthropic.BadRequestError);
    expect(messageOf(both)).toMatch(/ids is mutually exclusive with page and limit/);
    const many = Array.from({ length: 101 }, (_, i) => `file_${i}`);
    expect(messageOf(await rejection(client.beta.files.list({ ids: many })))).toMatch(/at most 100 ids/);
    expect(await rejection(client.beta.files.list({ limit: 0 }))).toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('keeps files apart by workspace: another workspace gets 404 and does not list them', async () => {
    const mine = await client.beta.files.upload({ file: await toFile(Buffer.from('secret'), 'mine.txt') });
    const other = await api.client('other');
    expect(await rejection(other.beta.files.retrieveMetadata(mine.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await rejection(other.beta.files.download(mine.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await rejection(other.beta.files.delete(mine.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await allIds(other)).not.toContain(mine.id);
    expect((await other.beta.files.list({ ids: [mine.id] })).data).toEqual([]);
  });

  it('refuses to download an upload with the SDK’s FileNotDownloadableError, and deletes files (then 404)', async () => {
    const f = await client.beta.files.upload({ file: await toFile(Buffer.from('abc'), 'a.txt') });
    const e = await rejection(client.beta.files.download(f.id));
    expect(e).toBeInstanceOf(Anthropic.FileNotDownloadableError);
    expect(e.status).toBe(400);
    expect(await client.beta.files.delete(f.id)).toEqual({ id: f.id, type: 'file_deleted' });
    expect(await rejection(client.beta.files.retrieveMetadata(f.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await rejection(client.beta.files.delete(f.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await allIds()).not.toContain(f.id);
  });

  it('refuses an upload past FILES_MAX_BYTES with a 413 naming the limit, and stores nothing', async () => {
    const before = await allIds();
    const blobsBefore = await blobCount();
    const e = await rejection(client.beta.files.upload({ file: await toFile(Buffer.alloc(MAX + 1, 7), 'big.bin') }));
    expect(e).toBeInstanceOf(Anthropic.ContentTooLargeError);
    expect(e.status).toBe(413);
    expect(messageOf(e)).toMatch(`larger than ${MAX} bytes`);
    const bigger = await rejection(
      client.beta.files.upload({ file: await toFile(Buffer.alloc(3 * 1024 * 1024, 1), 'bigger.bin') }),
    );
    expect(bigger.status).toBe(413);
    expect(await allIds()).toEqual(before);
    expect(await blobCount()).toBe(blobsBefore);
    // Exactly the limit is taken.
    expect((await client.beta.files.upload({ file: await toFile(Buffer.alloc(MAX, 1), 'max.bin') })).size_bytes).toBe(
      MAX,
    );
  });

  it('refuses malformed uploads with a 400 naming what is wrong, and stores nothing', async () => {
    const before = await allIds();
    const blobsBefore = await blobCount();
    const file = async () => toFile(Buffer.from('x'), 'x.txt');
    for (const bad of [0, 3599, 7776001, 1.5]) {
      const e = await rejection(client.beta.files.upload({ file: await file(), expires_in_seconds: bad }));
      expect(e).toBeInstanceOf(Anthropic.BadRequestError);
      expect(messageOf(e)).toMatch(/^expires_in_seconds: /);
    }
    const form = (parts: (f: FormData) => void) => {
      const f = new FormData();
      parts(f);
      return f;
    };
    const cases: [string, RequestInit, RegExp][] = [
      [
        'json',
        { method: 'POST', body: '{"file":"x"}', headers: { 'content-type': 'application/json' } },
        /multipart\/form-data/,
      ],
      ['text', { method: 'POST', body: 'hello', headers: { 'content-type': 'text/plain' } }, /multipart\/form-data/],
      ['empty', { method: 'POST' }, /multipart\/form-data/],
      [
        'no file part',
        { method: 'POST', body: form((f) => f.append('expires_in_seconds', '3600')) },
        /^file: required/,
      ],
      [
        'two file parts',
        {
          method: 'POST',
          body: form((f) => {
            f.append('file', new Blob(['a']), 'a.txt');
            f.append('file', new Blob(['b']), 'b.txt');
          }),
        },
        /at most 1 file part/,
      ],
      [
        'a file under another name',
        { method: 'POST', body: form((f) => f.append('document', new Blob(['a']), 'a.txt')) },
        /^document: not a field/,
      ],
      [
        'an unknown field',
        {
          method: 'POST',
          body: form((f) => {
            f.append('purpose', 'x');
            f.append('file', new Blob(['a']), 'a.txt');
          }),
        },
        /^purpose: not a field/,
      ],
      [
        'a huge field',
        {
          method: 'POST',
          body: form((f) => {
            f.append('file', new Blob(['a']), 'a.txt');
            f.append('expires_in_seconds', '9'.repeat(100_000));
          }),
        },
        /^expires_in_seconds: /,
      ],
      [
        'a broken body',
        {
          method: 'POST',
          body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
          headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
        },
        /malformed multipart|file: required/,
      ],
      [
        'no boundary',
        { method: 'POST', body: 'x', headers: { 'content-type': 'multipart/form-data' } },
        /malformed multipart/,
      ],
      [
        'another multipart type',
        { method: 'POST', body: 'x', headers: { 'content-type': 'multipart/mixed; boundary=xyz' } },
        /multipart\/form-data/,
      ],
      [
        'a content type that is not a MIME type',
        {
          method: 'POST',
          body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: nonsense\r\n\r\nabc\r\n--xyz--\r\n',
          headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
        },
        /is not a MIME type/,
      ],
      [
        'a control character in the name',
        { method: 'POST', body: form((f) => f.append('file', new Blob(['a']), 'a\u0001.txt')) },
        /control characters/,
      ],
    ];
    for (const [what, init, message] of cases) {
      const r = await raw(api, key, init);
      expect([what, r.status, r.body.error?.type]).toEqual([what, 400, 'invalid_request_error']);
      expect([what, r.body.error?.message]).toEqual([what, expect.stringMatching(message)]);
    }
    expect(await allIds()).toEqual(before);
    expect(await blobCount()).toBe(blobsBefore);
  });
});

describe('session outputs, expiry and the quota on postgres', () => {
  let api: TestApi;
  let client: Anthropic;
  let db: Db;
  let blobs: BlobStore;
  beforeAll(async () => {
    api = await startTestApi('postgres', ['default'], undefined, undefined, {
      FILES_MAX_BYTES: '2048',
      STORAGE_QUOTA_BYTES: '6000',
    });
    client = await api.client();
    db = api.db!;
    blobs = new BlobStore(db, createDataConverter(TEST_CODEC_KEY));
  });
  afterAll(async () => api?.stop());

  const blobCount = async () => Number((await db.query<{ n: number }>('select count(*)::int as n from blobs'))[0].n);

  it('downloads a session output byte for byte, lists it by scope_id, and replaces it when its content changes', async () => {
    const ws = (await db.query<{ id: string }>(`select id from workspaces where name = 'default'`))[0].id;
    const content = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
    const out = await saveSessionOutput(db, blobs, {
      workspaceId: ws,
      sessionId: 'sesn_out1',
      relativePath: 'charts/all-bytes.bin',
      content,
    });
    const again = await saveSessionOutput(db, blobs, {
      workspaceId: ws,
      sessionId: 'sesn_out1',
      relativePath: 'charts/all-bytes.bin',
      content,
    });
    expect(again.id).toBe(out.id);
    const meta = await client.beta.files.retrieveMetadata(out.id);
    expect(meta).toMatchObject({
      filename: 'charts/all-bytes.bin',
      mime_type: 'application/octet-stream',
      size_bytes: 512,
      downloadable: true,
      scope: { type: 'session', id: 'sesn_out1' },
    });
    const res = await client.beta.files.download(out.id);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-disposition')).toContain('filename="all-bytes.bin"');
    expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);

    await client.beta.files.upload({ file: await toFile(Buffer.from('up'), 'up.txt') });
    const scoped = await client.beta.files.list({ scope_id: 'sesn_out1' });
    expect(scoped.data.map((f) => f.id)).toEqual([out.id]);
    expect((await client.beta.files.list({ scope_id: 'sesn_none' })).data).toEqual([]);

    const blobsBefore = await blobCount();
    const changed = await saveSessionOutput(db, blobs, {
      workspaceId: ws,
      sessionId: 'sesn_out1',
      relativePath: 'charts/all-bytes.bin',
      content: Buffer.from('v2'),
    });
    expect(changed.id).not.toBe(out.id);
    expect((await sessionOutputs(db, 'sesn_out1')).map((f) => [f.scope_path, f.id])).toEqual([
      ['charts/all-bytes.bin', changed.id],
    ]);
    expect(await blobCount()).toBe(blobsBefore);
    expect(await rejection(client.beta.files.retrieveMetadata(out.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(Buffer.from(await (await client.beta.files.download(changed.id)).arrayBuffer()).toString()).toBe('v2');

    await db.transaction((tx) => deleteSessionFiles(tx, blobs, 'sesn_out1'));
    expect(await rejection(client.beta.files.retrieveMetadata(changed.id))).toBeInstanceOf(Anthropic.NotFoundError);
    expect(await blobCount()).toBe(blobsBefore - 1);
  });

  it('keeps an expired file’s metadata, answers its download with FileExpiredError and frees its bytes', async () => {
    const ws = (await db.query<{ id: string }>(`select id from workspaces where name = 'default'`))[0].id;
    const out = await saveSessionOutput(db, blobs, {
      workspaceId: ws,
      sessionId: 'sesn_exp',
      relativePath: 'report.txt',
      content: Buffer.from('soon gone'),
    });
    await db.query(`update files set expires_at = now() - interval '1 second' where id = $1`, [out.id]);
    const meta = await client.beta.files.retrieveMetadata(out.id);
    expect(meta.downloadable).toBe(false);
    expect(meta.expires_at).not.toBeNull();
    const e = await rejection(client.beta.files.download(out.id));
    expect(e).toBeInstanceOf(Anthropic.FileExpiredError);
    expect(e.status).toBe(404);
    const [row] = await db.query<{ blob_id: string | null }>('select blob_id from files where id = $1', [out.id]);
    expect(row.blob_id).toBeNull();
    await client.beta.files.delete(out.id);
  });

  it('refuses an upload past STORAGE_QUOTA_BYTES with the SDK’s StorageQuotaExceededError, and stores nothing', async () => {
    await db.query('delete from files');
    await db.query('delete from blobs');
    const made = [];
    for (let i = 0; i < 2; i++)
      made.push(await client.beta.files.upload({ file: await toFile(Buffer.alloc(2000, i), `q${i}.bin`) }));
    const blobsBefore = await blobCount();
    const e = await rejection(client.beta.files.upload({ file: await toFile(Buffer.alloc(2048, 9), 'over.bin') }));
    expect(e).toBeInstanceOf(Anthropic.StorageQuotaExceededError);
    expect(messageOf(e)).toMatch(/STORAGE_QUOTA_BYTES/);
    expect(await blobCount()).toBe(blobsBefore);
    // Under the quota still fits; deleting frees room.
    await client.beta.files.upload({ file: await toFile(Buffer.alloc(1000, 1), 'fits.bin') });
    await client.beta.files.delete(made[0].id);
    await client.beta.files.upload({ file: await toFile(Buffer.alloc(2000, 2), 'again.bin') });
  });

  it('gives operators agents files list, upload, info, download and delete on the same files', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'files-cli-'));
    const cli = (args: string[]) =>
      runAgents('127.0.0.1:1', ['files', ...args], {
        DATABASE_URL: api.databaseUrl!,
        DATA_DIR: dir,
        KEY_FILES: 'off',
        CODEC_KEY: TEST_CODEC_KEY,
        FILES_MAX_BYTES: '2048',
        STORAGE_QUOTA_BYTES: 'off',
      });
    try {
      await db.query('delete from files');
      const local = path.join(dir, 'plan.md');
      fs.writeFileSync(local, '# plan');
      const up = await cli(['upload', local, '--expires-in', '7200', '--json']);
      expect(up.code).toBe(0);
      const made = JSON.parse(up.stdout) as Anthropic.Beta.BetaFileMetadata;
      expect(made).toMatchObject({
        filename: 'plan.md',
        mime_type: 'text/markdown',
        size_bytes: 6,
        downloadable: false,
      });
      expect(await client.beta.files.retrieveMetadata(made.id)).toEqual(made);
      expect(JSON.parse((await cli(['info', made.id, '--json'])).stdout)).toEqual(made);
      expectOneLineError(await cli(['download', made.id, '-o', path.join(dir, 'x')]), /is not downloadable/);
      expectOneLineError(await cli(['upload', local, '--expires-in', '60']), /--expires-in: must be between 3600/);
      fs.writeFileSync(path.join(dir, 'big.bin'), Buffer.alloc(2049));
      expectOneLineError(await cli(['upload', path.join(dir, 'big.bin')]), /FILES_MAX_BYTES/);

      const ws = (await db.query<{ id: string }>(`select id from workspaces where name = 'default'`))[0].id;
      const content = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const outFile = await saveSessionOutput(db, blobs, {
        workspaceId: ws,
        sessionId: 'sesn_cli',
        relativePath: 'out.bin',
        content,
      });
      const listed = (await cli(['list', '--json'])).stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { id: string });
      expect(listed.map((f) => f.id)).toEqual([outFile.id, made.id]);
      const scoped = await cli(['list', '--session', 'sesn_cli']);
      expect(scoped.stdout.trim().split('\n')).toHaveLength(1);
      expect(scoped.stdout).toContain(`${outFile.id}\tout.bin\t`);
      const target = path.join(dir, 'got.bin');
      const down = await cli(['download', outFile.id, '-o', target, '--json']);
      expect(JSON.parse(down.stdout)).toEqual({ id: outFile.id, path: target, bytes: 256 });
      expect(fs.readFileSync(target).equals(content)).toBe(true);

      expect(JSON.parse((await cli(['delete', made.id, '--json'])).stdout)).toEqual({
        id: made.id,
        type: 'file_deleted',
      });
      expect(await rejection(client.beta.files.retrieveMetadata(made.id))).toBeInstanceOf(Anthropic.NotFoundError);
      expectOneLineError(await cli(['delete', made.id]), /no file .* in workspace default/);
      // The operator's upload and delete are on the audit trail, with no key; the API's with the key that made them.
      const trail = await db.query<{ action: string; api_key_id: string | null }>(
        `select action, api_key_id from audit_log where resource_type = 'file' and resource_id = $1 order by seq`,
        [made.id],
      );
      expect(trail).toEqual([
        { action: 'created', api_key_id: null },
        { action: 'deleted', api_key_id: null },
      ]);
      const viaApi = await client.beta.files.upload({ file: await toFile(Buffer.from('k'), 'k.txt') });
      await client.beta.files.delete(viaApi.id);
      const keyed = await db.query<{ action: string; api_key_id: string | null }>(
        `select action, api_key_id from audit_log where resource_type = 'file' and resource_id = $1 order by seq`,
        [viaApi.id],
      );
      expect(keyed.map((r) => [r.action, r.api_key_id?.startsWith('apikey_')])).toEqual([
        ['created', true],
        ['deleted', true],
      ]);
      expectOneLineError(await cli(['info', outFile.id, '--workspace', 'nope']), /no workspace nope/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
