// /v1/memory_stores/{id}/memory_versions: every change to a store's memories, newest first, who made it, and
// redaction (the content, path, hash and size cleared; the row, its author and operation kept).
import { z } from 'zod';
import { findMemoryVersion, listMemoryVersions, redactMemoryVersion } from '../../storage/repos/memory-repo';
import {
  IdSchema,
  PageQuerySchema,
  TimeQuerySchema,
  cursorPos,
  filterDigest,
  pageSchema,
  toPage,
} from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { ApiError, notFound } from '../api-error';
import { MemoryVersionSchema, StorePath, ViewSchema, apiActor, storeFor, toMemoryVersion } from './memory-fields';

const VersionPath = z.object({ memory_store_id: IdSchema, memory_version_id: IdSchema });

const ListQuerySchema = PageQuerySchema.extend({
  memory_id: IdSchema.optional(),
  operation: z
    .enum(['created', 'modified', 'deleted'], { error: 'operation must be created, modified or deleted' })
    .optional(),
  session_id: IdSchema.optional(),
  api_key_id: IdSchema.optional(),
  service_account_id: IdSchema.optional(),
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
  view: ViewSchema.optional(),
});

/** Only `full` lists carry content, so a page of them holds at most this many. */
const FULL_VIEW_LIMIT = 20;

export function memoryVersionRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db, blobs } = deps;

  app.get(
    '/v1/memory_stores/:memory_store_id/memory_versions',
    {
      schema: {
        operationId: 'listMemoryVersions',
        params: StorePath,
        querystring: ListQuerySchema,
        response: { 200: pageSchema(MemoryVersionSchema) },
      },
    },
    async (req) => {
      const store = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      const q = req.query;
      const view = q.view ?? 'basic';
      const limit = view === 'full' ? Math.min(q.limit, FULL_VIEW_LIMIT) : q.limit;
      const f = {
        memoryId: q.memory_id,
        operation: q.operation,
        sessionId: q.session_id,
        apiKeyId: q.api_key_id,
        serviceAccountId: q.service_account_id,
        createdGte: q['created_at[gte]'],
        createdLte: q['created_at[lte]'],
      };
      const filters = filterDigest(f);
      const rows = await listMemoryVersions(db, store.id, {
        ...f,
        before: cursorPos(q.page, filters) ?? null,
        limit: limit + 1,
      });
      const page = toPage(rows, limit, (r) => r, filters);
      const data = [];
      for (const r of page.data) data.push(await toMemoryVersion(db, blobs, r, view));
      return { data, next_page: page.next_page };
    },
  );

  app.get(
    '/v1/memory_stores/:memory_store_id/memory_versions/:memory_version_id',
    {
      schema: {
        operationId: 'retrieveMemoryVersion',
        params: VersionPath,
        querystring: z.strictObject({ view: ViewSchema.optional() }),
        response: { 200: MemoryVersionSchema },
      },
    },
    async (req) => {
      const store = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      const v = await findMemoryVersion(db, store.id, req.params.memory_version_id);
      if (!v) throw notFound('memory version', req.params.memory_version_id);
      return toMemoryVersion(db, blobs, v, req.query.view ?? 'full');
    },
  );

  app.post(
    '/v1/memory_stores/:memory_store_id/memory_versions/:memory_version_id/redact',
    {
      schema: {
        operationId: 'redactMemoryVersion',
        params: VersionPath,
        response: { 200: MemoryVersionSchema },
      },
    },
    async (req) => {
      const store = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      const r = await redactMemoryVersion(db, blobs, {
        storeId: store.id,
        versionId: req.params.memory_version_id,
        actor: apiActor(req),
      });
      if (!r.ok && r.reason === 'not_found') throw notFound('memory version', req.params.memory_version_id);
      if (!r.ok)
        throw new ApiError(
          409,
          'conflict_error',
          `version ${req.params.memory_version_id} holds the current content of memory ${r.memoryId}; update or delete the memory first, then redact this version`,
          { headers: { 'x-should-retry': 'false' } },
        );
      return toMemoryVersion(db, blobs, r.version, 'basic');
    },
  );
}
