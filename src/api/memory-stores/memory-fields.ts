// What the /v1/memory_stores routes share: the store a request names, who the request acts as, the `view`
// parameter, the memory and version objects as the SDK declares them, and a refused write as its HTTP error.
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../../storage/db';
import type { BlobStore } from '../../storage/blobs';
import {
  findMemoryStore,
  memoryContent,
  versionContent,
  type MemoryActor,
  type MemoryRow,
  type MemoryStoreRow,
  type MemoryVersionRow,
  type MemoryWriteResult,
} from '../../storage/repos/memory-repo';
import { ApiError, badRequest, notFound } from '../api-error';
import { IdSchema, iso } from '../shared-fields';

export const StorePath = z.object({ memory_store_id: IdSchema });

export const ViewSchema = z.enum(['basic', 'full'], { error: 'view must be basic or full' });
export type View = z.infer<typeof ViewSchema>;

/** 64 lowercase hexadecimal characters: a `content_sha256`. */
export const Sha256Schema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 digest: 64 lowercase hexadecimal characters');

export async function storeFor(q: Queryable, workspaceId: string, id: string): Promise<MemoryStoreRow> {
  const store = await findMemoryStore(q, workspaceId, id);
  if (!store) throw notFound('memory store', id);
  return store;
}

/** The API key the request authenticated with, as a version's author or redactor. */
export function apiActor(req: FastifyRequest): MemoryActor {
  return { type: 'api_actor', api_key_id: req.apiKeyId ?? '' };
}

const ActorSchema = z.union([
  z.object({ type: z.literal('api_actor'), api_key_id: z.string() }),
  z.object({ type: z.literal('session_actor'), session_id: z.string() }),
]);

export const MemorySchema = z
  .object({
    id: z.string(),
    type: z.literal('memory'),
    memory_store_id: z.string(),
    memory_version_id: z.string(),
    path: z.string(),
    content: z.string().nullable(),
    content_sha256: z.string(),
    content_size_bytes: z.number(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Memory' });
export type ApiMemory = z.infer<typeof MemorySchema>;

export const MemoryVersionSchema = z
  .object({
    id: z.string(),
    type: z.literal('memory_version'),
    memory_id: z.string(),
    memory_store_id: z.string(),
    operation: z.enum(['created', 'modified', 'deleted']),
    path: z.string().nullable(),
    content: z.string().nullable(),
    content_sha256: z.string().nullable(),
    content_size_bytes: z.number().nullable(),
    created_at: z.string(),
    created_by: ActorSchema.optional(),
    redacted_at: z.string().nullable(),
    redacted_by: ActorSchema.optional(),
  })
  .meta({ id: 'MemoryVersion' });
export type ApiMemoryVersion = z.infer<typeof MemoryVersionSchema>;

export async function toMemory(q: Queryable, blobs: BlobStore, m: MemoryRow, view: View): Promise<ApiMemory> {
  return {
    id: m.id,
    type: 'memory',
    memory_store_id: m.store_id,
    memory_version_id: m.version_id,
    path: m.path,
    content: view === 'full' ? (await memoryContent(q, blobs, m)).toString('utf8') : null,
    content_sha256: m.content_sha256,
    content_size_bytes: Number(m.content_size_bytes),
    created_at: iso(m.created_at),
    updated_at: iso(m.updated_at),
  };
}

export async function toMemoryVersion(
  q: Queryable,
  blobs: BlobStore,
  v: MemoryVersionRow,
  view: View,
): Promise<ApiMemoryVersion> {
  const content = view === 'full' ? await versionContent(q, blobs, v) : undefined;
  return {
    id: v.id,
    type: 'memory_version',
    memory_id: v.memory_id,
    memory_store_id: v.store_id,
    operation: v.operation,
    path: v.path,
    content: content ? content.toString('utf8') : null,
    content_sha256: v.content_sha256,
    content_size_bytes: v.content_size_bytes === null ? null : Number(v.content_size_bytes),
    created_at: iso(v.created_at),
    ...(v.created_by ? { created_by: v.created_by } : {}),
    redacted_at: v.redacted_at ? iso(v.redacted_at) : null,
    ...(v.redacted_by ? { redacted_by: v.redacted_by } : {}),
  };
}

const notRetried = { 'x-should-retry': 'false' };

/** The memory a write left, or the error that says why it was refused. */
export function writtenOrThrow(r: MemoryWriteResult, storeId: string, memoryId?: string): MemoryRow {
  if (r.ok) return r.memory;
  switch (r.reason) {
    case 'store_not_found':
      throw notFound('memory store', storeId);
    case 'not_found':
      throw notFound('memory', memoryId ?? '');
    case 'archived':
      throw badRequest(`memory store ${storeId} is archived: its memories can be read and deleted, not written`);
    case 'invalid':
      throw badRequest(r.message);
    case 'precondition':
      throw new ApiError(
        409,
        'memory_precondition_failed_error',
        "the memory's content_sha256 is not the one the precondition expects; retrieve the memory and retry",
        { headers: notRetried },
      );
    case 'conflict':
      throw new ApiError(
        409,
        'memory_path_conflict_error',
        `the path conflicts with the memory at ${r.conflictingPath}: a path cannot be taken by two memories, nor be an ancestor or descendant of another memory's path`,
        {
          headers: notRetried,
          fields: { conflicting_memory_id: r.conflictingMemoryId, conflicting_path: r.conflictingPath },
        },
      );
  }
}
