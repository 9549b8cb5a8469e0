// /v1/skills: custom skills and their immutable versions, each made from an uploaded bundle (./bundle.ts) and
// downloadable as a zip. Uploads are multipart; the parser is registered in this plugin's own scope, so no other
// route's body parsing changes.
import { Readable } from 'node:stream';
import fastifyMultipart from '@fastify/multipart';
import { multipartError } from '../multipart';
import type { FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BlobStore } from '../../storage/blobs';
import type { Queryable } from '../../storage/db';
import {
  countSkillVersions,
  deleteSkill,
  deleteSkillVersion,
  findSkill,
  findSkillVersion,
  insertSkill,
  insertSkillVersion,
  listSkillVersions,
  listSkills,
  newestVersionId,
  touchSkill,
  type SkillFileInsert,
  type SkillRow,
  type SkillVersionRow,
} from '../../storage/repos/skills-repo';
import { badRequest, notFound } from '../api-error';
import type { ApiApp, ApiDeps } from '../route-context';
import { IdSchema, PageQuerySchema, cursorPos, filterDigest, iso, newId, pageSchema, toPage } from '../shared-fields';
import {
  MAX_UPLOAD_BYTES,
  SKILL_LIMITS,
  SkillBundleError,
  readBundle,
  zipBundle,
  type SkillBundle,
  type UploadPart,
} from './bundle';

