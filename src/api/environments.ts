// /v1/environments: `cloud` environments map onto the sandbox recipe on our hands hosts: `unrestricted` networking is
// the recipe's bridge network (recorded as a loosening when a sandbox starts); `limited` with no allowed hosts is no
// network at all. What the platform cannot honour yet (allowed hosts, package managers, packages) is a 400.
// `self_hosted` environments run the toolset on the operator's machines, through the work queue under
// /v1/environments/{id}/work (environment-work.ts). An environment keeps its type for life.
import { z } from 'zod';
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
} from './shared-fields';
import type { ApiApp, ApiDeps } from './route-context';
import { ApiError, badRequest, conflict } from './api-error';
import type { Queryable } from '../storage/db';
import {
  archiveEnvironment,
  deleteEnvironment,
  environmentInUse,
  findEnvironment,
  insertEnvironment,
  listEnvironments,
  updateEnvironment,
  type EnvironmentRow,
} from '../storage/repos/environments-repo';
import { stopLiveEnvironmentWork } from '../storage/repos/work-repo';
import { recordWebhookEvent } from '../webhooks/webhook-events';

const PACKAGE_MANAGERS = ['apt', 'cargo', 'gem', 'go', 'npm', 'pip'] as const;

const NetworkingParamsSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('unrestricted') }),
  z.strictObject({
    type: z.literal('limited'),
    allowed_hosts: z.array(z.string().max(253)).max(256).nullish(),
    allow_mcp_servers: z.boolean().nullish(),
    allow_package_managers: z.boolean().nullish(),
  }),
]);
const PackageListSchema = z.array(z.string().max(256)).max(256).nullish();
const PackagesParamsSchema = z.strictObject({
  type: z.literal('packages').optional(),
  apt: PackageListSchema,
  cargo: PackageListSchema,
  gem: PackageListSchema,
  go: PackageListSchema,
  npm: PackageListSchema,
  pip: PackageListSchema,
});

const ConfigParamsSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('cloud'),
    networking: NetworkingParamsSchema.nullish(),
    packages: PackagesParamsSchema.nullish(),
  }),
  z.strictObject({ type: z.literal('self_hosted') }),
]);

const LimitedNetworkSchema = z.object({
  type: z.literal('limited'),
  allowed_hosts: z.array(z.string()),
  allow_mcp_servers: z.boolean(),
  allow_package_managers: z.boolean(),
});
const CloudConfigSchema = z.object({
  type: z.literal('cloud'),
  networking: z.union([z.object({ type: z.literal('unrestricted') }), LimitedNetworkSchema]),
  packages: z.object({
    type: z.literal('packages'),
    apt: z.array(z.string()),
    cargo: z.array(z.string()),
    gem: z.array(z.string()),
    go: z.array(z.string()),
    npm: z.array(z.string()),
    pip: z.array(z.string()),
  }),
});
type CloudConfig = z.infer<typeof CloudConfigSchema>;
const SelfHostedConfigSchema = z.object({ type: z.literal('self_hosted') });
export type EnvironmentConfig = CloudConfig | z.infer<typeof SelfHostedConfigSchema>;

export const EnvironmentSchema = z
  .object({
    id: z.string(),
    type: z.literal('environment'),
    name: z.string(),
    description: z.string().nullable(),
    config: z.discriminatedUnion('type', [CloudConfigSchema, SelfHostedConfigSchema]),
    metadata: z.record(z.string(), z.string()),
    scope: z.literal('organization'),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'Environment' });
export type ApiEnvironment = z.infer<typeof EnvironmentSchema>;

const NO_NETWORK: CloudConfig['networking'] = {
  type: 'limited',
  allowed_hosts: [],
  allow_mcp_servers: false,
  allow_package_managers: false,
};
const NO_PACKAGES: CloudConfig['packages'] = {
  type: 'packages',
  apt: [],
  cargo: [],
  gem: [],
  go: [],
  npm: [],
  pip: [],
};
const DEFAULT_CONFIG: CloudConfig = { type: 'cloud', networking: NO_NETWORK, packages: NO_PACKAGES };

