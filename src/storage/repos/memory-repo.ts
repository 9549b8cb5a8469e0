// Memory stores, their memories and every memory's versions. Each write to a store's memories runs in one
// transaction that first locks the store's row (`select ... for update`), so writes to one store are serialised:
// of two writers with the same precondition exactly one wins, path overlaps are checked against what is committed,
// and no version is lost. Each version keeps its own copy of its content as a blob; a redaction deletes that blob
// and keeps the row. The API's routes and the hands host's memory mounts write through the same functions here.
import { createHash, randomBytes } from 'node:crypto';
import type { BlobStore } from '../blobs';
import type { Db, Queryable } from '../db';

/** The most one memory holds: 100 kB of UTF-8. */
export const MAX_MEMORY_BYTES = 102_400;
/** The longest path, in UTF-8 bytes, and the most segments it has. */
export const MAX_MEMORY_PATH_BYTES = 1024;
export const MAX_MEMORY_PATH_SEGMENTS = 20;

/** Who wrote a version or redacted it: an API key, or an agent writing through its session's mount. */
export type MemoryActor = { type: 'api_actor'; api_key_id: string } | { type: 'session_actor'; session_id: string };

export type MemoryOperation = 'created' | 'modified' | 'deleted';

export interface MemoryStoreRow {
  id: string;
  workspace_id: string;
  pos: number;
  name: string;
  description: string;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

export interface MemoryRow {
  id: string;
  store_id: string;
  path: string;
  version_id: string;
  content_sha256: string;
  content_size_bytes: number;
  created_at: Date;
  updated_at: Date;
}

export interface MemoryVersionRow {
  id: string;
  store_id: string;
  memory_id: string;
  pos: number;
  operation: MemoryOperation;
  path: string | null;
  blob_id: string | null;
  content_sha256: string | null;
  content_size_bytes: number | null;
  created_by: MemoryActor | null;
  created_at: Date;
  redacted_at: Date | null;
  redacted_by: MemoryActor | null;
}

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghijkmnopqrstuvwxyz';
/** `mem_01…` and `memver_01…`, in the API's id format (src/api/shared-fields.ts), which this floor cannot import. */
function newMemoryId(prefix: 'mem' | 'memver'): string {
  let s = '';
  for (const b of randomBytes(24)) s += ALPHABET[b % ALPHABET.length];
  return `${prefix}_01${s}`;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

// Half of a UTF-16 surrogate pair without the other: text no UTF-8 can carry.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const wellFormed = (s: string) => !LONE_SURROGATE.test(s);

// Control (Cc), format (Cf), and the line and paragraph separators.
const FORBIDDEN_IN_PATH = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/** What is wrong with `path` as a memory's path, or undefined when nothing is. */
export function memoryPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `path must start with "/" (got ${JSON.stringify(path.slice(0, 80))})`;
  if (!wellFormed(path)) return 'path must be valid Unicode';
  if (Buffer.byteLength(path, 'utf8') > MAX_MEMORY_PATH_BYTES)
    return `path is at most ${MAX_MEMORY_PATH_BYTES} bytes of UTF-8`;
  if (FORBIDDEN_IN_PATH.test(path))
    return 'path must not contain control characters, format characters, or U+2028/U+2029';
  if (path !== path.normalize('NFC')) return 'path must be in Unicode Normalization Form C';
  const segments = path.slice(1).split('/');
  if (segments.length > MAX_MEMORY_PATH_SEGMENTS) return `path has at most ${MAX_MEMORY_PATH_SEGMENTS} segments`;
  if (segments.some((s) => s === '')) return 'path segments must not be empty (no "//" and no trailing "/")';
  if (segments.some((s) => s === '.' || s === '..')) return 'path segments must not be "." or ".."';
  return undefined;
}

/** What is wrong with `content` as a memory's content, or undefined when nothing is. */
export function memoryContentProblem(content: string): string | undefined {
  if (!wellFormed(content)) return 'content must be valid Unicode text';
  const size = Buffer.byteLength(content, 'utf8');
  if (size > MAX_MEMORY_BYTES)
    return `content is ${size} bytes of UTF-8; a memory holds at most ${MAX_MEMORY_BYTES} bytes (100 kB)`;
  return undefined;
}

// ---- stores

const STORE_COLUMNS = 'id, workspace_id, pos, name, description, metadata, created_at, updated_at, archived_at';

export async function findMemoryStore(
  q: Queryable,
  workspaceId: string,
  storeId: string,
): Promise<MemoryStoreRow | undefined> {
  const [row] = await q.query<MemoryStoreRow>(
    `select ${STORE_COLUMNS} from memory_stores where id = $1 and workspace_id = $2`,
    [storeId, workspaceId],
  );
  return row;
}

/** A store by id in any workspace, with its workspace's name: what the operator's `agents memory` reads. */
export async function findMemoryStoreById(
  q: Queryable,
  storeId: string,
): Promise<(MemoryStoreRow & { workspace: string }) | undefined> {
  const [row] = await q.query<MemoryStoreRow & { workspace: string }>(
    `select ${STORE_COLUMNS.split(', ')
      .map((c) => `s.${c}`)
      .join(', ')}, w.name as workspace
     from memory_stores s join workspaces w on w.id = s.workspace_id where s.id = $1`,
    [storeId],
  );
  return row;
}

/** Every store, of one workspace (by name) or all, oldest first. */
export async function listAllMemoryStores(
  q: Queryable,
  workspace: string | null,
): Promise<Array<MemoryStoreRow & { workspace: string }>> {
  return q.query<MemoryStoreRow & { workspace: string }>(
    `select ${STORE_COLUMNS.split(', ')
      .map((c) => `s.${c}`)
      .join(', ')}, w.name as workspace
     from memory_stores s join workspaces w on w.id = s.workspace_id
     where $1::text is null or w.name = $1 order by s.pos`,
    [workspace],
  );
}

export async function insertMemoryStore(
  q: Queryable,
  s: { id: string; workspaceId: string; name: string; description: string; metadata: Record<string, string> },
): Promise<void> {
  await q.query(
    `insert into memory_stores (id, workspace_id, name, description, metadata, created_at, updated_at)
     values ($1, $2, $3, $4, $5, now(), now())`,
    [s.id, s.workspaceId, s.name, s.description, s.metadata],
  );
}

/** Changes an unarchived store; false when it is archived (or gone) by the time the update runs. */
export async function updateMemoryStore(
  q: Queryable,
  id: string,
  s: { name: string; description: string; metadata: Record<string, string> },
): Promise<boolean> {
  const rows = await q.query(
    `update memory_stores set name = $2, description = $3, metadata = $4, updated_at = now()
     where id = $1 and archived_at is null returning id`,
    [id, s.name, s.description, s.metadata],
  );
  return rows.length > 0;
}

export async function archiveMemoryStore(q: Queryable, id: string): Promise<void> {
  await q.query(
    'update memory_stores set archived_at = now(), updated_at = now() where id = $1 and archived_at is null',
    [id],
  );
}

/** The workspace's stores, newest first, before `pos` `before` (null: from the newest). */
export async function listMemoryStores(
  q: Queryable,
  workspaceId: string,
  f: { before: number | null; includeArchived: boolean; createdGte?: string; createdLte?: string; limit: number },
): Promise<MemoryStoreRow[]> {
  return q.query<MemoryStoreRow>(
    `select ${STORE_COLUMNS} from memory_stores
     where workspace_id = $1 and ($2::int is null or pos < $2) and ($3::boolean or archived_at is null)
       and ($4::timestamptz is null or created_at >= $4) and ($5::timestamptz is null or created_at <= $5)
     order by pos desc limit $6`,
    [workspaceId, f.before, f.includeArchived, f.createdGte ?? null, f.createdLte ?? null, f.limit],
  );
}

/** Deletes the store with its memories, its versions and their contents, in one transaction. */
export async function deleteMemoryStore(
  db: Db,
  blobs: BlobStore,
  id: string,
  also?: (tx: Queryable) => Promise<unknown>,
): Promise<void> {
  await db.transaction(async (tx) => {
    await also?.(tx);
    await tx.query('select id from memory_stores where id = $1 for update', [id]);
    const held = await tx.query<{ blob_id: string }>(
      'select blob_id from memory_versions where store_id = $1 and blob_id is not null',
      [id],
    );
    await tx.query('delete from memories where store_id = $1', [id]);
    await tx.query('delete from memory_versions where store_id = $1', [id]);
    for (const b of held) await blobs.delete(b.blob_id, tx);
    await tx.query('delete from memory_stores where id = $1', [id]);
  });
}

// ---- memories

const MEMORY_COLUMNS = 'id, store_id, path, version_id, content_sha256, content_size_bytes, created_at, updated_at';

export async function findMemory(q: Queryable, storeId: string, memoryId: string): Promise<MemoryRow | undefined> {
  const [row] = await q.query<MemoryRow>(`select ${MEMORY_COLUMNS} from memories where store_id = $1 and id = $2`, [
    storeId,
    memoryId,
  ]);
  return row;
}

/** The content of a live memory: its current version's blob. */
export async function memoryContent(q: Queryable, blobs: BlobStore, m: MemoryRow): Promise<Buffer> {
  const [v] = await q.query<{ blob_id: string | null }>('select blob_id from memory_versions where id = $1', [
    m.version_id,
  ]);
  if (!v?.blob_id) throw new Error(`memory ${m.id}: its current version ${m.version_id} holds no content`);
  return blobs.get(v.blob_id, q);
}

/** The current content of every live memory of the store, by path. */
export async function readStoreMemories(
  q: Queryable,
  blobs: BlobStore,
  storeId: string,
): Promise<Array<{ memoryId: string; path: string; content: Buffer; sha256: string }>> {
  const rows = await q.query<MemoryRow>(
    `select ${MEMORY_COLUMNS} from memories where store_id = $1 order by path collate "C"`,
    [storeId],
  );
  const out: Array<{ memoryId: string; path: string; content: Buffer; sha256: string }> = [];
  for (const m of rows)
    out.push({ memoryId: m.id, path: m.path, content: await memoryContent(q, blobs, m), sha256: m.content_sha256 });
  return out;
}

/** One entry of a listing: a memory, or a prefix standing for the memories deeper than `depth`. */
export type MemoryListEntry = { kind: 'memory'; memory: MemoryRow } | { kind: 'prefix'; path: string };

/**
 * The store's memories whose path starts with `prefix` (ending in "/"), in byte order of their paths, after the
 * entry `after`. With `depth` > 0, a memory more than `depth` segments below the prefix is rolled up into one
 * prefix entry (its first `depth` segments and a "/"), listed once.
 */
export async function listMemories(
  q: Queryable,
  storeId: string,
  f: { prefix: string; depth: number; after: string | null; limit: number },
): Promise<MemoryListEntry[]> {
  const rows = await q.query<MemoryRow & { key: string; is_prefix: boolean }>(
    `with scoped as (
       select m.id, string_to_array(substr(m.path, length($2) + 1), '/') as rest, m.path
       from memories m where m.store_id = $1 and left(m.path, length($2)) = $2
     ), keyed as (
       select id, path,
         case when $3::int > 0 and cardinality(rest) > $3::int
           then $2 || array_to_string(rest[1:$3::int], '/') || '/' else path end collate "C" as key,
         ($3::int > 0 and cardinality(rest) > $3::int) as is_prefix
       from scoped
     ), items as (
       select key, bool_or(is_prefix) as is_prefix, max(id) as id from keyed
       where $4::text is null or key > $4::text collate "C"
       group by key order by key limit $5
     )
     select i.key, i.is_prefix, m.id, m.store_id, m.path, m.version_id, m.content_sha256, m.content_size_bytes,
            m.created_at, m.updated_at
     from items i left join memories m on m.id = i.id and not i.is_prefix
     order by i.key`,
    [storeId, f.prefix, f.depth, f.after, f.limit],
  );
  return rows.map(({ key, is_prefix, ...m }) =>
    is_prefix ? { kind: 'prefix', path: key } : { kind: 'memory', memory: m as MemoryRow },
  );
}

// ---- versions

const VERSION_COLUMNS =
  'id, store_id, memory_id, pos, operation, path, blob_id, content_sha256, content_size_bytes, created_by, created_at, redacted_at, redacted_by';

export async function findMemoryVersion(
  q: Queryable,
  storeId: string,
  versionId: string,
): Promise<MemoryVersionRow | undefined> {
  const [row] = await q.query<MemoryVersionRow>(
    `select ${VERSION_COLUMNS} from memory_versions where store_id = $1 and id = $2`,
    [storeId, versionId],
  );
  return row;
}

export interface MemoryVersionFilters {
  before: number | null;
  memoryId?: string;
  operation?: MemoryOperation;
  sessionId?: string;
  apiKeyId?: string;
  /** Versions written by a service account: this platform has none, so the filter matches nothing. */
  serviceAccountId?: string;
  createdGte?: string;
  createdLte?: string;
  limit: number;
}

/** The store's versions, newest first. */
export async function listMemoryVersions(
  q: Queryable,
  storeId: string,
  f: MemoryVersionFilters,
): Promise<MemoryVersionRow[]> {
  return q.query<MemoryVersionRow>(
    `select ${VERSION_COLUMNS} from memory_versions
     where store_id = $1 and ($2::int is null or pos < $2)
       and ($3::text is null or memory_id = $3) and ($4::text is null or operation = $4)
       and ($5::text is null or (created_by->>'type' = 'session_actor' and created_by->>'session_id' = $5))
       and ($6::text is null or (created_by->>'type' = 'api_actor' and created_by->>'api_key_id' = $6))
       and ($7::text is null or (created_by->>'type' = 'service_account_actor' and created_by->>'service_account_id' = $7))
       and ($8::timestamptz is null or created_at >= $8) and ($9::timestamptz is null or created_at <= $9)
     order by pos desc limit $10`,
    [
      storeId,
      f.before,
      f.memoryId ?? null,
      f.operation ?? null,
      f.sessionId ?? null,
      f.apiKeyId ?? null,
      f.serviceAccountId ?? null,
      f.createdGte ?? null,
      f.createdLte ?? null,
      f.limit,
    ],
  );
}

/** The ids of the memories that were ever at `path` in the store (a rename keeps the id), oldest first. */
export async function memoryIdsAtPath(q: Queryable, storeId: string, path: string): Promise<string[]> {
  const rows = await q.query<{ memory_id: string }>(
    `select memory_id from memory_versions where store_id = $1 and path = $2
     group by memory_id order by min(pos)`,
    [storeId, path],
  );
  return rows.map((r) => r.memory_id);
}

/** The content a version recorded; undefined when it has none (a deletion, or redacted). */
export async function versionContent(q: Queryable, blobs: BlobStore, v: MemoryVersionRow): Promise<Buffer | undefined> {
  return v.blob_id ? blobs.get(v.blob_id, q) : undefined;
}

export type RedactResult =
  | { ok: true; version: MemoryVersionRow }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'current'; memoryId: string };

