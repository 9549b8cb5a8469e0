// Workspace snapshots (migration `workspace-snapshots`): one row per capture of a sandbox's workspace, the
// content-addressed chunks its files are made of (per workspace, sealed), and which chunks each snapshot uses.
// The hands side (src/hands/workspace-snapshots.ts) writes and reads them; deleting a session deletes its snapshots.
import type { Queryable } from '../db';

export interface SnapshotRow {
  id: string;
  workspace_id: string;
  session_id: string;
  sandbox_name: string;
  seq: number;
  created_at: string;
  files: number;
  size_bytes: number;
  chunk_count: number;
  new_chunks: number;
  new_bytes: number;
}

const COLUMNS = `id, workspace_id, session_id, sandbox_name, seq, created_at, files, size_bytes, chunk_count, new_chunks, new_bytes`;

// The first key of the two-key advisory lock that orders captures and deletions of one workspace's chunks.
const SNAPSHOT_LOCK = 0x736e6170;

const asRow = (r: SnapshotRow): SnapshotRow => ({
  ...r,
  seq: Number(r.seq),
  created_at: new Date(r.created_at).toISOString(),
  files: Number(r.files),
  size_bytes: Number(r.size_bytes),
  chunk_count: Number(r.chunk_count),
  new_chunks: Number(r.new_chunks),
  new_bytes: Number(r.new_bytes),
});

/** Holds the workspace's snapshot lock until `tx` ends: a chunk found present stays so until the snapshot that uses it commits. */
export async function lockWorkspaceSnapshots(tx: Queryable, workspaceId: string): Promise<void> {
  await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [SNAPSHOT_LOCK, workspaceId]);
}

/**
 * The workspace a session's snapshots count in: an API session's own (a sub-agent's is its root's); else that of
 * the snapshots it already has (a fork's first is its source's, in the source's workspace); else `wrkspc_default`.
 */
export async function snapshotWorkspaceOf(q: Queryable, sessionId: string): Promise<string> {
  const root = sessionId.split('.')[0];
  const [row] = await q.query<{ workspace_id: string }>('select workspace_id from sessions where id = $1', [root]);
  if (row) return row.workspace_id;
  const [own] = await q.query<{ workspace_id: string }>(
    'select workspace_id from workspace_snapshots where session_id = $1 order by seq desc limit 1',
    [sessionId],
  );
  return own?.workspace_id ?? 'wrkspc_default';
}

export async function latestSnapshot(
  q: Queryable,
  sessionId: string,
  sandboxName: string,
): Promise<(SnapshotRow & { manifest: Buffer }) | undefined> {
  const [row] = await q.query<SnapshotRow & { manifest_b64: string }>(
    `select ${COLUMNS}, encode(manifest, 'base64') as manifest_b64 from workspace_snapshots
     where session_id = $1 and sandbox_name = $2 order by seq desc limit 1`,
    [sessionId, sandboxName],
  );
  if (!row) return undefined;
  const { manifest_b64, ...rest } = row;
  return { ...asRow(rest), manifest: Buffer.from(manifest_b64, 'base64') };
}

/** Snapshot `seq` of a session's sandbox (without its manifest); undefined when it is gone (pruned, or its session deleted). */
export async function snapshotAt(
  q: Queryable,
  sessionId: string,
  sandboxName: string,
  seq: number,
): Promise<SnapshotRow | undefined> {
  const [row] = await q.query<SnapshotRow>(
    `select ${COLUMNS} from workspace_snapshots where session_id = $1 and sandbox_name = $2 and seq = $3`,
    [sessionId, sandboxName, seq],
  );
  return row ? asRow(row) : undefined;
}

/**
 * Makes a copy of snapshot `sourceId` the snapshot `seq` of another session's sandbox, in the source's workspace:
 * the same manifest, taken at the same time, referencing the same chunks (no content is copied), so it stays whole
 * when the source's rows go. Call under the workspace's lock.
 */
