// A session's resources: github_repository, cloned by the hands host into the sandbox's workspace, and file and
// memory_store, mounted into the sandbox (mounts.ts). A repository's token is sealed to the vault public key at
// create (the API can write it, never read it back) and the agent file names it only as `resource:<id>`, so it is in
// no history, event or sandbox; git_push and git_pull use it on the host.
import { z } from 'zod';
import type { SandboxRecipe } from '../../session/agent';
import { BRANCH_NAME_RE } from '../../tools/git';
import { repoTokenBinding } from '../../hands/repo-tokens';
import { sealSecret } from '../../vault/sealed';
import type { Queryable } from '../../storage/db';
import {
  findResource,
  insertResource,
  listResources,
  updateResourceToken,
  type ResourceRow,
} from '../../storage/repos/session-resources-repo';
import { IdSchema, PageQuerySchema, cursorPos, iso, newId } from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { badRequest, notFound } from '../api-error';
import { getEnvironment } from '../environments';
import { deleteMount, findMount, listMounts } from '../../storage/repos/session-mounts-repo';
import {
  FileParamsSchema,
  FileResourceSchema,
  MemoryStoreParamsSchema,
  MemoryStoreResourceSchema,
  insertMounts,
  planMounts,
  toMountResource,
  type MountResource,
} from './resource-mounts';
import { refuseAtTheDoor } from '../egress-door';

const WORKDIR = '/workspace';
const PATH_PART = /^[A-Za-z0-9._-]+$/;

const CheckoutSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('branch'),
    name: z.string().regex(BRANCH_NAME_RE, 'checkout.name must be a plain branch name'),
  }),
  z.strictObject({
    type: z.literal('commit'),
    sha: z.string().regex(/^[0-9a-f]{40}$/, 'checkout.sha is a full 40-character commit SHA'),
  }),
]);

const GitHubRepositoryParamsSchema = z.strictObject({
  type: z.literal('github_repository'),
  url: z
    .url({ protocol: /^https?$/, error: 'url must be an http(s) URL of a git repository' })
    .max(2000)
    .refine((u) => !/^[a-z]+:\/\/[^/]*@/i.test(u), 'url must not carry credentials; give authorization_token'),
  authorization_token: z.string().min(1).max(8192).optional(),
  checkout: CheckoutSchema.nullish(),
  mount_path: z.string().max(500).nullish(),
});

export const ResourceParamsSchema = z.discriminatedUnion('type', [
  GitHubRepositoryParamsSchema,
  FileParamsSchema,
  MemoryStoreParamsSchema,
]);
export type ResourceParams = z.infer<typeof ResourceParamsSchema>;

/** At most one repository: a session has one sandbox with one repo for now. */
export const ResourcesSchema = z
  .array(ResourceParamsSchema)
  .max(100, 'a session has at most 100 resources')
  .refine(
    (rs) => rs.filter((r) => r.type === 'github_repository').length <= 1,
    'a session mounts at most one repository for now',
  );

