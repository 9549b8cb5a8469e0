// /v1/vaults: named sets of credentials (./vault-credentials.ts) that a session may use.
import { z } from 'zod';
import type { Queryable } from '../../storage/db';
import {
  archiveVault,
  deleteVault,
  findVault,
  insertVault,
  listVaults,
  updateVault,
  type VaultRow,
} from '../../storage/repos/vaults-repo';
import {
  IdSchema,
  MetadataPatchSchema,
  MetadataSchema,
  ArchivableQuerySchema,
  applyMetadataPatch,
  cursorPos,
  filterDigest,
  iso,
  isoOrNull,
  newId,
  pageSchema,
  toPage,
} from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { badRequest, notFound } from '../api-error';
import { recordWebhookEvent } from '../../webhooks/webhook-events';

export const VaultSchema = z
  .object({
    id: z.string(),
    type: z.literal('vault'),
    display_name: z.string(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'Vault' });
type ApiVault = z.infer<typeof VaultSchema>;

const DisplayNameSchema = z
  .string()
  .min(1, 'display_name must not be empty')
  .max(255, 'display_name is at most 255 characters');

const toVault = (r: VaultRow): ApiVault => ({
  id: r.id,
  type: 'vault',
  display_name: r.display_name,
  metadata: r.metadata,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  archived_at: isoOrNull(r.archived_at),
});

export async function getVault(db: Queryable, workspaceId: string, id: string): Promise<ApiVault> {
  const row = await findVault(db, workspaceId, id);
  if (!row) throw notFound('vault', id);
  return toVault(row);
}

export const VaultPath = z.object({ vault_id: IdSchema });

export function vaultRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db } = deps;
  app.post(
    '/v1/vaults',
    {
      schema: {
        operationId: 'createVault',
        body: z.strictObject({ display_name: DisplayNameSchema, metadata: MetadataSchema.optional() }),
        response: { 200: VaultSchema },
      },
    },
    async (req) => {
      const id = newId('vlt');
      await db.transaction(async (tx) => {
        await insertVault(tx, req.workspaceId, id, req.body.display_name, req.body.metadata ?? {});
        await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'vault.created', data: { id } });
      });
      return getVault(db, req.workspaceId, id);
    },
  );

  app.get(
    '/v1/vaults/:vault_id',
    { schema: { operationId: 'retrieveVault', params: VaultPath, response: { 200: VaultSchema } } },
    async (req) => getVault(db, req.workspaceId, req.params.vault_id),
  );

  app.post(
    '/v1/vaults/:vault_id',
    {
      schema: {
        operationId: 'updateVault',
        params: VaultPath,
        body: z.strictObject({ display_name: DisplayNameSchema.nullish(), metadata: MetadataPatchSchema.nullish() }),
        response: { 200: VaultSchema },
      },
    },
    async (req) => {
      const current = await getVault(db, req.workspaceId, req.params.vault_id);
      if (current.archived_at) throw badRequest(`vault ${current.id} is archived and cannot be changed`);
      await updateVault(
        db,
        current.id,
        req.body.display_name ?? current.display_name,
        applyMetadataPatch(current.metadata, req.body.metadata),
      );
      return getVault(db, req.workspaceId, current.id);
    },
  );

  app.get(
    '/v1/vaults',
    {
      schema: {
        operationId: 'listVaults',
        querystring: ArchivableQuerySchema,
        response: { 200: pageSchema(VaultSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const filters = filterDigest({ include_archived: q.include_archived ?? false });
      const rows = await listVaults(
        db,
        req.workspaceId,
        cursorPos(q.page, filters) ?? null,
        q.include_archived ?? false,
        q.limit + 1,
      );
      return toPage(rows, q.limit, toVault, filters);
    },
  );

  app.post(
    '/v1/vaults/:vault_id/archive',
    { schema: { operationId: 'archiveVault', params: VaultPath, response: { 200: VaultSchema } } },
    async (req) => {
      const current = await getVault(db, req.workspaceId, req.params.vault_id);
      if (!current.archived_at)
        await archiveVault(db, current.id, (tx) =>
          recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'vault.archived', data: { id: current.id } }),
        );
      return getVault(db, req.workspaceId, current.id);
    },
  );

  app.delete(
    '/v1/vaults/:vault_id',
    {
      schema: {
        operationId: 'deleteVault',
        params: VaultPath,
        response: { 200: z.object({ id: z.string(), type: z.literal('vault_deleted') }) },
      },
    },
    async (req) => {
      const current = await getVault(db, req.workspaceId, req.params.vault_id);
      await deleteVault(db, current.id, (tx) =>
        recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'vault.deleted', data: { id: current.id } }),
      );
      return { id: current.id, type: 'vault_deleted' as const };
    },
  );
}
