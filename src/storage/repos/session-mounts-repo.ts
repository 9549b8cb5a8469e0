// The session_mounts table: what a session mounts into its sandbox (files, memory stores, skills), and the
// session's mount generation, which every insert and delete bumps so the hands host notices a change before the
// next tool call. The lookups of the files and memory stores a mount names are here too, in one place.
import type { Queryable } from '../db';

export type MountKind = 'file' | 'memory_store' | 'skill';
export type MountAccess = 'read_write' | 'read_only';

export interface MountRow {
  id: string;
  session_id: string;
  workspace_id: string;
  kind: MountKind;
  /** The file, memory store or skill. */
  ref_id: string;
  /** A skill's version; null for the others. */
  version: string | null;
  mount_path: string;
  access: MountAccess;
  instructions: string | null;
  name: string | null;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}
const COLUMNS =
  'id, session_id, workspace_id, kind, ref_id, version, mount_path, access, instructions, name, description, created_at, updated_at';

export interface NewMount {
  id: string;
  sessionId: string;
  workspaceId: string;
  kind: MountKind;
  refId: string;
  version?: string;
  mountPath: string;
  access: MountAccess;
  instructions?: string | null;
  name?: string | null;
  description?: string | null;
}

async function bump(db: Queryable, sessionId: string): Promise<void> {
  await db.query(
    `insert into session_mount_generations (session_id, generation) values ($1, 1)
       on conflict (session_id) do update set generation = session_mount_generations.generation + 1`,
    [sessionId],
  );
}

/** Adds a mount to a session and bumps its generation. */
export async function insertMount(db: Queryable, m: NewMount): Promise<MountRow> {
  const [row] = await db.query<MountRow>(
    `insert into session_mounts (id, session_id, workspace_id, kind, ref_id, version, mount_path, access, instructions, name, description)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) returning ${COLUMNS}`,
    [
      m.id,
      m.sessionId,
      m.workspaceId,
      m.kind,
      m.refId,
      m.version ?? null,
      m.mountPath,
      m.access,
      m.instructions ?? null,
      m.name ?? null,
      m.description ?? null,
    ],
  );
  await bump(db, m.sessionId);
  return row;
}

/** Removes one mount of a session and bumps its generation; false when the session has no such mount. */
export async function deleteMount(db: Queryable, sessionId: string, id: string): Promise<boolean> {
  const gone = await db.query('delete from session_mounts where session_id = $1 and id = $2 returning id', [
    sessionId,
    id,
  ]);
  if (gone.length === 0) return false;
  await bump(db, sessionId);
  return true;
}

/** A session's mounts, oldest first. */
export async function listMounts(db: Queryable, sessionId: string): Promise<MountRow[]> {
  return db.query<MountRow>(`select ${COLUMNS} from session_mounts where session_id = $1 order by pos`, [sessionId]);
}

/** One mount of a session: by its id, or (a memory store's resource shows no id) by the memory store's id. */
export async function findMount(db: Queryable, sessionId: string, id: string): Promise<MountRow | undefined> {
  const [row] = await db.query<MountRow>(
    `select ${COLUMNS} from session_mounts where session_id = $1 and (id = $2 or (kind = 'memory_store' and ref_id = $2)) order by pos limit 1`,
    [sessionId, id],
  );
  return row;
}

/**
 * An API session's workspace and mount generation (0 before its first mount), or undefined when no live API session
 * has that id (a command-line session, or one deleted): every API session gets its outputs directory, mounts or not.
 */
export async function sessionMountHead(
  db: Queryable,
  sessionId: string,
): Promise<{ workspaceId: string; generation: number } | undefined> {
  const [row] = await db.query<{ workspace_id: string; generation: number | null }>(
    `select s.workspace_id, g.generation from sessions s
       left join session_mount_generations g on g.session_id = s.id
      where s.id = $1 and s.deleted_at is null`,
    [sessionId],
  );
  return row ? { workspaceId: row.workspace_id, generation: Number(row.generation ?? 0) } : undefined;
}

/** Removes every mount of a session and its generation (a session whose start failed, or one deleted for good). */
export async function deleteSessionMounts(db: Queryable, sessionId: string): Promise<void> {
  await db.query('delete from session_mounts where session_id = $1', [sessionId]);
  await db.query('delete from session_mount_generations where session_id = $1', [sessionId]);
}

/** The statements that clear a session's mount rows, for the session's delete (sessions-repo.ts). */
export const SESSION_MOUNT_ROWS: readonly string[] = [
  'delete from session_mounts where session_id = $1',
  'delete from session_mount_generations where session_id = $1',
];

// The Files API's and the memory stores' tables, as far as a mount needs them.

/** Whether the workspace has file `fileId`. */
export async function fileExists(db: Queryable, workspaceId: string, fileId: string): Promise<boolean> {
  const rows = await db.query('select 1 from files where id = $1 and workspace_id = $2', [fileId, workspaceId]);
  return rows.length > 0;
}

export interface StoreRef {
  id: string;
  name: string;
  description: string | null;
  archived_at: Date | null;
}

/** The workspace's memory store `storeId`, if it has one. */
export async function findStore(db: Queryable, workspaceId: string, storeId: string): Promise<StoreRef | undefined> {
  const [row] = await db.query<StoreRef>(
    'select id, name, description, archived_at from memory_stores where id = $1 and workspace_id = $2',
    [storeId, workspaceId],
  );
  return row;
}