/**
 * Clears a version's content, path, hash and size, and deletes its blob; the row stays, with who redacted it and
 * when. The version holding a live memory's current content cannot be redacted. Redacting twice keeps the first.
 */
export async function redactMemoryVersion(
  db: Db,
  blobs: BlobStore,
  r: { storeId: string; versionId: string; actor: MemoryActor },
): Promise<RedactResult> {
  return db.transaction(async (tx): Promise<RedactResult> => {
    await tx.query('select id from memory_stores where id = $1 for update', [r.storeId]);
    const v = await findMemoryVersion(tx, r.storeId, r.versionId);
    if (!v) return { ok: false, reason: 'not_found' };
    if (v.redacted_at) return { ok: true, version: v };
    const [live] = await tx.query('select id from memories where version_id = $1', [v.id]);
    if (live) return { ok: false, reason: 'current', memoryId: v.memory_id };
    await tx.query(
      `update memory_versions set path = null, blob_id = null, content_sha256 = null, content_size_bytes = null,
         redacted_at = now(), redacted_by = $2 where id = $1`,
      [v.id, r.actor],
    );
    if (v.blob_id) await blobs.delete(v.blob_id, tx);
    return { ok: true, version: (await findMemoryVersion(tx, r.storeId, r.versionId))! };
  });
}

