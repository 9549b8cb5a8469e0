// The files table (migration `files`): uploads through the Files API, and the outputs sessions leave under their
// outputs directory, scoped to the session. A row names one blob; deleting the row deletes the blob with it. An
// expired file keeps its row (metadata) and loses its blob, lazily: `releaseExpired` frees what has expired.
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Db, Queryable } from '../db';
import type { BlobStore } from '../blobs';
import { newId } from '../ids';
import { PlatformError } from '../../session/platform-error';

export interface FileRow {
  id: string;
  workspace_id: string;
  /** Stable position for newest-first pages. */
  pos: number;
  /** An upload's name (its final path component), or an output's path relative to the session's outputs dir. */
  filename: string;
  mime_type: string;
  size_bytes: number;
  /** Hex SHA-256 of the content. */
  sha256: string;
  /** The content's blob; null once an expired file's bytes were released. */
  blob_id: string | null;
  /** The session an output belongs to; null for uploads. */
  scope_session_id: string | null;
  /** An output's path relative to the session's outputs dir; null for uploads. */
  scope_path: string | null;
  downloadable: boolean;
  expires_at: Date | string | null;
  created_at: Date | string;
}

const COLUMNS =
  'id, workspace_id, pos, filename, mime_type, size_bytes, sha256, blob_id, scope_session_id, scope_path, downloadable, expires_at, created_at';

const normalise = (r: FileRow): FileRow => ({ ...r, size_bytes: Number(r.size_bytes) });

/** Past the workspace's STORAGE_QUOTA_BYTES: the upload is refused and nothing of it stays. */
export class StorageQuotaError extends PlatformError {
  constructor(
    readonly quotaBytes: number,
    readonly usedBytes: number,
  ) {
    super(
      `the workspace's file storage quota (${quotaBytes} bytes, STORAGE_QUOTA_BYTES) is exhausted: ${usedBytes} bytes are in use; delete files to free up space, then retry the upload`,
    );
  }
}

/** An output path that is not a plain relative path inside the outputs directory. */
export class OutputPathError extends PlatformError {}

const TYPES: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.py': 'text/x-python',
  '.sh': 'application/x-sh',
  '.xml': 'application/xml',
  '.json': 'application/json',
  '.jsonl': 'application/jsonl',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.tar': 'application/x-tar',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.mp4': 'video/mp4',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** The MIME type a file name's extension implies; `application/octet-stream` when it implies none. */
export function mimeTypeFor(filename: string): string {
  return TYPES[path.extname(filename).toLowerCase()] ?? 'application/octet-stream';
}

/** The usual extension of a MIME type (`.pdf`), or '' when it has none here. */
export function extensionFor(mimeType: string): string {
  const preferred: Record<string, string> = { 'text/html': '.html', 'image/jpeg': '.jpg', 'application/yaml': '.yaml' };
  if (preferred[mimeType]) return preferred[mimeType];
  return Object.entries(TYPES).find(([, t]) => t === mimeType)?.[0] ?? '';
}

/** Whether the file's `expires_at` has passed: its bytes are then unavailable, whatever `blob_id` still says. */
export function isExpired(row: Pick<FileRow, 'expires_at'>, now = new Date()): boolean {
  return row.expires_at !== null && new Date(row.expires_at).getTime() <= now.getTime();
}

/**
 * The workspace's file `fileId`, or undefined when it has none (deleted files are gone). An expired file is
 * returned too, since its metadata remains: callers that want the bytes check `isExpired(row)` (and `blob_id`).
 */
export async function findFile(q: Queryable, workspaceId: string, fileId: string): Promise<FileRow | undefined> {
  const [row] = await q.query<FileRow>(`select ${COLUMNS} from files where id = $1 and workspace_id = $2`, [
    fileId,
    workspaceId,
  ]);
  return row ? normalise(row) : undefined;
}

