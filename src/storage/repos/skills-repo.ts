// The skills, skill_versions and skill_files tables. A version's files and its downloadable zip are blobs
// (src/storage/blobs.ts); deleting a version or a skill deletes them with it, in the caller's transaction.
import type { BlobStore } from '../blobs';
import type { Queryable } from '../db';

export interface SkillRow {
  id: string;
  pos: number;
  name: string;
  display_name: string;
  /** The version of highest `pos`: what `latest` resolves to. */
  latest_version: string;
  created_at: Date;
  updated_at: Date;
}

export interface SkillVersionRow {
  skill_id: string;
  version: string;
  pos: number;
  name: string;
  description: string;
  bundle_blob_id: string;
  created_at: Date;
}

export interface SkillFileInsert {
  path: string;
  blobId: string;
  sizeBytes: number;
  executable: boolean;
}

const LATEST = `(select v.version from skill_versions v where v.skill_id = s.id order by v.pos desc limit 1)`;
const SKILL_COLUMNS = `s.id, s.pos, s.name, s.display_name, ${LATEST} as latest_version, s.created_at, s.updated_at`;
const VERSION_COLUMNS = 'v.skill_id, v.version, v.pos, v.name, v.description, v.bundle_blob_id, v.created_at';

export async function findSkill(
  q: Queryable,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<SkillRow | undefined> {
  const [row] = await q.query<SkillRow>(
    `select ${SKILL_COLUMNS} from skills s where s.id = $1 and s.workspace_id = $2${lock ? ' for update' : ''}`,
    [id, workspaceId],
  );
  return row;
}

export async function insertSkill(
  q: Queryable,
  s: { id: string; workspaceId: string; name: string; displayName: string; at: Date },
): Promise<void> {
  await q.query(
    'insert into skills (id, workspace_id, name, display_name, created_at, updated_at) values ($1, $2, $3, $4, $5, $5)',
    [s.id, s.workspaceId, s.name, s.displayName, s.at],
  );
}

/** Marks the skill changed (a version was added or removed). */
export async function touchSkill(q: Queryable, id: string, at: Date): Promise<void> {
  await q.query('update skills set updated_at = $2 where id = $1', [id, at]);
}

/** The workspace's skills, newest first, before `pos` `before` (null: from the newest). */
export async function listSkills(
  q: Queryable,
  workspaceId: string,
  before: number | null,
  limit: number,
): Promise<SkillRow[]> {
  return q.query<SkillRow>(
    `select ${SKILL_COLUMNS} from skills s where s.workspace_id = $1 and ($2::int is null or s.pos < $2) order by s.pos desc limit $3`,
    [workspaceId, before, limit],
  );
}

/** The newest version id the skill has had, to keep new ids increasing; undefined for a skill with none. */
export async function newestVersionId(q: Queryable, skillId: string): Promise<string | undefined> {
  const [row] = await q.query<{ version: string }>(
    'select version from skill_versions where skill_id = $1 order by pos desc limit 1',
    [skillId],
  );
  return row?.version;
}

export async function insertSkillVersion(
  q: Queryable,
  v: {
    skillId: string;
    version: string;
    name: string;
    description: string;
    bundleBlobId: string;
    at: Date;
    files: SkillFileInsert[];
  },
): Promise<void> {
  await q.query(
    'insert into skill_versions (skill_id, version, name, description, bundle_blob_id, created_at) values ($1, $2, $3, $4, $5, $6)',
    [v.skillId, v.version, v.name, v.description, v.bundleBlobId, v.at],
  );
  for (const f of v.files)
    await q.query(
      'insert into skill_files (skill_id, version, path, blob_id, size_bytes, executable) values ($1, $2, $3, $4, $5, $6)',
      [v.skillId, v.version, f.path, f.blobId, f.sizeBytes, f.executable],
    );
}

/** One version of a skill of the workspace; `latest` is the newest. */
export async function findSkillVersion(
  q: Queryable,
  workspaceId: string,
  skillId: string,
  version: string,
): Promise<SkillVersionRow | undefined> {
  const [row] = await q.query<SkillVersionRow>(
    `select ${VERSION_COLUMNS} from skill_versions v join skills s on s.id = v.skill_id
     where v.skill_id = $1 and s.workspace_id = $2 and ($3 = 'latest' or v.version = $3)
     order by v.pos desc limit 1`,
    [skillId, workspaceId, version],
  );
  return row;
}

/** The skill's versions, newest first, before `pos` `before` (null: from the newest). */
export async function listSkillVersions(
  q: Queryable,
  skillId: string,
  before: number | null,
  limit: number,
): Promise<SkillVersionRow[]> {
  return q.query<SkillVersionRow>(
    `select ${VERSION_COLUMNS} from skill_versions v where v.skill_id = $1 and ($2::int is null or v.pos < $2) order by v.pos desc limit $3`,
    [skillId, before, limit],
  );
}

export async function countSkillVersions(q: Queryable, skillId: string): Promise<number> {
  const [row] = await q.query<{ n: number }>('select count(*)::int as n from skill_versions where skill_id = $1', [
    skillId,
  ]);
  return Number(row?.n ?? 0);
}

/** Deletes the version, its file rows, and every blob they name. */
export async function deleteSkillVersion(
  q: Queryable,
  blobs: BlobStore,
  skillId: string,
  version: string,
): Promise<void> {
  const files = await q.query<{ blob_id: string }>(
    'select blob_id from skill_files where skill_id = $1 and version = $2',
    [skillId, version],
  );
  const [v] = await q.query<{ bundle_blob_id: string }>(
    'select bundle_blob_id from skill_versions where skill_id = $1 and version = $2',
    [skillId, version],
  );
  await q.query('delete from skill_files where skill_id = $1 and version = $2', [skillId, version]);
  await q.query('delete from skill_versions where skill_id = $1 and version = $2', [skillId, version]);
  for (const f of files) await blobs.delete(f.blob_id, q);
  if (v) await blobs.delete(v.bundle_blob_id, q);
}

/** Deletes the skill with all its versions and their blobs. */
export async function deleteSkill(q: Queryable, blobs: BlobStore, skillId: string): Promise<void> {
  const versions = await q.query<{ version: string }>('select version from skill_versions where skill_id = $1', [
    skillId,
  ]);
  for (const v of versions) await deleteSkillVersion(q, blobs, skillId, v.version);
  await q.query('delete from skills where id = $1', [skillId]);
}

/**
 * The version `version` (an id, or `latest`) of a skill of the workspace, with what mounting it needs: its name,
 * which is also the directory it is mounted as (`/mnt/skills/<directory>/`), and its description. Undefined when the
 * skill or the version does not exist in the workspace.
 */
export async function resolveSkillVersion(
  q: Queryable,
  workspaceId: string,
  skillId: string,
  version: string,
): Promise<{ skillId: string; version: string; name: string; description: string; directory: string } | undefined> {
  const row = await findSkillVersion(q, workspaceId, skillId, version);
  if (!row) return undefined;
  return {
    skillId: row.skill_id,
    version: row.version,
    name: row.name,
    description: row.description,
    directory: row.name,
  };
}

/** The files of one version (an id, not `latest`), paths relative to the skill's directory, in path order. */
export async function skillVersionFiles(
  q: Queryable,
  blobs: BlobStore,
  skillId: string,
  version: string,
): Promise<Array<{ path: string; content: Buffer; executable: boolean }>> {
  const rows = await q.query<{ path: string; blob_id: string; executable: boolean }>(
    'select path, blob_id, executable from skill_files where skill_id = $1 and version = $2 order by path',
    [skillId, version],
  );
  const out: Array<{ path: string; content: Buffer; executable: boolean }> = [];
  for (const r of rows) out.push({ path: r.path, content: await blobs.get(r.blob_id, q), executable: r.executable });
  return out;
}