// ---- writes

/** Why a write was refused: every variant but `ok` leaves the store as it was. */
export type MemoryWriteResult =
  | { ok: true; memory: MemoryRow; changed: boolean }
  | { ok: false; reason: 'store_not_found' }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'archived' }
  | { ok: false; reason: 'invalid'; message: string }
  | { ok: false; reason: 'precondition'; currentSha256: string | null }
  | { ok: false; reason: 'conflict'; conflictingMemoryId: string; conflictingPath: string };

type Locked = { tx: Queryable; store: MemoryStoreRow };

/** Runs `fn` in a transaction holding the store's row lock. */
async function withLockedStore(
  db: Db,
  workspaceId: string,
  storeId: string,
  fn: (l: Locked) => Promise<MemoryWriteResult>,
): Promise<MemoryWriteResult> {
  return db.transaction(async (tx) => {
    const [store] = await tx.query<MemoryStoreRow>(
      `select ${STORE_COLUMNS} from memory_stores where id = $1 and workspace_id = $2 for update`,
      [storeId, workspaceId],
    );
    if (!store) return { ok: false, reason: 'store_not_found' };
    return fn({ tx, store });
  });
}

/** A live memory, other than `except`, whose path is `path` or an ancestor or descendant of it. */
async function overlapping(
  tx: Queryable,
  storeId: string,
  path: string,
  except?: string,
): Promise<{ id: string; path: string } | undefined> {
  const segments = path.slice(1).split('/');
  const ancestors = segments.slice(0, -1).map((_, i) => `/${segments.slice(0, i + 1).join('/')}`);
  const [row] = await tx.query<{ id: string; path: string }>(
    `select id, path from memories
     where store_id = $1 and ($4::text is null or id <> $4)
       and (path = $2 or path = any($3::text[]) or left(path, length($2) + 1) = $2 || '/')
     order by (path = $2) desc, path limit 1`,
    [storeId, path, ancestors, except ?? null],
  );
  return row;
}

