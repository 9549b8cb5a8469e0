// /v1/environments: containers of type `cloud`, which map onto the sandbox recipe. `unrestricted` networking is the
// recipe's bridge network (recorded as a loosening when a sandbox starts); `limited` with no allowed hosts is no
// network at all. What the platform cannot honour yet (allowed hosts, package managers, packages, self-hosted) is a 400.
import { z } from 'zod';
import { IdSchema, MetadataPatchSchema, MetadataSchema, ArchivableQuerySchema, applyMetadataPatch, cursorPos, filterDigest, iso, isoOrNull, newId, pageSchema, toPage } from './shared-fields';
import type { ApiApp, ApiDeps } from './route-context';
import { ApiError, badRequest, conflict } from './api-error';
import type { Queryable } from '../storage/db';

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
  z.strictObject({ type: z.literal('cloud'), networking: NetworkingParamsSchema.nullish(), packages: PackagesParamsSchema.nullish() }),
  z.strictObject({ type: z.literal('self_hosted') }),
]);

const LimitedNetworkSchema = z.object({ type: z.literal('limited'), allowed_hosts: z.array(z.string()), allow_mcp_servers: z.boolean(), allow_package_managers: z.boolean() });
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

export const EnvironmentSchema = z
  .object({
    id: z.string(),
    type: z.literal('environment'),
    name: z.string(),
    description: z.string().nullable(),
    config: CloudConfigSchema,
    metadata: z.record(z.string(), z.string()),
    scope: z.literal('organization'),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'Environment' });
export type ApiEnvironment = z.infer<typeof EnvironmentSchema>;