/** The workspace's files, newest first, before position `before` (null: from the newest), optionally one session's. */
export async function listFiles(
  q: Queryable,
  workspaceId: string,
  o: { before: number | null; scopeId?: string; limit: number },
): Promise<FileRow[]> {
  const rows = await q.query<FileRow>(
    `select ${COLUMNS} from files where workspace_id = $1 and ($2::int is null or pos < $2) and ($3::text is null or scope_session_id = $3) order by pos desc limit $4`,
    [workspaceId, o.before, o.scopeId ?? null, o.limit],
  );
  return rows.map(normalise);
}

/** Those of `ids` that are the workspace's files (in `scopeId` when given), newest first. */
export async function listFilesByIds(
  q: Queryable,
  workspaceId: string,
  ids: string[],
  scopeId?: string,
): Promise<FileRow[]> {
  const rows = await q.query<FileRow>(
    `select ${COLUMNS} from files where workspace_id = $1 and id = any($2::text[]) and ($3::text is null or scope_session_id = $3) order by pos desc`,
    [workspaceId, ids, scopeId ?? null],
  );
  return rows.map(normalise);
}

// The first key of the two-key advisory locks below: which kind of lock the second key is for.
const STORAGE_LOCK = 0x66696c65;
const OUTPUT_LOCK = 0x6f757470;

/** Bytes the workspace's files hold now: every file whose content is still stored and not expired. */
export async function liveFileBytes(q: Queryable, workspaceId: string): Promise<number> {
  const [row] = await q.query<{ n: number | string | null }>(
    `select coalesce(sum(size_bytes), 0) as n from files where workspace_id = $1 and blob_id is not null and (expires_at is null or expires_at > now())`,
    [workspaceId],
  );
  return Number(row?.n ?? 0);
}

export interface NewUpload {
  workspaceId: string;
  filename: string;
  mimeType: string;
  blob: { id: string; sizeBytes: number; sha256: string };
  /** Seconds from now until the bytes expire; absent: never. */
  expiresInSeconds?: number;
  /** The workspace's storage quota; absent: none. */
  quotaBytes?: number;
}

/**
 * Records an upload whose blob `tx` has just written, in that transaction. With a quota, the workspace's count is
 * taken under its lock, so uploads on any number of API processes never exceed it together: past it, throws
 * StorageQuotaError (and the caller's transaction, blob included, rolls back). Uploads are not downloadable: only a
 * session's outputs are.
 */
export async function insertUpload(tx: Queryable, u: NewUpload): Promise<FileRow> {
  if (u.quotaBytes !== undefined) {
    await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [STORAGE_LOCK, u.workspaceId]);
    const used = await liveFileBytes(tx, u.workspaceId);
    if (used + u.blob.sizeBytes > u.quotaBytes) throw new StorageQuotaError(u.quotaBytes, used);
  }
  const [row] = await tx.query<FileRow>(
    `insert into files (id, workspace_id, filename, mime_type, size_bytes, sha256, blob_id, downloadable, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, false, case when $8::int is null then null else now() + make_interval(secs => $8::int) end)
     returning ${COLUMNS}`,
    [
      newId('file'),
      u.workspaceId,
      u.filename,
      u.mimeType,
      u.blob.sizeBytes,
      u.blob.sha256,
      u.blob.id,
      u.expiresInSeconds ?? null,
    ],
  );
  return normalise(row);
}

/** Deletes the workspace's file `fileId` and its blob; false when it has no such file. */
export async function deleteFile(db: Db, blobs: BlobStore, workspaceId: string, fileId: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [gone] = await tx.query<{ blob_id: string | null }>(
      'delete from files where id = $1 and workspace_id = $2 returning blob_id',
      [fileId, workspaceId],
    );
    if (!gone) return false;
    if (gone.blob_id) await blobs.delete(gone.blob_id, tx);
    return true;
  });
}

