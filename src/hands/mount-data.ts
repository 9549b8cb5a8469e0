// What the hands host reads and writes for a session's mounts: the mounts themselves (session_mounts), file
// contents, memories and skill files in, session outputs and changed memories out. The hands side sees only this
// interface; `sessionMountsFromDb` answers the mount rows from the API's database, and the stores' parts come from
// the files, memory and skills repositories.
import type { Queryable } from '../storage/db';
import { listMounts, mountGeneration } from '../storage/repos/session-mounts-repo';

export type SessionMount =
  | { kind: 'file'; resourceId: string; fileId: string; mountPath: string }
  | {
      kind: 'memory_store';
      resourceId: string;
      storeId: string;
      /** /mnt/memory/<slug> */
      mountPath: string;
      access: 'read_write' | 'read_only';
    }
  | {
      kind: 'skill';
      skillId: string;
      version: string;
      /** /mnt/skills/<directory> */
      mountPath: string;
    };

export interface SessionMounts {
  workspaceId: string;
  generation: number;
  mounts: SessionMount[];
}

export type MemoryWrite =
  | { ok: true; sha256: string }
  | { ok: false; reason: 'precondition'; currentSha256: string | null }
  | { ok: false; reason: 'invalid'; message: string };

export interface MountData {
  /** The session's mounts (its session_mounts rows), or undefined when the session has none or is not an API session. */
  mounts(sessionId: string): Promise<SessionMounts | undefined>;
  /** Cheap: the session's mount generation only, checked before every execute. */
  generation(sessionId: string): Promise<number | undefined>;
  fileContent(workspaceId: string, fileId: string): Promise<Buffer>;
  memories(storeId: string): Promise<Array<{ path: string /* '/notes/a.md' */; content: Buffer; sha256: string }>>;
  writeMemory(w: {
    workspaceId: string;
    storeId: string;
    sessionId: string;
    path: string;
    content: string;
    /** null: the memory must not exist yet. */
    expectedSha256: string | null;
  }): Promise<MemoryWrite>;
  deleteMemory(d: {
    workspaceId: string;
    storeId: string;
    sessionId: string;
    path: string;
    expectedSha256: string;
  }): Promise<MemoryWrite>;
  skillFiles(
    workspaceId: string,
    skillId: string,
    version: string,
  ): Promise<Array<{ path: string; content: Buffer; executable: boolean }>>;
  saveOutput(o: {
    workspaceId: string;
    sessionId: string;
    relativePath: string;
    content: Buffer;
  }): Promise<{ fileId: string }>;
}

/** The part of MountData that session_mounts answers alone. */
export type SessionMountRows = Pick<MountData, 'mounts' | 'generation'>;

/** `mounts` and `generation` from the API's database (`db` is asked on each use: the dev stack opens it late). */
export function sessionMountsFromDb(db: () => Queryable | undefined): SessionMountRows {
  // Before the API's database opens (the dev stack opens it after its workers) no API session exists yet.
  return {
    async generation(sessionId) {
      const q = db();
      return q ? mountGeneration(q, sessionId) : undefined;
    },
    async mounts(sessionId) {
      const q = db();
      if (!q) return undefined;
      const generation = await mountGeneration(q, sessionId);
      if (generation === undefined) return undefined;
      const rows = await listMounts(q, sessionId);
      if (rows.length === 0) return { workspaceId: '', generation, mounts: [] };
      const mounts = rows.map((r): SessionMount => {
        if (r.kind === 'file') return { kind: 'file', resourceId: r.id, fileId: r.ref_id, mountPath: r.mount_path };
        if (r.kind === 'memory_store')
          return {
            kind: 'memory_store',
            resourceId: r.id,
            storeId: r.ref_id,
            mountPath: r.mount_path,
            access: r.access,
          };
        return { kind: 'skill', skillId: r.ref_id, version: r.version ?? 'latest', mountPath: r.mount_path };
      });
      return { workspaceId: rows[0].workspace_id, generation, mounts };
    },
  };
}

/** A part of MountData this host cannot serve: a session that needs it fails with this message. */
function unserved(what: string): () => Promise<never> {
  return () => Promise.reject(new Error(`this hands host cannot read ${what} yet`));
}

/**
 * The MountData of a hands host that holds the API's database: session_mounts answers the mounts; files, memories
 * and skills come from their own repositories (files-repo.ts, memory-repo.ts, skills-repo.ts).
 */
export function createMountData(db: () => Queryable | undefined): MountData {
  return {
    ...sessionMountsFromDb(db),
    fileContent: unserved('files'),
    memories: unserved('memory stores'),
    writeMemory: unserved('memory stores'),
    deleteMemory: unserved('memory stores'),
    skillFiles: unserved('skills'),
    saveOutput: unserved('session outputs'),
  };
}
