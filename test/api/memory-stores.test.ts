// client.beta.memoryStores with its memories and versions: paths and limits as the SDK documents them, content
// hash preconditions that let exactly one of many concurrent writers win, a version for every change (who made it
// included), and redaction that removes a version's content and keeps its record.
import Anthropic from '@anthropic-ai/sdk';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { STORAGES, startTestApi, type TestApi } from '../helpers/api';
import { BlobStore } from '../../src/storage/blobs';
import { createDataConverter } from '../../src/codec';
import { TEST_CODEC_KEY } from '../helpers/test-keys';
import { expectOneLineError, runAgents } from '../helpers/cli';
import {
  deleteMemoryAt,
  findMemoryStore,
  readStoreMemories,
  writeMemoryAt,
  type MemoryActor,
} from '../../src/storage/repos/memory-repo';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

type ErrorBody = {
  error: { type: string; message: string; conflicting_memory_id?: string; conflicting_path?: string };
};
async function failure(p: Promise<unknown>): Promise<{ status: number; error: ErrorBody['error'] }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof Anthropic.APIError) return { status: e.status!, error: (e.error as ErrorBody).error };
    throw e;
  }
  throw new Error('the request succeeded');
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe.each(STORAGES)('memory stores on %s', (storage) => {
  let api: TestApi;
  let client: Anthropic;
  beforeAll(async () => {
    api = await startTestApi(storage, ['default', 'other']);
    client = await api.client();
  });
  afterAll(async () => api?.stop());

  it('creates, updates, lists, archives and deletes stores', async () => {
    const s = await client.beta.memoryStores.create({ name: 'Team notes', metadata: { team: 'a' } });
    expect(s).toMatchObject({ type: 'memory_store', name: 'Team notes', description: '', archived_at: null });
    expect(s.id).toMatch(/^memstore_/);
    const u = await client.beta.memoryStores.update(s.id, {
      description: 'what the team learned',
      metadata: { team: null, x: 'y' },
    });
    expect(u).toMatchObject({ description: 'what the team learned', metadata: { x: 'y' }, name: 'Team notes' });
    const t = await client.beta.memoryStores.create({ name: 'second' });
    expect((await all(client.beta.memoryStores.list({ limit: 1 }))).map((x) => x.id).slice(0, 2)).toEqual([t.id, s.id]);
    const archived = await client.beta.memoryStores.archive(t.id);
    expect(archived.archived_at).not.toBeNull();
    expect((await all(client.beta.memoryStores.list())).map((x) => x.id)).not.toContain(t.id);
    expect((await all(client.beta.memoryStores.list({ include_archived: true }))).map((x) => x.id)).toContain(t.id);
    expect((await failure(client.beta.memoryStores.update(t.id, { name: 'again' }))).status).toBe(400);
    expect((await failure(client.beta.memoryStores.create({ name: '' }))).error.message).toMatch(/name/);
    expect(await client.beta.memoryStores.delete(s.id)).toEqual({ id: s.id, type: 'memory_store_deleted' });
    await expect(client.beta.memoryStores.retrieve(s.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('creates, reads, updates, renames and deletes memories, with a version for each change', async () => {
    const s = await client.beta.memoryStores.create({ name: 'crud' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/notes/todo.md', content: 'buy milk' });
    expect(m).toMatchObject({
      type: 'memory',
      memory_store_id: s.id,
      path: '/notes/todo.md',
      content: null,
      content_sha256: sha('buy milk'),
      content_size_bytes: 8,
    });
    expect(m.id).toMatch(/^mem_/);
    expect(m.memory_version_id).toMatch(/^memver_/);
    const got = await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id });
    expect(got.content).toBe('buy milk');
    expect(
      (await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id, view: 'basic' })).content,
    ).toBeNull();

    const edited = await client.beta.memoryStores.memories.update(m.id, {
      memory_store_id: s.id,
      content: 'buy oat milk',
      precondition: { type: 'content_sha256', content_sha256: m.content_sha256 },
      view: 'full',
    });
    expect(edited).toMatchObject({ id: m.id, content: 'buy oat milk', content_sha256: sha('buy oat milk') });
    const renamed = await client.beta.memoryStores.memories.update(m.id, {
      memory_store_id: s.id,
      path: '/notes/shopping.md',
    });
    expect(renamed).toMatchObject({ id: m.id, path: '/notes/shopping.md', content_sha256: sha('buy oat milk') });
    // An update that changes nothing adds no version.
    const same = await client.beta.memoryStores.memories.update(m.id, {
      memory_store_id: s.id,
      content: 'buy oat milk',
    });
    expect(same.memory_version_id).toBe(renamed.memory_version_id);

    expect(
      await client.beta.memoryStores.memories.delete(m.id, {
        memory_store_id: s.id,
        expected_content_sha256: sha('buy oat milk'),
      }),
    ).toEqual({ id: m.id, type: 'memory_deleted' });
    await expect(client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );

    const versions = await all(client.beta.memoryStores.memoryVersions.list(s.id, { memory_id: m.id }));
    expect(versions.map((v) => [v.operation, v.path, v.content_sha256])).toEqual([
      ['deleted', '/notes/shopping.md', null],
      ['modified', '/notes/shopping.md', sha('buy oat milk')],
      ['modified', '/notes/todo.md', sha('buy oat milk')],
      ['created', '/notes/todo.md', sha('buy milk')],
    ]);
    expect(versions.every((v) => v.created_by?.type === 'api_actor')).toBe(true);
    const first = await client.beta.memoryStores.memoryVersions.retrieve(versions[3].id, { memory_store_id: s.id });
    expect(first).toMatchObject({ content: 'buy milk', content_size_bytes: 8, memory_id: m.id, redacted_at: null });
    expect(
      (await all(client.beta.memoryStores.memoryVersions.list(s.id, { operation: 'created' }))).map((v) => v.id),
    ).toEqual([versions[3].id]);
  });

  it('lists memories by prefix, rolling deeper ones up into prefixes at depth 1, page by page', async () => {
    const s = await client.beta.memoryStores.create({ name: 'tree' });
    for (const p of ['/a.md', '/notes/x.md', '/notes/deep/y.md', '/notes/deep/z.md', '/notes-archive/old.md', '/z.md'])
      await client.beta.memoryStores.memories.create(s.id, { path: p, content: p });
    const paths = async (params: Anthropic.Beta.MemoryStores.MemoryListParams) =>
      (await all(client.beta.memoryStores.memories.list(s.id, params))).map((i) => `${i.type}:${i.path}`);
    expect(await paths({})).toEqual([
      'memory:/a.md',
      'memory:/notes-archive/old.md',
      'memory:/notes/deep/y.md',
      'memory:/notes/deep/z.md',
      'memory:/notes/x.md',
      'memory:/z.md',
    ]);
    expect(await paths({ depth: 1, limit: 1 })).toEqual([
      'memory:/a.md',
      'memory_prefix:/notes-archive/',
      'memory_prefix:/notes/',
      'memory:/z.md',
    ]);
    expect(await paths({ path_prefix: '/notes/', depth: 1 })).toEqual([
      'memory_prefix:/notes/deep/',
      'memory:/notes/x.md',
    ]);
    const full = await client.beta.memoryStores.memories.list(s.id, { path_prefix: '/notes/deep/', view: 'full' });
    expect(full.data.map((m) => (m.type === 'memory' ? m.content : null))).toEqual([
      '/notes/deep/y.md',
      '/notes/deep/z.md',
    ]);
    expect((await failure(client.beta.memoryStores.memories.list(s.id, { path_prefix: '/notes' }))).status).toBe(400);
  });

  it('refuses bad paths and content over 100 kB with a 400, storing nothing', async () => {
    const s = await client.beta.memoryStores.create({ name: 'limits' });
    const bad = [
      'relative.md',
      '/../etc/passwd',
      '/a/./b',
      '/a//b',
      '/a/',
      '/a\u0000b',
      '/a\u0007b',
      '/a\u200bb',
      '/a\u2028b',
      '/cafe\u0301.md',
      `/${'x/'.repeat(20)}y`,
      `/${'x'.repeat(1024)}`,
    ];
    for (const path of bad) {
      const f = await failure(client.beta.memoryStores.memories.create(s.id, { path, content: 'x' }));
      expect([path, f.status, f.error.type]).toEqual([path, 400, 'invalid_request_error']);
    }
    const exact = 'é'.repeat(51_200);
    const ok = await client.beta.memoryStores.memories.create(s.id, { path: '/exact.md', content: exact });
    expect(ok.content_size_bytes).toBe(102_400);
    const over = await failure(
      client.beta.memoryStores.memories.create(s.id, { path: '/over.md', content: `${exact}x` }),
    );
    expect(over.status).toBe(400);
    expect(over.error.message).toMatch(/102400 bytes/);
    const updOver = await failure(
      client.beta.memoryStores.memories.update(ok.id, { memory_store_id: s.id, content: `${exact}x` }),
    );
    expect(updOver.status).toBe(400);
    expect((await all(client.beta.memoryStores.memories.list(s.id))).map((m) => m.path)).toEqual(['/exact.md']);
    expect(await all(client.beta.memoryStores.memoryVersions.list(s.id))).toHaveLength(1);
    if (api.db) {
      const [{ n }] = await api.db.query<{ n: number }>(
        `select count(*)::int as n from blobs b where not exists (select 1 from memory_versions v where v.blob_id = b.id)`,
      );
      expect(n).toBe(0);
    }
  });

  it('answers a path taken or overlapped with memory_path_conflict_error naming the memory in the way', async () => {
    const s = await client.beta.memoryStores.create({ name: 'overlap' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/notes/todo.md', content: '' });
    const other = await client.beta.memoryStores.memories.create(s.id, { path: '/other.md', content: '' });
    for (const path of ['/notes/todo.md', '/notes', '/notes/todo.md/sub']) {
      const f = await failure(client.beta.memoryStores.memories.create(s.id, { path, content: 'x' }));
      expect(f).toMatchObject({
        status: 409,
        error: { type: 'memory_path_conflict_error', conflicting_memory_id: m.id, conflicting_path: '/notes/todo.md' },
      });
    }
    const rename = await failure(
      client.beta.memoryStores.memories.update(other.id, { memory_store_id: s.id, path: '/notes' }),
    );
    expect(rename.error).toMatchObject({ type: 'memory_path_conflict_error', conflicting_memory_id: m.id });
    // Segments are whole: /notes-archive does not overlap /notes.
    await client.beta.memoryStores.memories.create(s.id, { path: '/notes-archive', content: '' });
  });

  it('refuses a write whose precondition no longer holds with a 409, unless it changes nothing', async () => {
    const s = await client.beta.memoryStores.create({ name: 'preconditions' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/p.md', content: 'one' });
    const stale = { type: 'content_sha256' as const, content_sha256: sha('zero') };
    const f = await failure(
      client.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, content: 'two', precondition: stale }),
    );
    expect(f).toMatchObject({ status: 409, error: { type: 'memory_precondition_failed_error' } });
    const same = await client.beta.memoryStores.memories.update(m.id, {
      memory_store_id: s.id,
      content: 'one',
      precondition: stale,
    });
    expect(same.memory_version_id).toBe(m.memory_version_id);
    const del = await failure(
      client.beta.memoryStores.memories.delete(m.id, { memory_store_id: s.id, expected_content_sha256: sha('zero') }),
    );
    expect(del).toMatchObject({ status: 409, error: { type: 'memory_precondition_failed_error' } });
    expect((await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id })).content).toBe('one');
    const badHash = await failure(
      client.beta.memoryStores.memories.update(m.id, {
        memory_store_id: s.id,
        content: 'two',
        precondition: { type: 'content_sha256', content_sha256: 'ABC' },
      }),
    );
    expect(badHash.status).toBe(400);
    expect(badHash.error.message).toMatch(/precondition\.content_sha256/);
  });

  it('redacts a version: content, path, hash and size gone, the record and its author kept', async () => {
    const s = await client.beta.memoryStores.create({ name: 'redact' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/secret.md', content: 'the password' });
    const current = await failure(
      client.beta.memoryStores.memoryVersions.redact(m.memory_version_id, { memory_store_id: s.id }),
    );
    expect(current).toMatchObject({ status: 409, error: { type: 'conflict_error' } });
    await client.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, content: 'nothing to see' });
    const blobOf = async () =>
      api.db?.query<{ blob_id: string | null }>('select blob_id from memory_versions where id = $1', [
        m.memory_version_id,
      ]);
    const before = (await blobOf())?.[0]?.blob_id;
    const r = await client.beta.memoryStores.memoryVersions.redact(m.memory_version_id, { memory_store_id: s.id });
    expect(r).toMatchObject({
      id: m.memory_version_id,
      operation: 'created',
      memory_id: m.id,
      content: null,
      path: null,
      content_sha256: null,
      content_size_bytes: null,
      created_by: { type: 'api_actor' },
      redacted_by: { type: 'api_actor' },
    });
    expect(r.redacted_at).not.toBeNull();
    const again = await client.beta.memoryStores.memoryVersions.retrieve(r.id, { memory_store_id: s.id });
    expect(again).toMatchObject({ content: null, path: null, redacted_at: r.redacted_at });
    if (api.db) {
      expect(before).toBeTruthy();
      expect(await api.db.query('select id from blobs where id = $1', [before])).toEqual([]);
      expect((await blobOf())?.[0]?.blob_id).toBeNull();
      const audit = await api.db.query<{ action: string; resource_type: string; parent_id: string }>(
        'select action, resource_type, parent_id from audit_log where resource_id = $1',
        [r.id],
      );
      expect(audit).toEqual([{ action: 'redacted', resource_type: 'memory_version', parent_id: s.id }]);
    }
    expect((await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id })).content).toBe(
      'nothing to see',
    );
  });

  it("keeps another workspace's stores, memories and versions out of reach", async () => {
    const s = await client.beta.memoryStores.create({ name: 'mine' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/m.md', content: 'x' });
    const other = await api.client('other');
    const calls = [
      other.beta.memoryStores.retrieve(s.id),
      other.beta.memoryStores.update(s.id, { name: 'theirs' }),
      other.beta.memoryStores.delete(s.id),
      other.beta.memoryStores.memories.create(s.id, { path: '/n.md', content: 'y' }),
      other.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id }),
      other.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, content: 'y' }),
      other.beta.memoryStores.memories.delete(m.id, { memory_store_id: s.id }),
      other.beta.memoryStores.memories.list(s.id),
      other.beta.memoryStores.memoryVersions.list(s.id),
      other.beta.memoryStores.memoryVersions.redact(m.memory_version_id, { memory_store_id: s.id }),
    ];
    for (const c of calls) expect((await failure(c)).status).toBe(404);
    expect((await all(other.beta.memoryStores.list())).map((x) => x.id)).not.toContain(s.id);
    expect((await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id })).content).toBe('x');
  });

  it('lets an archived store be read and its memories deleted, never written', async () => {
    const s = await client.beta.memoryStores.create({ name: 'archived' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/keep.md', content: 'x' });
    await client.beta.memoryStores.archive(s.id);
    expect((await failure(client.beta.memoryStores.memories.create(s.id, { path: '/n.md', content: '' }))).status).toBe(
      400,
    );
    expect(
      (await failure(client.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, content: 'y' }))).status,
    ).toBe(400);
    expect((await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id })).content).toBe('x');
    await client.beta.memoryStores.memories.delete(m.id, { memory_store_id: s.id });
  });
});