export async function adoptSnapshot(
  q: Queryable,
  sourceId: string,
  to: { id: string; sessionId: string; sandboxName: string; seq: number },
): Promise<void> {
  await q.query(
    `insert into workspace_snapshots (id, workspace_id, session_id, sandbox_name, seq, created_at, files, size_bytes,
       chunk_count, new_chunks, new_bytes, manifest)
     select $2, workspace_id, $3, $4, $5, created_at, files, size_bytes, chunk_count, 0, 0, manifest
     from workspace_snapshots where id = $1`,
    [sourceId, to.id, to.sessionId, to.sandboxName, to.seq],
  );
  await q.query(
    `insert into snapshot_chunk_refs (snapshot_id, workspace_id, hash)
     select $2, workspace_id, hash from snapshot_chunk_refs where snapshot_id = $1`,
    [sourceId, to.id],
  );
}

/** A session's snapshots (every sandbox), newest first. */
export async function listSessionSnapshots(q: Queryable, sessionId: string): Promise<SnapshotRow[]> {
  const rows = await q.query<SnapshotRow>(
    `select ${COLUMNS} from workspace_snapshots where session_id = $1 or session_id like $2
     order by created_at desc, seq desc`,
    [sessionId, `${sessionId}.%`],
  );
  return rows.map(asRow);
}

/** Of `hashes`, those the workspace already stores. */
export async function presentChunks(
  q: Queryable,
  workspaceId: string,
  hashes: readonly string[],
): Promise<Set<string>> {
  const present = new Set<string>();
  for (let i = 0; i < hashes.length; i += 500) {
    const part = hashes.slice(i, i + 500);
    const rows = await q.query<{ hash: string }>(
      `select hash from snapshot_chunks where workspace_id = $1 and hash = any($2::text[])`,
      [workspaceId, part],
    );
    for (const r of rows) present.add(r.hash);
  }
  return present;
}

export async function insertChunk(
  q: Queryable,
  c: { workspaceId: string; hash: string; sizeBytes: number; sealed: Uint8Array },
): Promise<void> {
  await q.query(
    `insert into snapshot_chunks (workspace_id, hash, size_bytes, data) values ($1, $2, $3, $4)
     on conflict (workspace_id, hash) do nothing`,
    [c.workspaceId, c.hash, c.sizeBytes, Buffer.from(c.sealed.buffer, c.sealed.byteOffset, c.sealed.byteLength)],
  );
}

/** The sealed bytes of those of `hashes` the workspace stores, by hash, in one query. */
export async function readChunks(q: Queryable, workspaceId: string, hashes: string[]): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (hashes.length === 0) return out;
  const rows = await q.query<{ hash: string; data: string }>(
    `select hash, encode(data, 'base64') as data from snapshot_chunks where workspace_id = $1 and hash = any($2::text[])`,
    [workspaceId, hashes],
  );
  for (const r of rows) out.set(r.hash, Buffer.from(r.data, 'base64'));
  return out;
}

/** Bytes of chunks the workspace stores, over every session's snapshots. */
export async function workspaceSnapshotBytes(q: Queryable, workspaceId: string): Promise<number> {
  const [row] = await q.query<{ n: string | null }>(
    `select coalesce(sum(size_bytes), 0) as n from snapshot_chunks where workspace_id = $1`,
    [workspaceId],
  );
  return Number(row?.n ?? 0);
}

/** The next seq of a sandbox's snapshots (1 for the first). */
export async function nextSnapshotSeq(q: Queryable, sessionId: string, sandboxName: string): Promise<number> {
  const [row] = await q.query<{ n: number | null }>(
    `select max(seq) as n from workspace_snapshots where session_id = $1 and sandbox_name = $2`,
    [sessionId, sandboxName],
  );
  return Number(row?.n ?? 0) + 1;
}

