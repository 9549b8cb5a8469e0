// /v1/files: uploads (multipart, streamed into the blob store), a session's outputs scoped to it, their metadata,
// pages, downloads and deletes. Uploads are not downloadable (as on the hosted API, only files a session made are);
// an expired file keeps its metadata and loses its bytes.
import path from 'node:path';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { Config } from '../config';
import { BlobTooLargeError, MAX_BLOB_BYTES } from '../storage/blobs';
import {
  StorageQuotaError,
  deleteFile,
  extensionFor,
  findFile,
  insertUpload,
  isExpired,
  listFiles,
  listFilesByIds,
  liveFileBytes,
  mimeTypeFor,
  releaseExpired,
  type FileRow,
} from '../storage/repos/files-repo';
import { ApiError, badRequest, notFound } from './api-error';
import { discardRest, multipartError, multipartScope, type MultipartLimits } from './multipart';
import { IdSchema, cursorPos, filterDigest, iso, isoOrNull, pageSchema, toPage } from './shared-fields';
import type { ApiApp, ApiDeps, FileLimits } from './route-context';

export const FileMetadataSchema = z
  .object({
    id: z.string(),
    type: z.literal('file'),
    filename: z.string(),
    mime_type: z.string(),
    size_bytes: z.number(),
    created_at: z.string(),
    downloadable: z.boolean(),
    expires_at: z.string().nullable(),
    scope: z.object({ type: z.literal('session'), id: z.string() }).nullable(),
  })
  .meta({ id: 'FileMetadata' });
export type ApiFile = z.infer<typeof FileMetadataSchema>;

export const MIN_EXPIRES_IN_SECONDS = 3600;
export const MAX_EXPIRES_IN_SECONDS = 7_776_000;
/** The longest file name kept; longer is a 400. */
const MAX_FILENAME = 255;

export function toFileMetadata(r: FileRow, now = new Date()): ApiFile {
  const expired = isExpired(r, now);
  return {
    id: r.id,
    type: 'file',
    filename: r.filename,
    mime_type: r.mime_type,
    size_bytes: r.size_bytes,
    created_at: iso(r.created_at),
    downloadable: r.downloadable && !expired && r.blob_id !== null,
    expires_at: isoOrNull(r.expires_at),
    scope: r.scope_session_id ? { type: 'session', id: r.scope_session_id } : null,
  };
}

/** The SDK's FileNotDownloadableError (400 `file_not_downloadable`). */
export const notDownloadable = (id: string) =>
  badRequest(
    `file ${id} is not downloadable: only files a session wrote to its outputs can be downloaded, not uploads`,
    'file_not_downloadable',
  );
/** The SDK's FileExpiredError (404 `file_expired`). */
export const fileExpired = (id: string, at: unknown) =>
  new ApiError(404, 'not_found_error', `file ${id} expired at ${iso(at)}; its content is no longer available`, {
    errorCode: 'file_expired',
  });
/** The SDK's StorageQuotaExceededError (400 `storage_quota_exceeded`). */
export const quotaExceeded = (e: StorageQuotaError) => badRequest(e.message, 'storage_quota_exceeded');
/** A file past FILES_MAX_BYTES: 413, as the hosted API answers an upload past its size (the SDK's ContentTooLargeError). */
export const fileTooLarge = (limit: number) =>
  new ApiError(
    413,
    'invalid_request_error',
    `file: larger than ${limit} bytes, the most a file may hold (FILES_MAX_BYTES)`,
  );

export const ExpiresInSchema = z
  .string()
  .regex(/^\d{1,10}$/, 'must be a whole number of seconds')
  .transform(Number)
  .refine(
    (n) => n >= MIN_EXPIRES_IN_SECONDS && n <= MAX_EXPIRES_IN_SECONDS,
    `must be between ${MIN_EXPIRES_IN_SECONDS} (one hour) and ${MAX_EXPIRES_IN_SECONDS} (ninety days) seconds`,
  );

const MimeTypeSchema = z
  .string()
  .max(255)
  .regex(/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/, 'is not a MIME type');

/**
 * The name an upload is stored under: the final path component of what the client sent (either separator), or
 * `unnamed` plus the extension of its MIME type when that is empty. A name with control characters, or longer than
 * 255 characters, is a 400.
 */
export function uploadFilename(sent: string | undefined, mimeType: string): string {
  const last = (sent ?? '').split(/[/\\]/).pop() ?? '';
  const name = last === '.' || last === '..' ? '' : last;
  if (name === '') return `unnamed${extensionFor(mimeType)}`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw badRequest('file: the filename must not contain control characters');
  if ([...name].length > MAX_FILENAME) throw badRequest(`file: the filename is longer than ${MAX_FILENAME} characters`);
  return name;
}