describe('memory writes on PostgreSQL', () => {
  let api: TestApi;
  let client: Anthropic;
  let blobs: BlobStore;
  beforeAll(async () => {
    api = await startTestApi('postgres');
    client = await api.client();
    blobs = new BlobStore(api.db!, createDataConverter(TEST_CODEC_KEY));
  });
  afterAll(async () => api?.stop());

  it('lets exactly one of many concurrent writers with the same precondition win, losing no version', async () => {
    const s = await client.beta.memoryStores.create({ name: 'race' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/counter.md', content: 'v0' });
    const clients = await Promise.all(Array.from({ length: 4 }, () => api.client()));
    const N = 12;
    const results = await Promise.allSettled(
      Array.from({ length: N }, (_, i) =>
        clients[i % clients.length].beta.memoryStores.memories.update(m.id, {
          memory_store_id: s.id,
          content: `writer ${i}`,
          precondition: { type: 'content_sha256', content_sha256: sha('v0') },
        }),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(N - 1);
    for (const l of lost) {
      expect(l.reason).toBeInstanceOf(Anthropic.APIError);
      expect((l.reason as InstanceType<typeof Anthropic.APIError>).status).toBe(409);
      expect(((l.reason as InstanceType<typeof Anthropic.APIError>).error as ErrorBody).error.type).toBe(
        'memory_precondition_failed_error',
      );
    }
    const winner = (won[0] as PromiseFulfilledResult<Anthropic.Beta.MemoryStores.BetaManagedAgentsMemory>).value;

    // Then many unconditional writers at once: each one becomes a version, in one line of history.
    const more = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        clients[i % clients.length].beta.memoryStores.memories.update(m.id, {
          memory_store_id: s.id,
          content: `free ${i}`,
        }),
      ),
    );
    const versions = await all(
      client.beta.memoryStores.memoryVersions.list(s.id, { memory_id: m.id, view: 'full', limit: 5 }),
    );
    expect(versions).toHaveLength(2 + N);
    expect(versions[versions.length - 1]).toMatchObject({ operation: 'created', content: 'v0' });
    expect(versions[versions.length - 2]).toMatchObject({
      id: winner.memory_version_id,
      content: expect.stringMatching(/^writer \d+$/),
    });
    expect(new Set(versions.slice(0, N).map((v) => v.content))).toEqual(
      new Set(Array.from({ length: N }, (_, i) => `free ${i}`)),
    );
    for (const v of versions) expect(v.content_sha256).toBe(sha(v.content!));
    const now = await client.beta.memoryStores.memories.retrieve(m.id, { memory_store_id: s.id });
    expect(now.memory_version_id).toBe(versions[0].id);
    expect(now.content).toBe(versions[0].content);
    expect(new Set(more.map((x) => x.memory_version_id)).size).toBe(N);
  });

  it('lets one of two concurrent creators of overlapping paths win', async () => {
    const s = await client.beta.memoryStores.create({ name: 'overlap race' });
    const results = await Promise.allSettled([
      client.beta.memoryStores.memories.create(s.id, { path: '/a', content: '1' }),
      client.beta.memoryStores.memories.create(s.id, { path: '/a/b', content: '2' }),
      client.beta.memoryStores.memories.create(s.id, { path: '/a/b/c', content: '3' }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await all(client.beta.memoryStores.memories.list(s.id))).toHaveLength(1);
  });

  it('writes from a session as session_actor through writeMemoryAt, with the same rules as the API', async () => {
    const db = api.db!;
    const s = await client.beta.memoryStores.create({ name: 'agent' });
    const [{ workspace_id: workspaceId }] = await db.query<{ workspace_id: string }>(
      'select workspace_id from memory_stores where id = $1',
      [s.id],
    );
    expect(await findMemoryStore(db, workspaceId, s.id)).toMatchObject({ name: 'agent', archived_at: null });
    const actor: MemoryActor = { type: 'session_actor', session_id: 'sesn_agent1' };
    const base = { workspaceId, storeId: s.id, actor };

    const created = await writeMemoryAt(db, blobs, { ...base, path: '/n.md', content: 'one', expectedSha256: null });
    expect(created).toMatchObject({ ok: true, sha256: sha('one') });
    expect(await writeMemoryAt(db, blobs, { ...base, path: '/n.md', content: 'other', expectedSha256: null })).toEqual({
      ok: false,
      reason: 'precondition',
      currentSha256: sha('one'),
    });
    expect(
      await writeMemoryAt(db, blobs, { ...base, path: '/n.md', content: 'two', expectedSha256: sha('zero') }),
    ).toEqual({ ok: false, reason: 'precondition', currentSha256: sha('one') });
    expect(
      await writeMemoryAt(db, blobs, { ...base, path: '/new.md', content: 'x', expectedSha256: sha('zero') }),
    ).toEqual({ ok: false, reason: 'precondition', currentSha256: null });
    const updated = await writeMemoryAt(db, blobs, {
      ...base,
      path: '/n.md',
      content: 'two',
      expectedSha256: sha('one'),
    });
    expect(updated).toMatchObject({ ok: true, sha256: sha('two') });
    const overlap = await writeMemoryAt(db, blobs, { ...base, path: '/n.md/x', content: '', expectedSha256: null });
    expect(overlap).toMatchObject({ ok: false, reason: 'invalid', message: expect.stringMatching(/overlaps/) });
    const tooBig = await writeMemoryAt(db, blobs, {
      ...base,
      path: '/big.md',
      content: 'x'.repeat(102_401),
      expectedSha256: undefined,
    });
    expect(tooBig).toMatchObject({ ok: false, reason: 'invalid', message: expect.stringMatching(/102400/) });
    const escape = await writeMemoryAt(db, blobs, { ...base, path: '/../x', content: '', expectedSha256: undefined });
    expect(escape).toMatchObject({ ok: false, reason: 'invalid' });

    expect(await readStoreMemories(db, blobs, s.id)).toEqual([
      {
        memoryId: (created as { memoryId: string }).memoryId,
        path: '/n.md',
        content: Buffer.from('two'),
        sha256: sha('two'),
      },
    ]);
    const versions = await all(client.beta.memoryStores.memoryVersions.list(s.id, { session_id: 'sesn_agent1' }));
    expect(versions.map((v) => [v.operation, v.created_by])).toEqual([
      ['modified', actor],
      ['created', actor],
    ]);
    expect(await all(client.beta.memoryStores.memoryVersions.list(s.id, { session_id: 'sesn_other' }))).toEqual([]);

    expect(await deleteMemoryAt(db, blobs, { ...base, path: '/n.md', expectedSha256: sha('one') })).toEqual({
      ok: false,
      reason: 'precondition',
      currentSha256: sha('two'),
    });
    const deleted = await deleteMemoryAt(db, blobs, { ...base, path: '/n.md', expectedSha256: sha('two') });
    expect(deleted).toMatchObject({ ok: true });
    expect(await readStoreMemories(db, blobs, s.id)).toEqual([]);

    await client.beta.memoryStores.archive(s.id);
    expect(
      await writeMemoryAt(db, blobs, { ...base, path: '/late.md', content: '', expectedSha256: undefined }),
    ).toMatchObject({ ok: false, reason: 'invalid', message: expect.stringMatching(/archived/) });
  });

  it('deletes a store with its memories, versions and their contents', async () => {
    const db = api.db!;
    const s = await client.beta.memoryStores.create({ name: 'gone' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/a.md', content: 'a' });
    await client.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, content: 'b' });
    const held = await db.query<{ blob_id: string }>('select blob_id from memory_versions where store_id = $1', [s.id]);
    expect(held).toHaveLength(2);
    await client.beta.memoryStores.delete(s.id);
    expect(await db.query('select id from blobs where id = any($1)', [held.map((h) => h.blob_id)])).toEqual([]);
    expect(await db.query('select id from memory_versions where store_id = $1', [s.id])).toEqual([]);
  });

  it('shows stores, memories, contents and history to the operator with agents memory', async () => {
    const s = await client.beta.memoryStores.create({ name: 'operator view' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/notes/a.md', content: 'first' });
    await client.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, path: '/notes/b.md', content: 'ü' });
    await client.beta.memoryStores.memories.create(s.id, { path: '/top.md', content: 'top' });
    const env = { DATABASE_URL: api.databaseUrl!, DATA_DIR: api.dataDir, KEY_FILES: 'off', CODEC_KEY: TEST_CODEC_KEY };
    const agents = (...args: string[]) => runAgents('127.0.0.1:1', ['memory', ...args], env);
    const lines = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    const stores = await agents('stores', '--json');
    expect(stores.code).toBe(0);
    expect(lines(stores.stdout)).toContainEqual(
      expect.objectContaining({ id: s.id, name: 'operator view', workspace: 'default' }),
    );
    const ls = await agents('ls', s.id, '--prefix', '/notes/', '--json');
    expect(lines(ls.stdout)).toEqual([
      expect.objectContaining({ id: m.id, path: '/notes/b.md', content_size_bytes: 2, content_sha256: sha('ü') }),
    ]);
    expect((await agents('ls', s.id)).stdout).toMatch(/^\/notes\/b\.md\t2\t.*\n\/top\.md\t3\t/);
    expect((await agents('cat', s.id, '/notes/b.md')).stdout).toBe('ü');
    const versions = await agents('versions', s.id, '--path', '/notes/a.md', '--json');
    expect(lines(versions.stdout).map((v) => [v.operation, v.path])).toEqual([
      ['modified', '/notes/b.md'],
      ['created', '/notes/a.md'],
    ]);
    expectOneLineError(await agents('cat', s.id, '/nothing.md'), /no memory at \/nothing\.md/);
    expectOneLineError(await agents('ls', 'memstore_missing'), /no memory store memstore_missing/);
  });

  it('answers any body, query and id on every memory route with a 2xx or a 4xx envelope; refused writes store nothing', async () => {
    const s = await client.beta.memoryStores.create({ name: 'fuzz' });
    const m = await client.beta.memoryStores.memories.create(s.id, { path: '/fuzz/a.md', content: 'a' });
    await client.beta.memoryStores.memories.update(m.id, { memory_store_id: s.id, content: 'b' });
    const [v] = (await client.beta.memoryStores.memoryVersions.list(s.id, { operation: 'created' })).data;
    const ids: Record<string, string> = { store: s.id, memory: m.id, version: v.id };
    const routes: ['get' | 'post' | 'delete', (id: (k: string) => string) => string][] = [
      ['post', () => '/v1/memory_stores'],
      ['get', () => '/v1/memory_stores'],
      ['post', (id) => `/v1/memory_stores/${id('store')}`],
      ['post', (id) => `/v1/memory_stores/${id('store')}/memories`],
      ['get', (id) => `/v1/memory_stores/${id('store')}/memories`],
      ['get', (id) => `/v1/memory_stores/${id('store')}/memories/${id('memory')}`],
      ['post', (id) => `/v1/memory_stores/${id('store')}/memories/${id('memory')}`],
      ['delete', (id) => `/v1/memory_stores/${id('store')}/memories/${id('memory')}`],
      ['get', (id) => `/v1/memory_stores/${id('store')}/memory_versions`],
      ['get', (id) => `/v1/memory_stores/${id('store')}/memory_versions/${id('version')}`],
      ['post', (id) => `/v1/memory_stores/${id('store')}/memory_versions/${id('version')}/redact`],
    ];
    const text = fc.oneof(
      fc.string(),
      fc.constantFrom('/a', '/a/b', '/fuzz', '/fuzz/a.md/x', '/../x', '/a/', '', '/\u200b', 'é'.repeat(60_000)),
    );
    const body = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(
        fc.constantFrom('name', 'description', 'metadata', 'path', 'content', 'precondition'),
        fc.oneof(
          text,
          fc.jsonValue(),
          fc.record({
            type: fc.constantFrom('content_sha256', 'x'),
            content_sha256: fc.oneof(fc.string(), fc.constant('0'.repeat(64))),
          }),
        ),
      ),
    );
    const query = fc.dictionary(
      fc.constantFrom(
        'limit',
        'page',
        'view',
        'depth',
        'path_prefix',
        'expected_content_sha256',
        'memory_id',
        'operation',
        'session_id',
        'created_at[gte]',
        'include_archived',
        'x',
      ),
      fc.oneof(
        fc.string(),
        fc.integer().map(String),
        fc.constantFrom('full', 'basic', '/', '/fuzz/', '-1', '21', 'deleted', 'eyJhIjoiLyJ9'),
      ),
    );
    const idValue = (k: string) =>
      fc.oneof(fc.constant(k), fc.string({ maxLength: 40 }), fc.constantFrom('..', 'mem_x', 'a'.repeat(300)));
    const headers = { 'anthropic-beta': 'agent-memory-2026-07-22' };
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: routes.length - 1 }),
        body,
        query,
        fc.record({ store: idValue('store'), memory: idValue('memory'), version: idValue('version') }),
        async (r, b, q, pick) => {
          const [method, path] = routes[r];
          const url = path((k) =>
            encodeURIComponent(pick[k as keyof typeof pick] === k ? ids[k] : pick[k as keyof typeof pick]),
          );
          try {
            await client[method](url, { headers, query: q, ...(method === 'post' ? { body: b } : {}) });
          } catch (e) {
            expect(e).toBeInstanceOf(Anthropic.APIError);
            const status = (e as InstanceType<typeof Anthropic.APIError>).status!;
            expect(status).toBeGreaterThanOrEqual(400);
            expect(status).toBeLessThan(500);
          }
        },
      ),
      { numRuns: 300 },
    );
    // Every blob is some version's content: no refused write left one behind.
    const [{ n }] = await api.db!.query<{ n: number }>(
      `select count(*)::int as n from blobs b where not exists (select 1 from memory_versions v where v.blob_id = b.id)`,
    );
    expect(n).toBe(0);
  });
});