async function addVersion(
  tx: Queryable,
  blobs: BlobStore,
  store: MemoryStoreRow,
  v: { memoryId: string; operation: MemoryOperation; path: string; content?: Buffer; actor: MemoryActor },
): Promise<string> {
  const id = newMemoryId('memver');
  const blob = v.content ? await blobs.put(store.workspace_id, v.content, { maxBytes: MAX_MEMORY_BYTES, q: tx }) : null;
  await tx.query(
    `insert into memory_versions (id, store_id, memory_id, operation, path, blob_id, content_sha256,
       content_size_bytes, created_by, created_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, clock_timestamp())`,
    [
      id,
      store.id,
      v.memoryId,
      v.operation,
      v.path,
      blob?.id ?? null,
      blob?.sha256 ?? null,
      blob?.sizeBytes ?? null,
      v.actor,
    ],
  );
  return id;
}

function checkInput(path: string | undefined, content: string | undefined): MemoryWriteResult | undefined {
  const problem =
    (path !== undefined ? memoryPathProblem(path) : undefined) ??
    (content !== undefined ? memoryContentProblem(content) : undefined);
  return problem ? { ok: false, reason: 'invalid', message: problem } : undefined;
}

async function createLocked(
  { tx, store }: Locked,
  blobs: BlobStore,
  path: string,
  content: Buffer,
  actor: MemoryActor,
): Promise<MemoryWriteResult> {
  if (store.archived_at) return { ok: false, reason: 'archived' };
  const clash = await overlapping(tx, store.id, path);
  if (clash) return { ok: false, reason: 'conflict', conflictingMemoryId: clash.id, conflictingPath: clash.path };
  const id = newMemoryId('mem');
  const versionId = await addVersion(tx, blobs, store, { memoryId: id, operation: 'created', path, content, actor });
  await tx.query(
    `insert into memories (id, store_id, path, version_id, content_sha256, content_size_bytes, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, clock_timestamp(), clock_timestamp())`,
    [id, store.id, path, versionId, sha256(content), content.length],
  );
  return { ok: true, memory: (await findMemory(tx, store.id, id))!, changed: true };
}