const RepositoryResourceSchema = z.object({
  id: z.string(),
  type: z.literal('github_repository'),
  url: z.string(),
  mount_path: z.string(),
  checkout: CheckoutSchema.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export const ResourceSchema = z
  .discriminatedUnion('type', [RepositoryResourceSchema, FileResourceSchema, MemoryStoreResourceSchema])
  .meta({ id: 'SessionResource' });
export type ApiResource = z.infer<typeof RepositoryResourceSchema> | MountResource;

/** Where in the workspace a repository goes, relative to it: `mount_path`, or /workspace/<repo-name>. */
function relativeMountPath(url: string, mountPath: string | null | undefined, i: number): string | undefined {
  if (mountPath === null || mountPath === undefined) {
    const name = (new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'repo')
      .replace(/\.git$/, '')
      .replace(/[^A-Za-z0-9._-]/g, '_');
    return name === '' || name === '.' || name === '..' ? 'repo' : name;
  }
  const normal = mountPath.replace(/\/+$/, '');
  if (normal === WORKDIR) return undefined;
  const rel = normal.startsWith(`${WORKDIR}/`) ? normal.slice(WORKDIR.length + 1) : undefined;
  const parts = rel?.split('/') ?? [];
  if (!rel || parts.some((p) => !PATH_PART.test(p) || p === '.' || p === '..')) {
    throw badRequest(
      `resources.${i}.mount_path: a repository mounts at ${WORKDIR} or a plain directory under it, such as ${WORKDIR}/app`,
    );
  }
  return rel;
}

/** A resource the session will be created with: its row-to-be and the repo of the sandbox recipe. */
export interface PlannedResource {
  id: string;
  params: Extract<ResourceParams, { type: 'github_repository' }>;
  mountPath: string;
  repo: NonNullable<SandboxRecipe['repo']>;
}

/**
 * The resources a session will be created with, or a 400 naming the first that cannot be: its URL is past the
 * egress gate (the hands host checks it again before git connects), and its repo is marked as a tenant's.
 */
export async function planResources(deps: ApiDeps, resources: readonly ResourceParams[]): Promise<PlannedResource[]> {
  const repos = resources.flatMap((params, i) => (params.type === 'github_repository' ? [{ params, i }] : []));
  const planned = repos.map(({ params, i }) => {
    const id = newId('sesrsc');
    const path = relativeMountPath(params.url, params.mount_path, i);
    const checkout = params.checkout ?? undefined;
    return {
      id,
      params,
      mountPath: path ? `${WORKDIR}/${path}` : WORKDIR,
      repo: {
        url: params.url,
        ...(checkout?.type === 'branch' ? { ref: checkout.name } : {}),
        ...(checkout?.type === 'commit' ? { commit: checkout.sha } : {}),
        ...(params.authorization_token ? { credential: `resource:${id}` } : {}),
        ...(path ? { path } : {}),
        tenant: true as const,
      },
    };
  });
  for (const [i, r] of planned.entries()) await refuseAtTheDoor(deps, `resources.${i}.url`, r.params.url);
  return planned;
}

/** Stores the planned resources of a new session, their tokens sealed; nothing here ever reads a token back. */
export async function insertResources(
  db: Queryable,
  deps: ApiDeps,
  sessionId: string,
  workspaceId: string,
  planned: readonly PlannedResource[],
): Promise<void> {
  for (const r of planned) {
    const token = r.params.authorization_token;
    const sealed = token ? await sealSecret(deps.vaultPublicKey, repoTokenBinding(r.id, sessionId), token) : null;
    await insertResource(db, {
      id: r.id,
      sessionId,
      workspaceId,
      url: r.params.url,
      mountPath: r.mountPath,
      checkout: r.params.checkout,
      sealedToken: sealed,
    });
  }
}

/** The file and memory_store resources of a new session, checked against the workspace's files and stores. */
/** A file resource on a self-hosted environment: its worker has no way to receive one. */
export const selfHostedFiles = (environmentId: string) =>
  badRequest(
    `resources: file resources cannot be mounted for a session of the self-hosted environment ${environmentId}: its worker downloads skills and memory stores only; fetch files from the worker with the Files API instead`,
  );

export function planResourceMounts(db: Queryable, workspaceId: string, resources: readonly ResourceParams[]) {
  return planMounts(
    db,
    workspaceId,
    resources.flatMap((p, i) => (p.type === 'github_repository' ? [] : [{ i, field: `resources.${i}`, p }])),
  );
}

type Checkout = z.infer<typeof CheckoutSchema>;

const toResource = (r: ResourceRow<Checkout>): ApiResource => ({
  id: r.id,
  type: 'github_repository',
  url: r.url,
  mount_path: r.mount_path,
  checkout: r.checkout ?? null,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

/** A session's resources: its repository, then its files and memory stores, oldest first. */
export async function resourcesOf(db: Queryable, sessionId: string): Promise<ApiResource[]> {
  const repos = (await listResources<Checkout>(db, sessionId)).map(toResource);
  const mounts = (await listMounts(db, sessionId)).flatMap((m) => toMountResource(m) ?? []);
  return [...repos, ...mounts];
}

const ResourcePath = z.object({ session_id: IdSchema, resource_id: IdSchema });

/**
 * `client.beta.sessions.resources`: list, retrieve, and update (token rotation: the hands host reads the token at
 * each clone, push and pull, so the next one uses the new token). `session` finds the caller's own session or 404s.
 */
export function resourceRoutes(
  app: ApiApp,
  deps: ApiDeps,
  session: (
    workspaceId: string,
    id: string,
  ) => Promise<{ id: string; archived_at: Date | null; environment_id: string }>,
): void {
  const { db } = deps;
  /** One resource of the caller's own session (looked up first, so another workspace's answers 404). */
  const one = async (
    sessionId: string,
    resourceId: string,
  ): Promise<{ repo: ResourceRow<Checkout> } | { mount: NonNullable<Awaited<ReturnType<typeof findMount>>> }> => {
    const repo = await findResource<Checkout>(db, sessionId, resourceId);
    if (repo) return { repo };
    const mount = await findMount(db, sessionId, resourceId);
    if (mount && mount.kind !== 'skill') return { mount };
    throw notFound('resource', resourceId);
  };
  const shown = (r: Awaited<ReturnType<typeof one>>): ApiResource =>
    'repo' in r ? toResource(r.repo) : toMountResource(r.mount)!;

  app.get(
    '/v1/sessions/:session_id/resources',
    {
      schema: {
        operationId: 'listSessionResources',
        params: z.object({ session_id: IdSchema }),
        querystring: PageQuerySchema,
        response: { 200: z.object({ data: z.array(ResourceSchema), next_page: z.string().nullable() }) },
      },
    },
    async (req) => {
      const s = await session(req.workspaceId, req.params.session_id);
      // A session holds at most one resource, so the first page holds them all and no cursor is ever returned.
      if (cursorPos(req.query.page) !== undefined) return { data: [], next_page: null };
      return { data: await resourcesOf(db, s.id), next_page: null };
    },
  );

  app.get(
    '/v1/sessions/:session_id/resources/:resource_id',
    { schema: { operationId: 'retrieveSessionResource', params: ResourcePath, response: { 200: ResourceSchema } } },
    async (req) => shown(await one((await session(req.workspaceId, req.params.session_id)).id, req.params.resource_id)),
  );

  app.post(
    '/v1/sessions/:session_id/resources/:resource_id',
    {
      schema: {
        operationId: 'updateSessionResource',
        params: ResourcePath,
        body: z.strictObject({ authorization_token: z.string().min(1).max(8192) }),
        response: { 200: ResourceSchema },
      },
    },
    async (req) => {
      const s = await session(req.workspaceId, req.params.session_id);
      if (s.archived_at) throw badRequest(`session ${s.id} is archived and read-only`);
      const found = await one(s.id, req.params.resource_id);
      if (!('repo' in found))
        throw badRequest(
          `resource ${req.params.resource_id} is a ${found.mount.kind}; only github_repository resources take an authorization_token`,
        );
      const row = found.repo;
      const sealed = await sealSecret(
        deps.vaultPublicKey,
        repoTokenBinding(row.id, s.id),
        req.body.authorization_token,
      );
      const updated = await updateResourceToken<Checkout>(db, row.id, sealed);
      return toResource(updated);
    },
  );

  app.post(
    '/v1/sessions/:session_id/resources',
    {
      schema: {
        operationId: 'addSessionResource',
        params: z.object({ session_id: IdSchema }),
        body: z.discriminatedUnion('type', [
          FileParamsSchema,
          z
            .looseObject({ type: z.enum(['github_repository', 'memory_store']) })
            .refine(() => false, 'resources.add takes file resources; give repositories and memory stores at create'),
        ]),
        response: { 200: FileResourceSchema },
      },
    },
    async (req) => {
      const s = await session(req.workspaceId, req.params.session_id);
      if (s.archived_at) throw badRequest(`session ${s.id} is archived and read-only`);
      if (req.body.type !== 'file') throw badRequest('resources.add takes file resources');
      const environment = await getEnvironment(db, req.workspaceId, s.environment_id);
      if (environment.config.type === 'self_hosted') throw selfHostedFiles(environment.id);
      const existing = (await listMounts(db, s.id)).map((m) => m.mount_path);
      const planned = await planMounts(db, req.workspaceId, [{ i: 0, field: 'body', p: req.body }], existing);
      const [row] = await db.transaction((tx) => insertMounts(tx, s.id, req.workspaceId, planned));
      return toMountResource(row) as z.infer<typeof FileResourceSchema>;
    },
  );

  const noRemove = 'a repository cannot be removed from a session yet';
  app.delete(
    '/v1/sessions/:session_id/resources/:resource_id',
    {
      schema: {
        operationId: 'deleteSessionResource',
        params: ResourcePath,
        response: { 200: z.object({ id: z.string(), type: z.literal('session_resource_deleted') }) },
      },
    },
    async (req) => {
      const s = await session(req.workspaceId, req.params.session_id);
      const found = await one(s.id, req.params.resource_id);
      if ('repo' in found) throw badRequest(noRemove);
      if (s.archived_at) throw badRequest(`session ${s.id} is archived and read-only`);
      await db.transaction((tx) => deleteMount(tx, s.id, found.mount.id));
      return { id: req.params.resource_id, type: 'session_resource_deleted' as const };
    },
  );
}