/** The resolved config for `params` on top of `current` (omitted fields keep their values), or a 400 saying what is not supported. */
function resolveConfig(
  params: z.infer<typeof ConfigParamsSchema> | null | undefined,
  current: EnvironmentConfig = DEFAULT_CONFIG,
): EnvironmentConfig {
  if (params === null || params === undefined) return current;
  if (params.type !== current.type)
    throw badRequest(`config.type cannot change from ${current.type} to ${params.type}`, 'invalid_config_type_change');
  if (params.type === 'self_hosted' || current.type === 'self_hosted') return { type: 'self_hosted' };
  let networking = current.networking;
  if (params.networking) {
    const n = params.networking;
    if (n.type === 'unrestricted') networking = n;
    else {
      if ((n.allowed_hosts ?? []).length > 0)
        throw badRequest(
          'config.networking.allowed_hosts is not supported yet: sandboxes have no egress allowlist; use limited with no allowed_hosts (no network) or unrestricted',
        );
      if (n.allow_package_managers)
        throw badRequest(
          'config.networking.allow_package_managers is not supported yet: sandboxes have no egress allowlist',
        );
      // MCP servers are reached by the tools workers, never from the sandbox, so this flag changes nothing there.
      networking = {
        type: 'limited',
        allowed_hosts: [],
        allow_mcp_servers: n.allow_mcp_servers ?? false,
        allow_package_managers: false,
      };
    }
  }
  if (params.packages) {
    const listed = PACKAGE_MANAGERS.filter((m) => (params.packages?.[m] ?? []).length > 0);
    if (listed.length > 0)
      throw badRequest(
        `config.packages.${listed[0]} is not supported yet: packages need an image build on the hands host; use an image that has them`,
      );
  }
  return { type: 'cloud', networking, packages: NO_PACKAGES };
}

/** The sandbox recipe's network for an environment's config; a self-hosted environment has no sandbox of ours. */
export function recipeNetwork(config: EnvironmentConfig): 'none' | 'bridge' {
  return config.type === 'cloud' && config.networking.type === 'unrestricted' ? 'bridge' : 'none';
}

function toEnvironment(r: EnvironmentRow<EnvironmentConfig>): ApiEnvironment {
  return {
    id: r.id,
    type: 'environment',
    name: r.name,
    description: r.description,
    config: r.config,
    metadata: r.metadata,
    scope: 'organization',
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    archived_at: isoOrNull(r.archived_at),
  };
}

export async function getEnvironment(db: Queryable, workspaceId: string, id: string): Promise<ApiEnvironment> {
  const row = await findEnvironment<EnvironmentConfig>(db, workspaceId, id);
  if (!row)
    throw new ApiError(404, 'not_found_error', `environment ${id} not found`, { errorCode: 'environment_not_found' });
  return toEnvironment(row);
}

const isUniqueViolation = (e: unknown) => (e as { code?: string })?.code === '23505';
const duplicateName = (name: string) => conflict(`an environment named ${name} already exists in this workspace`);

const ScopeSchema = z
  .enum(['organization', 'account'])
  .nullish()
  .refine((v) => v !== 'account', 'scope account is not supported; use organization');
const EnvPathSchema = z.object({ environment_id: IdSchema });