/** The part's content type when it says something, else the one the file name's extension implies. */
export function uploadMimeType(partType: string | undefined, filename: string | undefined): string {
  if (partType && partType !== 'application/octet-stream') {
    const t = MimeTypeSchema.safeParse(partType);
    if (!t.success) throw badRequest(`file: content type ${JSON.stringify(partType.slice(0, 100))} is not a MIME type`);
    return t.data;
  }
  return mimeTypeFor(filename ?? '');
}

const FilePath = z.object({ file_id: IdSchema });

/** An id to look up: any that names no file of the workspace is left out of the answer, as the SDK documents. */
const LookupIdSchema = z.string().min(1, 'ids must not be empty').max(256, 'ids are at most 256 characters');

/** `ids[]`, as the SDK sends it: one value or many, at most 100 once duplicates are dropped. */
const IdsSchema = z
  .preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(LookupIdSchema).max(1000, 'at most 100 ids'))
  .transform((ids) => [...new Set(ids)])
  .refine((ids) => ids.length <= 100, 'at most 100 ids (after de-duplication)');

const FileListQuerySchema = z
  .strictObject({
    limit: z.coerce
      .number({ error: 'limit must be an integer' })
      .int('limit must be an integer')
      .min(1, 'limit must be at least 1')
      .max(1000, 'limit must be at most 1000')
      .optional(),
    page: z.string().max(512, 'page is not a cursor this API returned').optional(),
    'ids[]': IdsSchema.optional(),
    // A session id: the API's (`sesn_…`) or one the command line chose (letters, digits, dot, dash, underscore).
    scope_id: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, 'is not a session id')
      .optional(),
  })
  .refine((q) => q['ids[]'] === undefined || (q.limit === undefined && q.page === undefined), {
    message: 'ids is mutually exclusive with page and limit',
    path: ['ids'],
  });

const DEFAULT_LIMIT = 20;

