// /v1/memory_stores: named containers of memories (./memories.ts) with their history (./memory-versions.ts),
// mounted into a session's sandbox under /mnt/memory/. Rows and writes: src/storage/repos/memory-repo.ts.
import { z } from 'zod';
import {
  archiveMemoryStore,
  deleteMemoryStore,
  insertMemoryStore,
  listMemoryStores,
  updateMemoryStore,
  type MemoryStoreRow,
} from '../../storage/repos/memory-repo';
import {
  MetadataPatchSchema,
  MetadataSchema,
  PageQuerySchema,
  TimeQuerySchema,
  applyMetadataPatch,
  booleanQuery,
  cursorPos,
  filterDigest,
  iso,
  isoOrNull,
  newId,
  pageSchema,
  toPage,
} from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { badRequest } from '../api-error';
import { StorePath, storeFor } from './memory-fields';
import { memoryRoutes } from './memories';
import { memoryVersionRoutes } from './memory-versions';
import { recordWebhookEvent } from '../../webhooks/webhook-events';

export const MemoryStoreSchema = z
  .object({
    id: z.string(),
    type: z.literal('memory_store'),
    name: z.string(),
    description: z.string(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'MemoryStore' });
type ApiMemoryStore = z.infer<typeof MemoryStoreSchema>;

const NameSchema = z
  .string()
  .min(1, 'name must not be empty')
  .max(255, 'name is at most 255 characters')
  .refine((s) => !/\p{Cc}/u.test(s), 'name must not contain control characters');
const DescriptionSchema = z.string().max(1024, 'description is at most 1,024 characters');

const toStore = (r: MemoryStoreRow): ApiMemoryStore => ({
  id: r.id,
  type: 'memory_store',
  name: r.name,
  description: r.description,
  metadata: r.metadata,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  archived_at: isoOrNull(r.archived_at),
});

const ListQuerySchema = PageQuerySchema.extend({
  include_archived: booleanQuery.optional(),
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
});

export function memoryStoreRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db, blobs } = deps;
  app.post(
    '/v1/memory_stores',
    {
      schema: {
        operationId: 'createMemoryStore',
        body: z.strictObject({
          name: NameSchema,
          description: DescriptionSchema.optional(),
          metadata: MetadataSchema.optional(),
        }),
        response: { 200: MemoryStoreSchema },
      },
    },
    async (req) => {
      const id = newId('memstore');
      await db.transaction(async (tx) => {
        await insertMemoryStore(tx, {
          id,
          workspaceId: req.workspaceId,
          name: req.body.name,
          description: req.body.description ?? '',
          metadata: req.body.metadata ?? {},
        });
        await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'memory_store.created', data: { id } });
      });
      return toStore(await storeFor(db, req.workspaceId, id));
    },
  );

  app.get(
    '/v1/memory_stores/:memory_store_id',
    { schema: { operationId: 'retrieveMemoryStore', params: StorePath, response: { 200: MemoryStoreSchema } } },
    async (req) => toStore(await storeFor(db, req.workspaceId, req.params.memory_store_id)),
  );

  app.post(
    '/v1/memory_stores/:memory_store_id',
    {
      schema: {
        operationId: 'updateMemoryStore',
        params: StorePath,
        body: z.strictObject({
          name: NameSchema.nullish(),
          description: DescriptionSchema.nullish(),
          metadata: MetadataPatchSchema.nullish(),
        }),
        response: { 200: MemoryStoreSchema },
      },
    },
    async (req) => {
      const current = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      const archived = () => badRequest(`memory store ${current.id} is archived and cannot be changed`);
      if (current.archived_at) throw archived();
      const updated = await updateMemoryStore(db, current.id, {
        name: req.body.name ?? current.name,
        description: req.body.description ?? current.description,
        metadata: applyMetadataPatch(current.metadata, req.body.metadata),
      });
      if (!updated) throw archived();
      return toStore(await storeFor(db, req.workspaceId, current.id));
    },
  );

  app.get(
    '/v1/memory_stores',
    {
      schema: {
        operationId: 'listMemoryStores',
        querystring: ListQuerySchema,
        response: { 200: pageSchema(MemoryStoreSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const filters = filterDigest({
        include_archived: q.include_archived ?? false,
        gte: q['created_at[gte]'],
        lte: q['created_at[lte]'],
      });
      const rows = await listMemoryStores(db, req.workspaceId, {
        before: cursorPos(q.page, filters) ?? null,
        includeArchived: q.include_archived ?? false,
        createdGte: q['created_at[gte]'],
        createdLte: q['created_at[lte]'],
        limit: q.limit + 1,
      });
      return toPage(rows, q.limit, toStore, filters);
    },
  );

  app.post(
    '/v1/memory_stores/:memory_store_id/archive',
    { schema: { operationId: 'archiveMemoryStore', params: StorePath, response: { 200: MemoryStoreSchema } } },
    async (req) => {
      const current = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      if (!current.archived_at)
        await db.transaction(async (tx) => {
          await archiveMemoryStore(tx, current.id);
          await recordWebhookEvent(tx, {
            workspaceId: req.workspaceId,
            type: 'memory_store.archived',
            data: { id: current.id },
          });
        });
      return toStore(await storeFor(db, req.workspaceId, current.id));
    },
  );

  app.delete(
    '/v1/memory_stores/:memory_store_id',
    {
      schema: {
        operationId: 'deleteMemoryStore',
        params: StorePath,
        response: { 200: z.object({ id: z.string(), type: z.literal('memory_store_deleted') }) },
      },
    },
    async (req) => {
      const current = await storeFor(db, req.workspaceId, req.params.memory_store_id);
      await deleteMemoryStore(db, blobs, current.id, (tx) =>
        recordWebhookEvent(tx, {
          workspaceId: req.workspaceId,
          type: 'memory_store.deleted',
          data: { id: current.id },
        }),
      );
      return { id: current.id, type: 'memory_store_deleted' as const };
    },
  );

  memoryRoutes(app, deps);
  memoryVersionRoutes(app, deps);
}
