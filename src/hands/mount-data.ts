// What the hands host reads and writes for a session's mounts: the mounts themselves (session_mounts), file
// contents, memories and skill files in, session outputs and changed memories out. The hands side sees only this
// interface; `sessionMountsFromDb` answers the mount rows from the API's database, and the stores' parts come from
// the files, memory and skills repositories.
import type { DataConverter } from '@temporalio/common';
import type { Db, Queryable } from '../storage/db';
import { BlobStore } from '../storage/blobs';
import { findFile, isExpired, saveSessionOutput } from '../storage/repos/files-repo';
import { deleteMemoryAt, readStoreMemories, writeMemoryAt, type MemoryAtResult } from '../storage/repos/memory-repo';
import { resolveSkillVersion, skillVersionFiles } from '../storage/repos/skills-repo';
import { listMounts, sessionMountHead } from '../storage/repos/session-mounts-repo';

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
  /** The session's mounts (its session_mounts rows, none for a session without resources), or undefined when it is not a live API session. */
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

/** The part of MountData that the session's own rows answer alone. */
export type SessionMountRows = Pick<MountData, 'mounts' | 'generation'>;

/** `mounts` and `generation` from the API's database (`db` is asked on each use: the dev stack opens it late). */
export function sessionMountsFromDb(db: () => Queryable | undefined): SessionMountRows {
  // Before the API's database opens (the dev stack opens it after its workers) no API session exists yet.
  return {
    async generation(sessionId) {
      const q = db();
      return q ? (await sessionMountHead(q, sessionId))?.generation : undefined;
    },
    async mounts(sessionId) {
      const q = db();
      if (!q) return undefined;
      const head = await sessionMountHead(q, sessionId);
      if (!head) return undefined;
      const rows = await listMounts(q, sessionId);
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
      return { workspaceId: head.workspaceId, generation: head.generation, mounts };
    },
  };
}

/**
 * The hands host's MountData over the API's database: mount rows, file contents, memories and skill files read from
 * their repositories and the blob store (opened with the history's codec, as the API seals them), outputs saved as
 * files of the session and memory changes written as the session's, under the store's lock.
 */
export function createMountData(db: () => Db | undefined, dataConverter: DataConverter = {}): MountData {
  let opened: { db: Db; blobs: BlobStore } | undefined;
  const open = () => {
    const d = db();
    if (!d) throw new Error("this hands host has no connection to the API's database");
    if (opened?.db !== d) opened = { db: d, blobs: new BlobStore(d, dataConverter) };
    return opened;
  };
  const asWrite = (r: MemoryAtResult): MemoryWrite => (r.ok ? { ok: true, sha256: r.sha256 } : r);
  return {
    ...sessionMountsFromDb(db),
    async fileContent(workspaceId, fileId) {
      const { db: d, blobs } = open();
      const row = await findFile(d, workspaceId, fileId);
      if (!row) throw new Error(`file ${fileId} no longer exists`);
      if (isExpired(row) || !row.blob_id) throw new Error(`file ${fileId} has expired`);
      return blobs.get(row.blob_id);
    },
    async memories(storeId) {
      const { db: d, blobs } = open();
      return (await readStoreMemories(d, blobs, storeId)).map((m) => ({
        path: m.path,
        content: m.content,
        sha256: m.sha256,
      }));
    },
    async writeMemory(w) {
      const { db: d, blobs } = open();
      return asWrite(
        await writeMemoryAt(d, blobs, {
          workspaceId: w.workspaceId,
          storeId: w.storeId,
          path: w.path,
          content: w.content,
          expectedSha256: w.expectedSha256,
          actor: { type: 'session_actor', session_id: w.sessionId },
        }),
      );
    },
    async deleteMemory(del) {
      const { db: d, blobs } = open();
      return asWrite(
        await deleteMemoryAt(d, blobs, {
          workspaceId: del.workspaceId,
          storeId: del.storeId,
          path: del.path,
          expectedSha256: del.expectedSha256,
          actor: { type: 'session_actor', session_id: del.sessionId },
        }),
      );
    },
    async skillFiles(workspaceId, skillId, version) {
      const { db: d, blobs } = open();
      const v = await resolveSkillVersion(d, workspaceId, skillId, version);
      if (!v) throw new Error(`skill ${skillId} has no version ${version} any more`);
      return skillVersionFiles(d, blobs, v.skillId, v.version);
    },
    async saveOutput(o) {
      const { db: d, blobs } = open();
      return { fileId: (await saveSessionOutput(d, blobs, o)).id };
    },
  };
}