async function updateLocked(
  { tx, store }: Locked,
  blobs: BlobStore,
  current: MemoryRow,
  u: { path?: string; content?: Buffer; expectedSha256?: string; actor: MemoryActor },
): Promise<MemoryWriteResult> {
  const newPath = u.path ?? current.path;
  // The current content is read only when the new version carries it over (a move); a change is told by its hash.
  const newContent = u.content ?? (await memoryContent(tx, blobs, current));
  // Nothing would change: no new version, and a precondition that no longer holds does not matter.
  if (newPath === current.path && sha256(newContent) === current.content_sha256)
    return { ok: true, memory: current, changed: false };
  if (store.archived_at) return { ok: false, reason: 'archived' };
  if (u.expectedSha256 !== undefined && u.expectedSha256 !== current.content_sha256)
    return { ok: false, reason: 'precondition', currentSha256: current.content_sha256 };
  if (newPath !== current.path) {
    const clash = await overlapping(tx, store.id, newPath, current.id);
    if (clash) return { ok: false, reason: 'conflict', conflictingMemoryId: clash.id, conflictingPath: clash.path };
  }
  const versionId = await addVersion(tx, blobs, store, {
    memoryId: current.id,
    operation: 'modified',
    path: newPath,
    content: newContent,
    actor: u.actor,
  });
  await tx.query(
    `update memories set path = $2, version_id = $3, content_sha256 = $4, content_size_bytes = $5,
       updated_at = clock_timestamp() where id = $1`,
    [current.id, newPath, versionId, sha256(newContent), newContent.length],
  );
  return { ok: true, memory: (await findMemory(tx, store.id, current.id))!, changed: true };
}

