// A session's mounts as the API sees them: `file` and `memory_store` resources (given at create, files also by
// resources.add) and the agent's custom skills, checked against the workspace's files and stores, placed at their
// mount paths and stored as session_mounts rows, which the hands host writes into the sandbox.
import { z } from 'zod';
import type { Queryable } from '../../storage/db';
import {
  fileExists,
  findStore,
  insertMount,
  type MountRow,
  type NewMount,
} from '../../storage/repos/session-mounts-repo';
import { IdSchema, iso, newId } from '../shared-fields';
import { badRequest, notFound } from '../api-error';
import type { PromptMounts } from './prompt-sections';

export const MAX_INSTRUCTIONS = 4096;

export const FileParamsSchema = z.strictObject({
  type: z.literal('file'),
  file_id: IdSchema,
  mount_path: z.string().max(500).nullish(),
});

export const MemoryStoreParamsSchema = z.strictObject({
  type: z.literal('memory_store'),
  memory_store_id: IdSchema,
  access: z.enum(['read_write', 'read_only'], { error: 'access must be read_write or read_only' }).nullish(),
  instructions: z.string().max(MAX_INSTRUCTIONS, `instructions are at most ${MAX_INSTRUCTIONS} characters`).nullish(),
});

export const FileResourceSchema = z.object({
  id: z.string(),
  type: z.literal('file'),
  file_id: z.string(),
  mount_path: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A memory store resource shows no id of its own: retrieve and delete take its memory_store_id. */
export const MemoryStoreResourceSchema = z.object({
  type: z.literal('memory_store'),
  memory_store_id: z.string(),
  access: z.enum(['read_write', 'read_only']),
  description: z.string(),
  instructions: z.string().nullable(),
  mount_path: z.string(),
  name: z.string(),
});

export type FileResource = z.infer<typeof FileResourceSchema>;
export type MountResource = FileResource | z.infer<typeof MemoryStoreResourceSchema>;

const PART = /^[A-Za-z0-9._-]+$/;
/** Where a session's own directories are: mounts of files go elsewhere. */
const RESERVED = ['/mnt/session/outputs', '/mnt/memory', '/mnt/skills'];

/** A file's mount path: absolute, normalized, under /mnt/ or /workspace/, outside the directories the platform fills. */
function fileMountPath(field: string, fileId: string, given: string | null | undefined): string {
  if (given === null || given === undefined) return `/mnt/session/uploads/${fileId}`;
  const parts = given.split('/').slice(1);
  const plain =
    given.startsWith('/') && parts.length >= 2 && parts.every((p) => PART.test(p) && p !== '.' && p !== '..');
  if (!plain || (parts[0] !== 'mnt' && parts[0] !== 'workspace'))
    throw badRequest(
      `${field}: a file mounts at an absolute, normalized path under /mnt/ or /workspace/ (such as /mnt/data/input.csv), of letters, digits, '.', '_' and '-'`,
    );
  for (const r of RESERVED)
    if (given === r || given.startsWith(`${r}/`))
      throw badRequest(`${field}: ${r} is the platform's own; mount the file elsewhere`);
  return given;
}

/** A store's directory name: its name in lowercase letters, digits and dashes. */
export function slugOf(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 64)
    .replace(/-$/, '');
  return slug || 'store';
}

/** A mount a new or existing session gets: its row-to-be, and what the prompt says of it. */
export type PlannedMount = Omit<NewMount, 'sessionId' | 'workspaceId'>;

type MountParams = z.infer<typeof FileParamsSchema> | z.infer<typeof MemoryStoreParamsSchema>;

/** Refuses a mount path that is another's, or inside another's, or holds another inside it. */
function checkOverlap(field: string, path: string, taken: readonly string[]): void {
  for (const t of taken)
    if (t === path || t.startsWith(`${path}/`) || path.startsWith(`${t}/`))
      throw badRequest(`${field}: ${path} overlaps ${t}, where the session already mounts something`);
}

/**
 * Plans `params` (with their indexes in the request, for messages) as mounts of a session that already has
 * `existing` mount paths: each file and store must be the workspace's, and a store gets /mnt/memory/<slug>.
 */
export async function planMounts(
  db: Queryable,
  workspaceId: string,
  params: readonly { i: number; field: string; p: MountParams }[],
  existing: readonly string[] = [],
): Promise<PlannedMount[]> {
  const taken = [...existing];
  const planned: PlannedMount[] = [];
  for (const { field, p } of params) {
    if (p.type === 'file') {
      const mountPath = fileMountPath(`${field}.mount_path`, p.file_id, p.mount_path);
      if (!(await fileExists(db, workspaceId, p.file_id))) throw notFound('file', p.file_id);
      checkOverlap(`${field}.mount_path`, mountPath, taken);
      taken.push(mountPath);
      planned.push({ id: newId('sesrsc'), kind: 'file', refId: p.file_id, mountPath, access: 'read_only' });
    } else {
      const store = await findStore(db, workspaceId, p.memory_store_id);
      if (!store) throw notFound('memory_store', p.memory_store_id);
      if (store.archived_at)
        throw badRequest(`${field}.memory_store_id: memory store ${store.id} is archived; sessions cannot mount it`);
      if (planned.some((m) => m.kind === 'memory_store' && m.refId === store.id))
        throw badRequest(`${field}.memory_store_id: memory store ${store.id} is given twice`);
      const base = `/mnt/memory/${slugOf(store.name)}`;
      let mountPath = base;
      for (let k = 2; taken.includes(mountPath); k++) mountPath = `${base}-${k}`;
      taken.push(mountPath);
      planned.push({
        id: newId('sesrsc'),
        kind: 'memory_store',
        refId: store.id,
        mountPath,
        access: p.access ?? 'read_write',
        instructions: p.instructions ?? null,
        name: store.name,
        description: store.description ?? '',
      });
    }
  }
  return planned;
}

/** An agent's custom skill, resolved to its version's name, description and directory. */
export interface AgentSkill {
  skillId: string;
  version: string;
  name: string;
  description: string;
  /** The skill's directory name: it mounts at /mnt/skills/<directory>. */
  directory: string;
}

/** The skills of a new session's agent, as mounts at /mnt/skills/<directory> (a repeated directory gets -2, -3...). */
export function planSkillMounts(skills: readonly AgentSkill[]): PlannedMount[] {
  const taken: string[] = [];
  return skills.map((s) => {
    const base = `/mnt/skills/${slugOf(s.directory)}`;
    let mountPath = base;
    for (let k = 2; taken.includes(mountPath); k++) mountPath = `${base}-${k}`;
    taken.push(mountPath);
    return {
      id: newId('sesrsc'),
      kind: 'skill',
      refId: s.skillId,
      version: s.version,
      mountPath,
      access: 'read_only',
      name: s.name,
      description: s.description,
    };
  });
}

export async function insertMounts(
  db: Queryable,
  sessionId: string,
  workspaceId: string,
  planned: readonly PlannedMount[],
): Promise<MountRow[]> {
  const rows: MountRow[] = [];
  for (const m of planned) rows.push(await insertMount(db, { ...m, sessionId, workspaceId }));
  return rows;
}

/** A mount row as the API shows it; skills are the agent's, not resources, and show none. */
export function toMountResource(r: MountRow): MountResource | undefined {
  if (r.kind === 'file')
    return {
      id: r.id,
      type: 'file',
      file_id: r.ref_id,
      mount_path: r.mount_path,
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    };
  if (r.kind === 'memory_store')
    return {
      type: 'memory_store',
      memory_store_id: r.ref_id,
      access: r.access,
      description: r.description ?? '',
      instructions: r.instructions,
      mount_path: r.mount_path,
      name: r.name ?? '',
    };
  return undefined;
}

/** What the system prompt says of planned mounts (prompt-sections.ts). */
export function promptMountsOf(planned: readonly PlannedMount[]): PromptMounts {
  return {
    stores: planned.flatMap((m) =>
      m.kind === 'memory_store'
        ? [{ mountPath: m.mountPath, access: m.access, instructions: m.instructions ?? null, name: m.name ?? '' }]
        : [],
    ),
    skills: planned.flatMap((m) =>
      m.kind === 'skill' ? [{ name: m.name ?? '', description: m.description ?? '', mountPath: m.mountPath }] : [],
    ),
  };
}
