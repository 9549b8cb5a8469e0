// /v1/memory_stores/{id}/memories: text documents at paths in a store. Every change is a new version
// (./memory-versions.ts), written through the same functions the sandbox's memory mounts use
// (src/storage/repos/memory-repo.ts), with `content_sha256` preconditions for safe concurrent edits.
import { z } from 'zod';
import { createMemory, deleteMemory, findMemory, listMemories, updateMemory } from '../../storage/repos/memory-repo';
import { IdSchema, PageQuerySchema, filterDigest } from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { badRequest, notFound } from '../api-error';
import {
  MemorySchema,
  Sha256Schema,
  StorePath,
  ViewSchema,
  apiActor,
  storeFor,
  toMemory,
  writtenOrThrow,
} from './memory-fields';

const MemoryPath = z.object({ memory_store_id: IdSchema, memory_id: IdSchema });

const PrefixSchema = z.object({ path: z.string(), type: z.literal('memory_prefix') }).meta({ id: 'MemoryPrefix' });
const ListItemSchema = z.union([MemorySchema, PrefixSchema]);

/** A page of a listing in path order continues after a path (or prefix); the cursor carries it and the filters. */
const PathCursorSchema = z.strictObject({ a: z.string().max(2048), f: z.string().max(32).optional() });

function encodePathCursor(after: string, filters?: string): string {
  return Buffer.from(JSON.stringify({ a: after, ...(filters ? { f: filters } : {}) })).toString('base64url');
}

function decodePathCursor(page: string | undefined, filters?: string): string | null {
  if (page === undefined || page === '') return null;
  let c: z.infer<typeof PathCursorSchema>;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(page)) throw new Error('not base64url');
    c = PathCursorSchema.parse(JSON.parse(Buffer.from(page, 'base64url').toString('utf8')));
  } catch {
    throw badRequest('page is not a cursor this API returned');
  }
  if (c.f !== filters)
    throw badRequest(
      'page was returned for other filters; send the same filters with it, or leave out page to start over',
    );
  return c.a;
}

const PathPrefixSchema = z
  .string()
  .max(1024, 'path_prefix is at most 1,024 characters')
  .refine((p) => p.startsWith('/') && p.endsWith('/'), 'path_prefix must start and end with "/", such as /notes/');

const ListQuerySchema = PageQuerySchema.extend({
  path_prefix: PathPrefixSchema.optional(),
  depth: z.coerce
    .number({ error: 'depth must be an integer' })
    .int('depth must be an integer')
    .min(0, 'depth must be at least 0')
    .max(20, 'depth must be at most 20')
    .optional(),
  view: ViewSchema.optional(),
});

const PreconditionSchema = z.strictObject({
  type: z.literal('content_sha256', { error: 'precondition.type must be content_sha256' }),
  content_sha256: Sha256Schema.optional(),
});

/** Only `full` lists carry content, so a page of them holds at most this many. */
const FULL_VIEW_LIMIT = 20;