/**
 * Frees the bytes of the workspace's files past their `expires_at` (the rows stay, with `blob_id` null). Run
 * before a list, a download and an upload, so expired bytes never outlive the next use of the workspace's files.
 */
export async function releaseExpired(db: Db, blobs: BlobStore, workspaceId: string): Promise<number> {
  return db.transaction(async (tx) => {
    const released = await tx.query<{ blob_id: string }>(
      `with gone as (
         select id, blob_id from files
         where workspace_id = $1 and blob_id is not null and expires_at is not null and expires_at <= now()
         for update
       )
       update files f set blob_id = null from gone where f.id = gone.id returning gone.blob_id`,
      [workspaceId],
    );
    for (const r of released) await blobs.delete(r.blob_id, tx);
    return released.length;
  });
}

/** `relativePath` as stored: a plain relative path (no `.`/`..`/empty segments, no leading `/`), else OutputPathError. */
function outputPath(relativePath: string): string {
  const segments = relativePath.split('/');
  if (
    relativePath.length === 0 ||
    relativePath.length > 4096 ||
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f]/.test(relativePath) ||
    segments.some((s) => s === '' || s === '.' || s === '..')
  )
    throw new OutputPathError(`output path ${JSON.stringify(relativePath)} is not a plain path inside the outputs dir`);
  return relativePath;
}

/**
 * Stores the content a session left at `relativePath` under its outputs directory, as a file scoped to the session
 * (`files.list({ scope_id })`) whose `filename` is that relative path (so `a/report.md` and `b/report.md` stay
 * apart in a listing) and which is downloadable. One file per (session, path): new content makes a new file (a new
 * id) and removes the previous row and its blob, in one transaction; the same content returns the current row.
 */
export async function saveSessionOutput(
  db: Db,
  blobs: BlobStore,
  o: { workspaceId: string; sessionId: string; relativePath: string; content: Buffer },
): Promise<FileRow> {
  const rel = outputPath(o.relativePath);
  const sha256 = createHash('sha256').update(o.content).digest('hex');
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [OUTPUT_LOCK, `${o.sessionId}/${rel}`]);
    const [current] = await tx.query<FileRow>(
      `select ${COLUMNS} from files where scope_session_id = $1 and scope_path = $2`,
      [o.sessionId, rel],
    );
    if (current && current.sha256 === sha256 && current.blob_id && Number(current.size_bytes) === o.content.length)
      return normalise(current);
    const blob = await blobs.put(o.workspaceId, o.content, { q: tx });
    if (current) {
      await tx.query('delete from files where id = $1', [current.id]);
      if (current.blob_id) await blobs.delete(current.blob_id, tx);
    }
    const [row] = await tx.query<FileRow>(
      `insert into files (id, workspace_id, filename, mime_type, size_bytes, sha256, blob_id, scope_session_id, scope_path, downloadable)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, true) returning ${COLUMNS}`,
      [newId('file'), o.workspaceId, rel, mimeTypeFor(rel), blob.sizeBytes, blob.sha256, blob.id, o.sessionId, rel],
    );
    return normalise(row);
  });
}

/** The files scoped to session `sessionId` (its outputs), by path: what a scan of its outputs dir compares with. */
export async function sessionOutputs(q: Queryable, sessionId: string): Promise<FileRow[]> {
  const rows = await q.query<FileRow>(`select ${COLUMNS} from files where scope_session_id = $1 order by scope_path`, [
    sessionId,
  ]);
  return rows.map(normalise);
}

/** Deletes every file scoped to session `sessionId`, with their blobs: part of deleting the session for good. */
export async function deleteSessionFiles(q: Queryable, blobs: BlobStore, sessionId: string): Promise<void> {
  const gone = await q.query<{ blob_id: string | null }>(
    'delete from files where scope_session_id = $1 returning blob_id',
    [sessionId],
  );
  for (const r of gone) if (r.blob_id) await blobs.delete(r.blob_id, q);
}