export function environmentRoutes(app: ApiApp, { db }: ApiDeps): void {
  app.post(
    '/v1/environments',
    {
      schema: {
        operationId: 'createEnvironment',
        body: z.strictObject({
          name: z.string().min(1, 'name must not be empty').max(256),
          config: ConfigParamsSchema.nullish(),
          description: z.string().max(2048).nullish(),
          metadata: MetadataSchema.optional(),
          scope: ScopeSchema,
        }),
        response: { 200: EnvironmentSchema },
      },
    },
    async (req) => {
      const p = req.body;
      const config = p.config?.type === 'self_hosted' ? { type: 'self_hosted' as const } : resolveConfig(p.config);
      const id = newId('env');
      const now = new Date();
      try {
        await db.transaction(async (tx) => {
          await insertEnvironment(
            tx,
            req.workspaceId,
            id,
            { name: p.name, description: p.description ?? null, config, metadata: p.metadata ?? {} },
            now,
          );
          await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'environment.created', data: { id } });
        });
      } catch (e) {
        if (isUniqueViolation(e)) throw duplicateName(p.name);
        throw e;
      }
      return getEnvironment(db, req.workspaceId, id);
    },
  );

  app.get(
    '/v1/environments/:environment_id',
    { schema: { operationId: 'retrieveEnvironment', params: EnvPathSchema, response: { 200: EnvironmentSchema } } },
    async (req) => getEnvironment(db, req.workspaceId, req.params.environment_id),
  );

  app.post(
    '/v1/environments/:environment_id',
    {
      schema: {
        operationId: 'updateEnvironment',
        params: EnvPathSchema,
        body: z.strictObject({
          name: z.string().min(1, 'name must not be empty').max(256).nullish(),
          config: ConfigParamsSchema.nullish(),
          description: z.string().max(2048).nullish(),
          metadata: MetadataPatchSchema.nullish(),
          scope: ScopeSchema,
        }),
        response: { 200: EnvironmentSchema },
      },
    },
    async (req) => {
      const p = req.body;
      const id = req.params.environment_id;
      const current = await getEnvironment(db, req.workspaceId, id);
      if (current.archived_at)
        throw badRequest(`environment ${id} is archived and cannot be changed`, 'environment_archived');
      const name = p.name ?? current.name;
      try {
        const fields = {
          name,
          description: p.description === undefined ? current.description : p.description,
          config: resolveConfig(p.config, current.config),
          metadata: applyMetadataPatch(current.metadata, p.metadata, true),
        };
        await db.transaction(async (tx) => {
          await updateEnvironment(tx, req.workspaceId, id, fields);
          await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'environment.updated', data: { id } });
        });
      } catch (e) {
        if (isUniqueViolation(e)) throw duplicateName(name);
        throw e;
      }
      return getEnvironment(db, req.workspaceId, id);
    },
  );

  app.get(
    '/v1/environments',
    {
      schema: {
        operationId: 'listEnvironments',
        querystring: ArchivableQuerySchema,
        response: { 200: pageSchema(EnvironmentSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const filters = filterDigest({ include_archived: q.include_archived ?? false });
      const rows = await listEnvironments<EnvironmentConfig>(
        db,
        req.workspaceId,
        cursorPos(q.page, filters) ?? null,
        q.include_archived ?? false,
        q.limit + 1,
      );
      return toPage(rows, q.limit, toEnvironment, filters);
    },
  );

  app.post(
    '/v1/environments/:environment_id/archive',
    { schema: { operationId: 'archiveEnvironment', params: EnvPathSchema, response: { 200: EnvironmentSchema } } },
    async (req) => {
      const id = req.params.environment_id;
      const current = await getEnvironment(db, req.workspaceId, id);
      if (!current.archived_at)
        await db.transaction(async (tx) => {
          await archiveEnvironment(tx, req.workspaceId, id);
          await recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'environment.archived', data: { id } });
        });
      // Its workers are told to stop: live items go to stopping (stopped when never acked).
      await stopLiveEnvironmentWork(db, id);
      return getEnvironment(db, req.workspaceId, id);
    },
  );

  app.delete(
    '/v1/environments/:environment_id',
    {
      schema: {
        operationId: 'deleteEnvironment',
        params: EnvPathSchema,
        response: { 200: z.object({ id: z.string(), type: z.literal('environment_deleted') }) },
      },
    },
    async (req) => {
      const id = req.params.environment_id;
      await getEnvironment(db, req.workspaceId, id);
      if (await environmentInUse(db, id)) {
        throw conflict(`environment ${id} is used by sessions; archive it instead`);
      }
      await deleteEnvironment(db, req.workspaceId, id, (tx) =>
        recordWebhookEvent(tx, { workspaceId: req.workspaceId, type: 'environment.deleted', data: { id } }),
      );
      return { id, type: 'environment_deleted' as const };
    },
  );
}