export function memoryRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db, blobs } = deps;

  app.post(
    '/v1/memory_stores/:memory_store_id/memories',
    {
      schema: {
        operationId: 'createMemory',
        params: StorePath,
        querystring: z.strictObject({ view: ViewSchema.optional() }),
        body: z.strictObject({ path: z.string(), content: z.string().nullable() }),
        response: { 200: MemorySchema },
      },
    },
    async (req) => {
      if (req.body.content === null) throw badRequest('content: must be a string; pass "" for an empty memory');
      const r = await createMemory(db, blobs, {
        workspaceId: req.workspaceId,
        storeId: req.params.memory_store_id,
        path: req.body.path,
        content: req.body.content,
        actor: apiActor(req),
      });
      const m = writtenOrThrow(r, req.params.memory_store_id);
      return toMemory(db, blobs, m, req.query.view ?? 'basic');
    },
  );

  app.get(
    '/v1/memory_stores/:memory_store_id/memories/:memory_id',
    {
      schema: {
        operationId: 'retrieveMemory',
        params: MemoryPath,
        querystring: z.strictObject({ view: ViewSchema.optional() }),
        response: { 200: MemorySchema },
      },
    },
    async (req) => {
      const store = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      const m = await findMemory(db, store.id, req.params.memory_id);
      if (!m) throw notFound('memory', req.params.memory_id);
      return toMemory(db, blobs, m, req.query.view ?? 'full');
    },
  );

  app.post(
    '/v1/memory_stores/:memory_store_id/memories/:memory_id',
    {
      schema: {
        operationId: 'updateMemory',
        params: MemoryPath,
        querystring: z.strictObject({ view: ViewSchema.optional() }),
        body: z.strictObject({
          content: z.string().nullish(),
          path: z.string().nullish(),
          precondition: PreconditionSchema.optional(),
        }),
        response: { 200: MemorySchema },
      },
    },
    async (req) => {
      const { content, path, precondition } = req.body;
      if (precondition && precondition.content_sha256 === undefined)
        throw badRequest('precondition.content_sha256: required when a precondition is given');
      const r = await updateMemory(db, blobs, {
        workspaceId: req.workspaceId,
        storeId: req.params.memory_store_id,
        memoryId: req.params.memory_id,
        ...(content != null ? { content } : {}),
        ...(path != null ? { path } : {}),
        ...(precondition?.content_sha256 !== undefined ? { expectedSha256: precondition.content_sha256 } : {}),
        actor: apiActor(req),
      });
      const m = writtenOrThrow(r, req.params.memory_store_id, req.params.memory_id);
      return toMemory(db, blobs, m, req.query.view ?? 'basic');
    },
  );

  app.get(
    '/v1/memory_stores/:memory_store_id/memories',
    {
      schema: {
        operationId: 'listMemories',
        params: StorePath,
        querystring: ListQuerySchema,
        response: { 200: z.object({ data: z.array(ListItemSchema), next_page: z.string().nullable() }) },
      },
    },
    async (req) => {
      const store = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      const q = req.query;
      const view = q.view ?? 'basic';
      const limit = view === 'full' ? Math.min(q.limit, FULL_VIEW_LIMIT) : q.limit;
      const prefix = q.path_prefix ?? '/';
      const depth = q.depth ?? 0;
      const filters = filterDigest({ prefix, depth });
      const rows = await listMemories(db, store.id, {
        prefix,
        depth,
        after: decodePathCursor(q.page, filters),
        limit: limit + 1,
      });
      const shown = rows.slice(0, limit);
      const data = [];
      for (const e of shown)
        data.push(
          e.kind === 'prefix'
            ? { type: 'memory_prefix' as const, path: e.path }
            : await toMemory(db, blobs, e.memory, view),
        );
      const last = shown[shown.length - 1];
      const lastKey = last ? (last.kind === 'prefix' ? last.path : last.memory.path) : undefined;
      return {
        data,
        next_page: rows.length > limit && lastKey !== undefined ? encodePathCursor(lastKey, filters) : null,
      };
    },
  );

  app.delete(
    '/v1/memory_stores/:memory_store_id/memories/:memory_id',
    {
      schema: {
        operationId: 'deleteMemory',
        params: MemoryPath,
        querystring: z.strictObject({ expected_content_sha256: Sha256Schema.optional() }),
        response: { 200: z.object({ id: z.string(), type: z.literal('memory_deleted') }) },
      },
    },
    async (req) => {
      const r = await deleteMemory(db, blobs, {
        workspaceId: req.workspaceId,
        storeId: req.params.memory_store_id,
        memoryId: req.params.memory_id,
        ...(req.query.expected_content_sha256 !== undefined
          ? { expectedSha256: req.query.expected_content_sha256 }
          : {}),
        actor: apiActor(req),
      });
      const m = writtenOrThrow(r, req.params.memory_store_id, req.params.memory_id);
      return { id: m.id, type: 'memory_deleted' as const };
    },
  );
}