async function deleteLocked(
  { tx, store }: Locked,
  blobs: BlobStore,
  current: MemoryRow,
  d: { expectedSha256?: string; actor: MemoryActor },
): Promise<MemoryWriteResult> {
  if (d.expectedSha256 !== undefined && d.expectedSha256 !== current.content_sha256)
    return { ok: false, reason: 'precondition', currentSha256: current.content_sha256 };
  const versionId = await addVersion(tx, blobs, store, {
    memoryId: current.id,
    operation: 'deleted',
    path: current.path,
    actor: d.actor,
  });
  await tx.query('delete from memories where id = $1', [current.id]);
  // What the memory was, naming the version that recorded its deletion.
  return { ok: true, memory: { ...current, version_id: versionId }, changed: true };
}

/** Creates a memory at `path`; a path taken or overlapped by another memory is a `conflict`. */
export async function createMemory(
  db: Db,
  blobs: BlobStore,
  c: { workspaceId: string; storeId: string; path: string; content: string; actor: MemoryActor },
): Promise<MemoryWriteResult> {
  const bad = checkInput(c.path, c.content);
  if (bad) return bad;
  return withLockedStore(db, c.workspaceId, c.storeId, (l) =>
    createLocked(l, blobs, c.path, Buffer.from(c.content, 'utf8'), c.actor),
  );
}

/** Changes a memory's content, path (a rename), or both, if its content still hashes to `expectedSha256`. */
export async function updateMemory(
  db: Db,
  blobs: BlobStore,
  u: {
    workspaceId: string;
    storeId: string;
    memoryId: string;
    path?: string;
    content?: string;
    expectedSha256?: string;
    actor: MemoryActor;
  },
): Promise<MemoryWriteResult> {
  const bad = checkInput(u.path, u.content);
  if (bad) return bad;
  return withLockedStore(db, u.workspaceId, u.storeId, async (l) => {
    const current = await findMemory(l.tx, l.store.id, u.memoryId);
    if (!current) return { ok: false, reason: 'not_found' };
    return updateLocked(l, blobs, current, {
      ...(u.path !== undefined ? { path: u.path } : {}),
      ...(u.content !== undefined ? { content: Buffer.from(u.content, 'utf8') } : {}),
      ...(u.expectedSha256 !== undefined ? { expectedSha256: u.expectedSha256 } : {}),
      actor: u.actor,
    });
  });
}

/** Deletes a memory (its versions stay, with a `deleted` one added), if its content hashes to `expectedSha256`. */
export async function deleteMemory(
  db: Db,
  blobs: BlobStore,
  d: { workspaceId: string; storeId: string; memoryId: string; expectedSha256?: string; actor: MemoryActor },
): Promise<MemoryWriteResult> {
  return withLockedStore(db, d.workspaceId, d.storeId, async (l) => {
    const current = await findMemory(l.tx, l.store.id, d.memoryId);
    if (!current) return { ok: false, reason: 'not_found' };
    return deleteLocked(l, blobs, current, d);
  });
}