export async function insertSnapshot(
  q: Queryable,
  s: Omit<SnapshotRow, 'created_at'> & { manifest: Uint8Array; hashes: readonly string[] },
): Promise<void> {
  await q.query(
    `insert into workspace_snapshots (id, workspace_id, session_id, sandbox_name, seq, files, size_bytes, chunk_count,
       new_chunks, new_bytes, manifest) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      s.id,
      s.workspace_id,
      s.session_id,
      s.sandbox_name,
      s.seq,
      s.files,
      s.size_bytes,
      s.chunk_count,
      s.new_chunks,
      s.new_bytes,
      Buffer.from(s.manifest.buffer, s.manifest.byteOffset, s.manifest.byteLength),
    ],
  );
  const unique = [...new Set(s.hashes)];
  for (let i = 0; i < unique.length; i += 500) {
    const part = unique.slice(i, i + 500);
    await q.query(
      `insert into snapshot_chunk_refs (snapshot_id, workspace_id, hash) select $1, $2, h from unnest($3::text[]) as h`,
      [s.id, s.workspace_id, part],
    );
  }
}

/** Deletes those of `hashes` no snapshot uses (what a refused capture stored). Call under the workspace's lock. */
export async function dropUnreferencedChunks(
  q: Queryable,
  workspaceId: string,
  hashes: readonly string[],
): Promise<void> {
  for (let i = 0; i < hashes.length; i += 500)
    await q.query(
      `delete from snapshot_chunks c where c.workspace_id = $1 and c.hash = any($2::text[]) and not exists
         (select 1 from snapshot_chunk_refs r where r.workspace_id = c.workspace_id and r.hash = c.hash)`,
      [workspaceId, hashes.slice(i, i + 500)],
    );
}

/** Deletes snapshots by id, then the workspace's chunks no snapshot uses any more. Call under the workspace's lock. */
async function deleteSnapshots(q: Queryable, workspaceId: string, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  await q.query(`delete from snapshot_chunk_refs where snapshot_id = any($1::text[])`, [ids]);
  await q.query(`delete from workspace_snapshots where id = any($1::text[])`, [ids]);
  await q.query(
    `delete from snapshot_chunks c where c.workspace_id = $1 and not exists
       (select 1 from snapshot_chunk_refs r where r.workspace_id = c.workspace_id and r.hash = c.hash)`,
    [workspaceId],
  );
  return ids.length;
}

/** Keeps a sandbox's newest `keep` snapshots (at least one) and deletes the rest. Call under the workspace's lock. */
export async function pruneSnapshots(
  q: Queryable,
  workspaceId: string,
  sessionId: string,
  sandboxName: string,
  keep: number,
): Promise<number> {
  const rows = await q.query<{ id: string }>(
    `select id from workspace_snapshots where session_id = $1 and sandbox_name = $2 order by seq desc offset $3`,
    [sessionId, sandboxName, Math.max(1, keep)],
  );
  return deleteSnapshots(
    q,
    workspaceId,
    rows.map((r) => r.id),
  );
}

/** Deletes a session's snapshots (and its sub-agents'), with the chunks only they used. Runs in `q`'s transaction when it is one. */
export async function deleteSessionSnapshots(q: Queryable, sessionId: string): Promise<number> {
  const rows = await q.query<{ id: string; workspace_id: string }>(
    `select id, workspace_id from workspace_snapshots where session_id = $1 or session_id like $2`,
    [sessionId, `${sessionId}.%`],
  );
  const byWorkspace = new Map<string, string[]>();
  for (const r of rows) byWorkspace.set(r.workspace_id, [...(byWorkspace.get(r.workspace_id) ?? []), r.id]);
  let n = 0;
  for (const [workspaceId, ids] of byWorkspace) {
    await lockWorkspaceSnapshots(q, workspaceId);
    n += await deleteSnapshots(q, workspaceId, ids);
  }
  return n;
}