const NO_NETWORK: CloudConfig['networking'] = { type: 'limited', allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false };
const NO_PACKAGES: CloudConfig['packages'] = { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
const DEFAULT_CONFIG: CloudConfig = { type: 'cloud', networking: NO_NETWORK, packages: NO_PACKAGES };

/** The resolved config for `params` on top of `current` (omitted fields keep their values), or a 400 saying what is not supported. */
function resolveConfig(params: z.infer<typeof ConfigParamsSchema> | null | undefined, current: CloudConfig = DEFAULT_CONFIG): CloudConfig {
  if (params === null || params === undefined) return current;
  if (params.type === 'self_hosted') throw badRequest('config.type: self_hosted environments are not supported yet; use cloud');
  let networking = current.networking;
  if (params.networking) {
    const n = params.networking;
    if (n.type === 'unrestricted') networking = n;
    else {
      if ((n.allowed_hosts ?? []).length > 0) throw badRequest('config.networking.allowed_hosts is not supported yet: sandboxes have no egress allowlist; use limited with no allowed_hosts (no network) or unrestricted');
      if (n.allow_package_managers) throw badRequest('config.networking.allow_package_managers is not supported yet: sandboxes have no egress allowlist');
      // MCP servers are reached by the tools workers, never from the sandbox, so this flag changes nothing there.
      networking = { type: 'limited', allowed_hosts: [], allow_mcp_servers: n.allow_mcp_servers ?? false, allow_package_managers: false };
    }
  }
  if (params.packages) {
    const listed = PACKAGE_MANAGERS.filter((m) => (params.packages?.[m] ?? []).length > 0);
    if (listed.length > 0) throw badRequest(`config.packages.${listed[0]} is not supported yet: packages need an image build on the hands host; use an image that has them`);
  }
  return { type: 'cloud', networking, packages: NO_PACKAGES };
}

/** The sandbox recipe's network for an environment's config. */
export function recipeNetwork(config: CloudConfig): 'none' | 'bridge' {
  return config.networking.type === 'unrestricted' ? 'bridge' : 'none';
}

interface EnvRow {
  id: string;
  pos: number;
  name: string;
  description: string | null;
  config: CloudConfig;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

function toEnvironment(r: EnvRow): ApiEnvironment {
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

const COLUMNS = 'id, pos, name, description, config, metadata, created_at, updated_at, archived_at';

export async function getEnvironment(db: Queryable, workspaceId: string, id: string): Promise<ApiEnvironment> {
  const [row] = await db.query<EnvRow>(`select ${COLUMNS} from environments where id = $1 and workspace_id = $2`, [id, workspaceId]);
  if (!row) throw new ApiError(404, 'not_found_error', `environment ${id} not found`, { errorCode: 'environment_not_found' });
  return toEnvironment(row);
}

const isUniqueViolation = (e: unknown) => (e as { code?: string })?.code === '23505';
const duplicateName = (name: string) => conflict(`an environment named ${name} already exists in this workspace`);

const ScopeSchema = z.enum(['organization', 'account']).nullish().refine((v) => v !== 'account', 'scope account is not supported; use organization');
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
      const config = resolveConfig(p.config);
      const id = newId('env');
      const now = new Date();
      try {
        await db.query('insert into environments (id, workspace_id, name, description, config, metadata, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $7)', [
          id,
          req.workspaceId,
          p.name,
          p.description ?? null,
          config,
          p.metadata ?? {},
          now,
        ]);
      } catch (e) {
        if (isUniqueViolation(e)) throw duplicateName(p.name);
        throw e;
      }
      return getEnvironment(db, req.workspaceId, id);
    },
  );

  app.get('/v1/environments/:environment_id', { schema: { operationId: 'retrieveEnvironment', params: EnvPathSchema, response: { 200: EnvironmentSchema } } }, async (req) =>
    getEnvironment(db, req.workspaceId, req.params.environment_id),
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
      if (current.archived_at) throw badRequest(`environment ${id} is archived and cannot be changed`, 'environment_archived');
      if (p.config?.type === 'self_hosted') throw badRequest('config.type cannot change from cloud to self_hosted', 'invalid_config_type_change');
      const name = p.name ?? current.name;
      try {
        await db.query('update environments set name = $3, description = $4, config = $5, metadata = $6, updated_at = now() where id = $1 and workspace_id = $2', [
          id,
          req.workspaceId,
          name,
          p.description === undefined ? current.description : p.description,
          resolveConfig(p.config, current.config),
          applyMetadataPatch(current.metadata, p.metadata, true),
        ]);
      } catch (e) {
        if (isUniqueViolation(e)) throw duplicateName(name);
        throw e;
      }
      return getEnvironment(db, req.workspaceId, id);
    },
  );

  app.get('/v1/environments', { schema: { operationId: 'listEnvironments', querystring: ArchivableQuerySchema, response: { 200: pageSchema(EnvironmentSchema) } } }, async (req) => {
    const q = req.query;
    const filters = filterDigest({ include_archived: q.include_archived ?? false });
    const rows = await db.query<EnvRow>(
      `select ${COLUMNS} from environments where workspace_id = $1 and ($2::int is null or pos < $2) and ($3::boolean or archived_at is null) order by pos desc limit $4`,
      [req.workspaceId, cursorPos(q.page, filters) ?? null, q.include_archived ?? false, q.limit + 1],
    );
    return toPage(rows, q.limit, toEnvironment, filters);
  });

  app.post('/v1/environments/:environment_id/archive', { schema: { operationId: 'archiveEnvironment', params: EnvPathSchema, response: { 200: EnvironmentSchema } } }, async (req) => {
    const id = req.params.environment_id;
    await getEnvironment(db, req.workspaceId, id);
    await db.query('update environments set archived_at = now(), updated_at = now() where id = $1 and workspace_id = $2 and archived_at is null', [id, req.workspaceId]);
    return getEnvironment(db, req.workspaceId, id);
  });

  app.delete(
    '/v1/environments/:environment_id',
    { schema: { operationId: 'deleteEnvironment', params: EnvPathSchema, response: { 200: z.object({ id: z.string(), type: z.literal('environment_deleted') }) } } },
    async (req) => {
      const id = req.params.environment_id;
      await getEnvironment(db, req.workspaceId, id);
      if ((await db.query('select 1 from sessions where environment_id = $1 and deleted_at is null limit 1', [id])).length > 0) {
        throw conflict(`environment ${id} is used by sessions; archive it instead`);
      }
      await db.transaction(async (tx) => {
        // A deleted session keeps its row (and so its reference) until it is purged; it no longer needs the environment.
        await tx.query('update sessions set environment_id = null where environment_id = $1 and deleted_at is not null', [id]);
        await tx.query('delete from environments where id = $1 and workspace_id = $2', [id, req.workspaceId]);
      });
      return { id, type: 'environment_deleted' as const };
    },
  );
}