/** The live memory at `path`, if there is one. */
export async function memoryAtPath(tx: Queryable, storeId: string, path: string): Promise<MemoryRow | undefined> {
  const [row] = await tx.query<MemoryRow>(`select ${MEMORY_COLUMNS} from memories where store_id = $1 and path = $2`, [
    storeId,
    path,
  ]);
  return row;
}

export type MemoryAtResult =
  | { ok: true; memoryId: string; versionId: string; sha256: string }
  | { ok: false; reason: 'precondition'; currentSha256: string | null }
  | { ok: false; reason: 'invalid'; message: string };

/** A write's result as a mounted store's writer sees it: every refusal but a precondition is `invalid`, explained. */
function atResult(r: MemoryWriteResult, w: { storeId: string; path: string }): MemoryAtResult {
  if (r.ok) return { ok: true, memoryId: r.memory.id, versionId: r.memory.version_id, sha256: r.memory.content_sha256 };
  switch (r.reason) {
    case 'precondition':
      return r;
    case 'invalid':
      return r;
    case 'store_not_found':
      return { ok: false, reason: 'invalid', message: `memory store ${w.storeId} no longer exists` };
    case 'not_found':
      return { ok: false, reason: 'invalid', message: `no memory at ${w.path}` };
    case 'archived':
      return {
        ok: false,
        reason: 'invalid',
        message: `memory store ${w.storeId} is archived: its memories can be read and deleted, not written`,
      };
    case 'conflict':
      return {
        ok: false,
        reason: 'invalid',
        message:
          r.conflictingPath === w.path
            ? `${w.path} is already a memory`
            : `${w.path} overlaps the memory at ${r.conflictingPath}: a memory's path cannot be a directory of another memory's, nor inside one; choose another path or remove ${r.conflictingPath}`,
      };
  }
}

/**
 * Creates the memory at `path` or updates the one there. `expectedSha256`: a string, the current content must hash
 * to it; null, no memory may be at the path yet; undefined, no precondition.
 */
export async function writeMemoryAt(
  db: Db,
  blobs: BlobStore,
  w: {
    workspaceId: string;
    storeId: string;
    path: string;
    content: string;
    expectedSha256: string | null | undefined;
    actor: MemoryActor;
  },
): Promise<MemoryAtResult> {
  const bad = checkInput(w.path, w.content);
  if (bad) return atResult(bad, w);
  const content = Buffer.from(w.content, 'utf8');
  const r = await withLockedStore(db, w.workspaceId, w.storeId, async (l) => {
    const current = await memoryAtPath(l.tx, l.store.id, w.path);
    if (!current) {
      if (typeof w.expectedSha256 === 'string') return { ok: false, reason: 'precondition', currentSha256: null };
      return createLocked(l, blobs, w.path, content, w.actor);
    }
    if (w.expectedSha256 === null) {
      // Already there with exactly this content: the write happened, whoever made it.
      if (current.content_sha256 === sha256(content)) return { ok: true, memory: current, changed: false };
      return { ok: false, reason: 'precondition', currentSha256: current.content_sha256 };
    }
    return updateLocked(l, blobs, current, {
      content,
      ...(w.expectedSha256 !== undefined ? { expectedSha256: w.expectedSha256 } : {}),
      actor: w.actor,
    });
  });
  return atResult(r, w);
}

/** Deletes the memory at `path`, if its content hashes to `expectedSha256` (when given). */
export async function deleteMemoryAt(
  db: Db,
  blobs: BlobStore,
  d: { workspaceId: string; storeId: string; path: string; expectedSha256: string | undefined; actor: MemoryActor },
): Promise<MemoryAtResult> {
  const bad = checkInput(d.path, undefined);
  if (bad) return atResult(bad, d);
  const r = await withLockedStore(db, d.workspaceId, d.storeId, async (l) => {
    const current = await memoryAtPath(l.tx, l.store.id, d.path);
    if (!current)
      return d.expectedSha256 === undefined
        ? { ok: false, reason: 'not_found' }
        : { ok: false, reason: 'precondition', currentSha256: null };
    return deleteLocked(l, blobs, current, {
      ...(d.expectedSha256 !== undefined ? { expectedSha256: d.expectedSha256 } : {}),
      actor: d.actor,
    });
  });
  return atResult(r, d);
}