export const SkillSchema = z
  .object({
    id: z.string(),
    type: z.literal('skill'),
    display_name: z.string(),
    latest_version_id: z.string(),
    source: z.object({ type: z.literal('custom') }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Skill' });
type ApiSkill = z.infer<typeof SkillSchema>;

export const SkillVersionSchema = z
  .object({
    id: z.string(),
    type: z.literal('skill_version'),
    skill_id: z.string(),
    name: z.string(),
    description: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'SkillVersion' });
type ApiSkillVersion = z.infer<typeof SkillVersionSchema>;

const toSkill = (r: SkillRow): ApiSkill => ({
  id: r.id,
  type: 'skill',
  display_name: r.display_name,
  latest_version_id: r.latest_version,
  source: { type: 'custom' },
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const toVersion = (r: SkillVersionRow): ApiSkillVersion => ({
  id: r.version,
  type: 'skill_version',
  skill_id: r.skill_id,
  name: r.name,
  description: r.description,
  created_at: iso(r.created_at),
});

async function skillOr404(q: Queryable, workspaceId: string, id: string, lock = false): Promise<SkillRow> {
  const row = await findSkill(q, workspaceId, id, lock);
  if (!row) throw notFound('skill', id);
  return row;
}

async function versionOr404(q: Queryable, workspaceId: string, skillId: string, version: string) {
  await skillOr404(q, workspaceId, skillId);
  const row = await findSkillVersion(q, workspaceId, skillId, version);
  if (!row) throw notFound(`skill ${skillId} version`, version);
  return row;
}

/** A new version id: epoch microseconds, and always past the skill's newest, so ids sort as versions were made. */
function nextVersionId(newest: string | undefined): string {
  const now = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000));
  const after = newest && /^\d+$/.test(newest) ? BigInt(newest) + 1n : 0n;
  return (now > after ? now : after).toString();
}

const DisplayNameSchema = z
  .string()
  .min(1, 'display_name must not be empty')
  .max(255, 'display_name is at most 255 characters')
  .refine((s) => !/[\r\n]/.test(s), 'display_name is a single line');

/** The parts of a multipart upload: its files, and `display_name` where the route takes it. */
async function readUpload(
  req: FastifyRequest,
  errors: ApiApp['multipartErrors'],
  takesDisplayName: boolean,
): Promise<{ parts: UploadPart[]; displayName?: string }> {
  if (!req.isMultipart()) throw badRequest('this endpoint takes multipart/form-data: the skill files as files[] parts');
  const parts: UploadPart[] = [];
  let displayName: string | undefined;
  let total = 0;
  try {
    for await (const part of req.parts()) {
      if (part.type === 'field') {
        if (part.fieldname !== 'display_name' || !takesDisplayName)
          throw badRequest(`${part.fieldname.slice(0, 64)} is not a field this endpoint takes`);
        if (part.valueTruncated) throw badRequest('display_name is at most 255 characters');
        const parsed = DisplayNameSchema.safeParse(part.value);
        if (!parsed.success) throw badRequest(parsed.error.issues[0].message);
        displayName = parsed.data;
        continue;
      }
      if (part.fieldname !== 'files[]' && part.fieldname !== 'files')
        throw badRequest(`${part.fieldname.slice(0, 64)} is not a field this endpoint takes; send files as files[]`);
      const content = await part.toBuffer();
      total += content.length;
      if (total > MAX_UPLOAD_BYTES) throw badRequest(`files: the upload is at most ${MAX_UPLOAD_BYTES} bytes`);
      parts.push({ filename: part.filename, content });
    }
  } catch (e) {
    if (e instanceof errors.RequestFileTooLargeError)
      throw badRequest(`files: the upload is at most ${MAX_UPLOAD_BYTES} bytes`);
    if (e instanceof errors.FilesLimitError || e instanceof errors.PartsLimitError)
      throw badRequest(`files: a skill holds at most ${SKILL_LIMITS.maxFiles} files`);
    if (e instanceof errors.FieldsLimitError) throw badRequest('too many fields: this endpoint takes display_name');
    // A missing boundary, a truncated body and the like: the parser's error as a 400.
    throw multipartError(e, { fileBytes: MAX_UPLOAD_BYTES, files: SKILL_LIMITS.maxFiles, fields: 2 });
  }
  return { parts, ...(displayName !== undefined ? { displayName } : {}) };
}

async function bundleOf(parts: UploadPart[]): Promise<SkillBundle> {
  try {
    return await readBundle(parts);
  } catch (e) {
    if (e instanceof SkillBundleError) throw badRequest(`files: ${e.message}`);
    throw e;
  }
}

/** Stores the bundle's files and its zip as blobs, and the version's rows, in `tx`. */
async function storeVersion(
  tx: Queryable,
  blobs: BlobStore,
  workspaceId: string,
  skillId: string,
  version: string,
  bundle: SkillBundle,
  at: Date,
): Promise<void> {
  const files: SkillFileInsert[] = [];
  for (const f of bundle.files) {
    const ref = await blobs.put(workspaceId, f.content, { q: tx });
    files.push({ path: f.path, blobId: ref.id, sizeBytes: ref.sizeBytes, executable: f.executable });
  }
  const zip = await blobs.put(workspaceId, zipBundle(bundle.name, bundle.files), { q: tx });
  await insertSkillVersion(tx, {
    skillId,
    version,
    name: bundle.name,
    description: bundle.description,
    bundleBlobId: zip.id,
    at,
    files,
  });
}

const SkillPath = z.object({ skill_id: IdSchema });
const VersionPath = z.object({ skill_id: IdSchema, version: IdSchema });
const SOURCES = ['custom', 'anthropic', 'anthropic_example', 'plugin'] as const;

export function skillRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db, blobs } = deps;
  void app.register(async (plain) => {
    await plain.register(fastifyMultipart, {
      // Paths in filenames are the skill's layout (my-skill/scripts/run.py); bundle.ts checks every one.
      preservePath: true,
      limits: {
        fileSize: MAX_UPLOAD_BYTES,
        files: SKILL_LIMITS.maxFiles,
        parts: SKILL_LIMITS.maxFiles + 4,
        fields: 2,
        fieldSize: 1024,
        fieldNameSize: 100,
      },
    });
    const scope = plain.withTypeProvider<ZodTypeProvider>() as unknown as ApiApp;

    scope.post(
      '/v1/skills',
      { schema: { operationId: 'createSkill', response: { 200: SkillSchema } } },
      async (req) => {
        const upload = await readUpload(req, scope.multipartErrors, true);
        const bundle = await bundleOf(upload.parts);
        const id = newId('skill');
        const at = new Date();
        await db.transaction(async (tx) => {
          await insertSkill(tx, {
            id,
            workspaceId: req.workspaceId,
            name: bundle.name,
            displayName: upload.displayName ?? bundle.name,
            at,
          });
          await storeVersion(tx, blobs, req.workspaceId, id, nextVersionId(undefined), bundle, at);
        });
        return toSkill(await skillOr404(db, req.workspaceId, id));
      },
    );

    scope.get(
      '/v1/skills/:skill_id',
      { schema: { operationId: 'retrieveSkill', params: SkillPath, response: { 200: SkillSchema } } },
      async (req) => toSkill(await skillOr404(db, req.workspaceId, req.params.skill_id)),
    );

    scope.get(
      '/v1/skills',
      {
        schema: {
          operationId: 'listSkills',
          querystring: PageQuerySchema.extend({
            source: z.enum(SOURCES, { error: `source must be one of ${SOURCES.join(', ')}` }).optional(),
          }),
          response: { 200: pageSchema(SkillSchema) },
        },
      },
      async (req) => {
        const q = req.query;
        const filters = filterDigest({ source: q.source });
        const before = cursorPos(q.page, filters) ?? null;
        // Every skill here is the workspace's own: no Anthropic, example or plugin skill exists on this platform.
        if (q.source !== undefined && q.source !== 'custom') return { data: [], next_page: null };
        const rows = await listSkills(db, req.workspaceId, before, q.limit + 1);
        return toPage(rows, q.limit, toSkill, filters);
      },
    );

    scope.delete(
      '/v1/skills/:skill_id',
      {
        schema: {
          operationId: 'deleteSkill',
          params: SkillPath,
          response: { 200: z.object({ id: z.string(), type: z.literal('skill_deleted') }) },
        },
      },
      async (req) => {
        const id = req.params.skill_id;
        await db.transaction(async (tx) => {
          await skillOr404(tx, req.workspaceId, id, true);
          await deleteSkill(tx, blobs, id);
        });
        return { id, type: 'skill_deleted' as const };
      },
    );

    scope.post(
      '/v1/skills/:skill_id/versions',
      { schema: { operationId: 'createSkillVersion', params: SkillPath, response: { 200: SkillVersionSchema } } },
      async (req) => {
        const skillId = req.params.skill_id;
        await skillOr404(db, req.workspaceId, skillId);
        const upload = await readUpload(req, scope.multipartErrors, false);
        const bundle = await bundleOf(upload.parts);
        const version = await db.transaction(async (tx) => {
          const skill = await skillOr404(tx, req.workspaceId, skillId, true);
          if (bundle.name !== skill.name)
            throw badRequest(
              `files: the upload's skill name ${bundle.name} must be the skill's name ${skill.name}, fixed by its first version`,
            );
          const id = nextVersionId(await newestVersionId(tx, skillId));
          const at = new Date();
          await storeVersion(tx, blobs, req.workspaceId, skillId, id, bundle, at);
          await touchSkill(tx, skillId, at);
          return id;
        });
        return toVersion((await findSkillVersion(db, req.workspaceId, skillId, version))!);
      },
    );

    scope.get(
      '/v1/skills/:skill_id/versions/:version',
      {
        schema: { operationId: 'retrieveSkillVersion', params: VersionPath, response: { 200: SkillVersionSchema } },
      },
      async (req) => toVersion(await versionOr404(db, req.workspaceId, req.params.skill_id, req.params.version)),
    );

    scope.get(
      '/v1/skills/:skill_id/versions',
      {
        schema: {
          operationId: 'listSkillVersions',
          params: SkillPath,
          querystring: PageQuerySchema,
          response: { 200: pageSchema(SkillVersionSchema) },
        },
      },
      async (req) => {
        const q = req.query;
        const skill = await skillOr404(db, req.workspaceId, req.params.skill_id);
        const rows = await listSkillVersions(db, skill.id, cursorPos(q.page) ?? null, q.limit + 1);
        return toPage(rows, q.limit, toVersion);
      },
    );

    scope.delete(
      '/v1/skills/:skill_id/versions/:version',
      {
        schema: {
          operationId: 'deleteSkillVersion',
          params: VersionPath,
          response: { 200: z.object({ id: z.string(), type: z.literal('skill_version_deleted') }) },
        },
      },
      async (req) => {
        const { skill_id: skillId } = req.params;
        const id = await db.transaction(async (tx) => {
          await skillOr404(tx, req.workspaceId, skillId, true);
          const v = await versionOr404(tx, req.workspaceId, skillId, req.params.version);
          if ((await countSkillVersions(tx, skillId)) <= 1)
            throw badRequest(
              `skill ${skillId} has no other version than ${v.version}, and a skill holds at least one: delete the skill instead`,
            );
          await deleteSkillVersion(tx, blobs, skillId, v.version);
          await touchSkill(tx, skillId, new Date());
          return v.version;
        });
        return { id, type: 'skill_version_deleted' as const };
      },
    );

    scope.get(
      '/v1/skills/:skill_id/versions/:version/content',
      { schema: { operationId: 'downloadSkillVersion', params: VersionPath } },
      async (req, reply) => {
        const v = await versionOr404(db, req.workspaceId, req.params.skill_id, req.params.version);
        const size = (await blobs.stat(v.bundle_blob_id))?.sizeBytes;
        reply.type('application/zip').header('content-disposition', `attachment; filename="${v.name}.zip"`);
        if (size !== undefined) reply.header('content-length', String(size));
        return reply.send(Readable.from(blobs.stream(v.bundle_blob_id)));
      },
    );
  });
}