/** `filename*` and an ASCII `filename` for Content-Disposition. */
function contentDisposition(filename: string): string {
  const base = path.posix.basename(filename);
  const ascii = base.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(base)}`;
}

/** FILES_MAX_BYTES and STORAGE_QUOTA_BYTES as the routes take them. */
export function fileLimitsFrom(config: Pick<Config, 'FILES_MAX_BYTES' | 'STORAGE_QUOTA_BYTES'>): FileLimits {
  const quota = config.STORAGE_QUOTA_BYTES;
  return {
    maxBytes: Math.min(Number(config.FILES_MAX_BYTES), MAX_BLOB_BYTES),
    ...(quota !== 'off' && Number(quota) > 0 ? { quotaBytes: Number(quota) } : {}),
  };
}

export function limitsOf(deps: ApiDeps): FileLimits {
  return deps.files ?? { maxBytes: MAX_BLOB_BYTES };
}

export function fileRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db, blobs } = deps;
  const limits = limitsOf(deps);
  // One more byte than the limit passes the parser, so the blob store sees (and refuses) an upload past it.
  const multipart: MultipartLimits = {
    fileBytes: limits.maxBytes + 1,
    files: 1,
    fields: 4,
    fieldBytes: 64,
    fileFields: ['file'],
  };

  const visible = async (workspaceId: string, id: string): Promise<FileRow> => {
    const row = await findFile(db, workspaceId, id);
    if (!row) throw notFound('file', id);
    return row;
  };

  multipartScope(app, multipart, (scope) => {
    scope.post(
      '/v1/files',
      { schema: { operationId: 'uploadFile', response: { 200: FileMetadataSchema } } },
      async (req) => {
        if (!req.isMultipart())
          throw badRequest('body: POST /v1/files takes multipart/form-data with the file in a part named file');
        const workspaceId = req.workspaceId;
        await releaseExpired(db, blobs, workspaceId);
        // Room left under the quota: an upload past it is cut off while it streams, not after it is all stored.
        const room =
          limits.quotaBytes === undefined ? undefined : limits.quotaBytes - (await liveFileBytes(db, workspaceId));
        try {
          const row = await db.transaction(async (tx) => {
            let problem: unknown;
            let upload:
              | { blob: { id: string; sizeBytes: number; sha256: string }; filename: string; mimeType: string }
              | undefined;
            let expiresIn: string | undefined;
            for await (const part of req.parts()) {
              if (problem !== undefined) {
                if (part.type === 'file') part.file.resume();
                continue;
              }
              try {
                if (part.type === 'file') {
                  if (part.fieldname !== 'file')
                    throw badRequest(
                      `${part.fieldname}: not a field files.upload takes; send the file as the part file`,
                    );
                  const mimeType = uploadMimeType(part.mimetype, part.filename);
                  const filename = uploadFilename(part.filename, mimeType);
                  if (room !== undefined && room <= 0)
                    throw new StorageQuotaError(limits.quotaBytes!, limits.quotaBytes! - room);
                  const maxBytes = Math.min(limits.maxBytes, room ?? Infinity);
                  let blob;
                  try {
                    blob = await blobs.put(workspaceId, part.file, { q: tx, maxBytes });
                  } catch (e) {
                    if (e instanceof BlobTooLargeError && maxBytes < limits.maxBytes)
                      throw new StorageQuotaError(limits.quotaBytes!, limits.quotaBytes! - room!);
                    throw e;
                  }
                  if (part.file.truncated) throw fileTooLarge(limits.maxBytes);
                  upload = { blob, filename, mimeType };
                } else if (part.fieldname === 'expires_in_seconds') {
                  if (expiresIn !== undefined) throw badRequest('expires_in_seconds: sent more than once');
                  if (part.valueTruncated) throw badRequest('expires_in_seconds: too long to be a number of seconds');
                  expiresIn = String(part.value);
                } else {
                  throw badRequest(
                    `${part.fieldname.slice(0, 64)}: not a field files.upload takes (it takes file and expires_in_seconds)`,
                  );
                }
              } catch (e) {
                problem = e;
                if (part.type === 'file' && !part.file.readableEnded) part.file.resume();
              }
            }
            if (problem !== undefined) throw problem;
            if (!upload) throw badRequest('file: required; send the file as a multipart part named file');
            let expiresInSeconds: number | undefined;
            if (expiresIn !== undefined) {
              const parsed = ExpiresInSchema.safeParse(expiresIn);
              if (!parsed.success) throw badRequest(`expires_in_seconds: ${parsed.error.issues[0].message}`);
              expiresInSeconds = parsed.data;
            }
            return insertUpload(tx, {
              workspaceId,
              filename: upload.filename,
              mimeType: upload.mimeType,
              blob: upload.blob,
              ...(expiresInSeconds !== undefined ? { expiresInSeconds } : {}),
              ...(limits.quotaBytes !== undefined ? { quotaBytes: limits.quotaBytes } : {}),
            });
          });
          return toFileMetadata(row);
        } catch (e) {
          discardRest(req);
          if (e instanceof StorageQuotaError) throw quotaExceeded(e);
          if (e instanceof BlobTooLargeError) throw fileTooLarge(limits.maxBytes);
          throw multipartError(e, multipart);
        }
      },
    );
  });

  app.get(
    '/v1/files',
    {
      schema: {
        operationId: 'listFiles',
        querystring: FileListQuerySchema,
        response: { 200: pageSchema(FileMetadataSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      await releaseExpired(db, blobs, req.workspaceId);
      const now = new Date();
      if (q['ids[]'] !== undefined) {
        const rows = await listFilesByIds(db, req.workspaceId, q['ids[]'], q.scope_id);
        return { data: rows.map((r) => toFileMetadata(r, now)), next_page: null };
      }
      const limit = q.limit ?? DEFAULT_LIMIT;
      const filters = filterDigest({ scope_id: q.scope_id });
      const rows = await listFiles(db, req.workspaceId, {
        before: cursorPos(q.page, filters) ?? null,
        ...(q.scope_id !== undefined ? { scopeId: q.scope_id } : {}),
        limit: limit + 1,
      });
      return toPage(rows, limit, (r) => toFileMetadata(r, now), filters);
    },
  );

  app.get(
    '/v1/files/:file_id',
    { schema: { operationId: 'retrieveFileMetadata', params: FilePath, response: { 200: FileMetadataSchema } } },
    async (req) => toFileMetadata(await visible(req.workspaceId, req.params.file_id)),
  );

  app.get(
    '/v1/files/:file_id/content',
    { schema: { operationId: 'downloadFile', params: FilePath } },
    async (req, reply) => {
      const row = await visible(req.workspaceId, req.params.file_id);
      if (isExpired(row) || !row.blob_id) {
        await releaseExpired(db, blobs, req.workspaceId);
        throw fileExpired(row.id, row.expires_at);
      }
      if (!row.downloadable) throw notDownloadable(row.id);
      // The first chunk is read before the headers go, so a blob that cannot be read is an error, not a cut body.
      const chunks = blobs.stream(row.blob_id);
      const first = await chunks.next();
      async function* body() {
        if (!first.done) yield first.value;
        yield* chunks;
      }
      return reply
        .header('content-type', row.mime_type)
        .header('content-length', String(row.size_bytes))
        .header('content-disposition', contentDisposition(row.filename))
        .send(Readable.from(body()));
    },
  );

  app.delete(
    '/v1/files/:file_id',
    {
      schema: {
        operationId: 'deleteFile',
        params: FilePath,
        response: { 200: z.object({ id: z.string(), type: z.literal('file_deleted') }) },
      },
    },
    async (req) => {
      const id = req.params.file_id;
      if (!(await deleteFile(db, blobs, req.workspaceId, id))) throw notFound('file', id);
      return { id, type: 'file_deleted' as const };
    },
  );
}
