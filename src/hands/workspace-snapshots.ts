// Workspace snapshots (docs/design/workspace-snapshots.md): after a tool call that changed a sandbox's workspace,
// the hands host captures it to the API's database, which every host shares: files cut into content-addressed chunks
// (SHA-256 of the plain bytes, per workspace, so an unchanged file costs nothing twice), each sealed by the payload
// codec, and a sealed manifest of paths, modes and chunk hashes per snapshot. A provision whose workspace volume is
// new (another host, or the sandbox was reaped) restores the sandbox's latest snapshot before any call runs. What
// this host last captured of each sandbox is kept in memory and in a file per sandbox, so a restarted worker reads
// only what changed since.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { DataConverter } from '@temporalio/common';
import type { Db } from '../storage/db';
import { CHUNK_BYTES } from '../storage/blobs';
import { decodeValue, encodeValue } from '../storage/payload-seal';
import {
  adoptSnapshot,
  dropUnreferencedChunks,
  insertChunk,
  insertSnapshot,
  latestSnapshot,
  lockWorkspaceSnapshots,
  nextSnapshotSeq,
  presentChunks,
  pruneSnapshots,
  readChunks,
  snapshotAt,
  snapshotWorkspaceOf,
  workspaceSnapshotBytes,
} from '../storage/repos/workspace-snapshots-repo';
import type { SandboxProvider, TreeEntry } from '../sandbox/provider';
import { SANDBOX_UID } from '../sandbox/mount-tree';
import { PlatformError } from '../session/platform-error';

export interface SnapshotLimits {
  /** The most a sandbox's workspace may hold (the sum of its files' sizes) to be captured. */
  maxBytes: number;
  /** Snapshots kept per sandbox (the newest); older ones are deleted with the chunks only they used. */
  retain: number;
  /** The most the chunks of one workspace's snapshots may take, over all its sessions. */
  workspaceMaxBytes: number;
}

/** A workspace the limits refuse to capture; the message names the limit and what is over it. */
export class SnapshotRefusedError extends PlatformError {}

/** The snapshot a fork's workspace is to start from no longer exists; the message names it and why it may be gone. */
export class SnapshotGoneError extends PlatformError {}

/** A snapshot of another session's sandbox of the same name: where a fork's first workspace comes from. */
export interface SnapshotSource {
  sessionId: string;
  snapshotSeq: number;
}

const FileSchema = z.object({
  /** Path relative to the workdir. */
  p: z.string(),
  /** Permission bits. */
  m: z.number(),
  /** Size in bytes. */
  s: z.number(),
  /** Chunk hashes, in order; a link has none and its target in `t`. */
  h: z.array(z.string()),
  t: z.string().optional(),
});
type ManifestFile = z.infer<typeof FileSchema>;
const ManifestSchema = z.object({ v: z.literal(1), files: z.array(FileSchema) });

const StateSchema = z.object({
  sessionId: z.string(),
  name: z.string(),
  workdir: z.string(),
  /** The seq of the snapshot the workspace was last in step with; 0: none yet. */
  seq: z.number(),
  /** The files as last captured or restored, with the mtime the last scan saw ('' when not scanned yet). */
  files: z.record(z.string(), FileSchema.extend({ mtime: z.string() })),
  /** Entries a snapshot cannot hold that the model was already told of. */
  skippedSeen: z.array(z.string()).default([]),
});
type SnapshotState = z.infer<typeof StateSchema>;

export interface CaptureResult {
  /** A new snapshot was written. */
  snapshot?: { seq: number; files: number; sizeBytes: number; chunkCount: number; newChunks: number; newBytes: number };
  /** Entries a snapshot cannot hold (sockets, devices, fifos), newly seen: said to the model once. */
  skipped: string[];
}

export interface RestoreResult {
  /** The session's own snapshot restored (for a fork's first: its copy of the source's). */
  seq: number;
  createdAt: string;
  files: number;
  sizeBytes: number;
  /** Set for a fork's first restore: the source's snapshot the session's restored one is a copy of. */
  from?: SnapshotSource;
}

export interface WorkspaceSnapshots {
  /** Records which session's sandbox `sandboxId` is and its workdir (at provision). */
  track(sandboxId: string, sessionId: string, name: string, workdir: string): void;
  /** Whether this host knows the sandbox (tracked here, or by a worker before a restart). */
  tracked(sandboxId: string): boolean;
  /** Captures the workspace when it changed since the last snapshot; SnapshotRefusedError when over a limit. */
  capture(sandboxId: string): Promise<CaptureResult>;
  /**
   * Writes the latest snapshot of (session, name) into a sandbox with a new workspace; undefined when there is none.
   * With `from` (a fork), a session that has no snapshot of that sandbox yet first takes that snapshot of the
   * source's as its own (no content is copied); SnapshotGoneError when it no longer exists.
   */
  restore(sandboxId: string, from?: SnapshotSource): Promise<RestoreResult | undefined>;
  /** The seq of the snapshot the workspace was last in step with (0: none), undefined for a sandbox not tracked. */
  latest(sandboxId: string): number | undefined;
  forget(sandboxId: string): void;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The chunks of `content`: CHUNK_BYTES each, the last one shorter. */
function chunksOf(content: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < content.length; i += CHUNK_BYTES) out.push(content.subarray(i, i + CHUNK_BYTES));
  return out;
}

/** What a refused capture leaves for a restore. */
const lastOne = (s: { seq: number }) =>
  s.seq > 0
    ? `The last snapshot (seq ${s.seq}) stays the one a restore uses.`
    : 'No snapshot of this workspace exists yet.';

const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;

/** How long ago `iso` was, for the model: "42 s", "3 min", "2 h", "5 d". */
export function ageOf(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function createWorkspaceSnapshots(opts: {
  provider: SandboxProvider;
  db: () => Db | undefined;
  dataConverter?: DataConverter;
  limits: SnapshotLimits;
  /** Where each sandbox's state is kept; absent: memory only. */
  stateDir?: string;
}): WorkspaceSnapshots {
  const { provider, limits } = opts;
  const dc = opts.dataConverter ?? {};
  const states = new Map<string, SnapshotState>();
  /** One capture or restore per sandbox at a time. */
  const running = new Map<string, Promise<unknown>>();
  const fileOf = (sandboxId: string) =>
    opts.stateDir ? path.join(opts.stateDir, `${sandboxId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`) : undefined;

  const database = (): Db => {
    const d = opts.db();
    if (!d) throw new Error("this hands host has no connection to the API's database");
    return d;
  };

  const load = (sandboxId: string): SnapshotState | undefined => {
    let s = states.get(sandboxId);
    const file = fileOf(sandboxId);
    if (!s && file) {
      try {
        const parsed = StateSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
        if (parsed.success) states.set(sandboxId, (s = parsed.data));
      } catch {
        // not known here
      }
    }
    return s;
  };

  const save = (sandboxId: string, s: SnapshotState): void => {
    states.set(sandboxId, s);
    const file = fileOf(sandboxId);
    if (!file) return;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(s));
    fs.renameSync(tmp, file);
  };

  const serial = <T>(sandboxId: string, fn: () => Promise<T>): Promise<T> => {
    const before = running.get(sandboxId) ?? Promise.resolve();
    const next = before.catch(() => undefined).then(fn);
    running.set(sandboxId, next);
    void next
      .catch(() => undefined)
      .finally(() => {
        if (running.get(sandboxId) === next) running.delete(sandboxId);
      });
    return next;
  };

  /** Seals and stores the chunks of `content` the workspace lacks; returns its hashes and what was new. */
  const storeContent = async (
    workspaceId: string,
    content: Buffer,
    fresh: Map<string, number>,
  ): Promise<{ hashes: string[] }> => {
    const db = database();
    const parts = chunksOf(content);
    const hashes = parts.map(sha256);
    const present = await presentChunks(db, workspaceId, hashes);
    for (let i = 0; i < parts.length; i++) {
      const hash = hashes[i];
      if (present.has(hash) || fresh.has(hash)) continue;
      const sealed = await encodeValue(dc, new Uint8Array(parts[i]));
      await insertChunk(db, { workspaceId, hash, sizeBytes: parts[i].length, sealed });
      fresh.set(hash, parts[i].length);
    }
    return { hashes };
  };

  const captureNow = async (sandboxId: string): Promise<CaptureResult> => {
    const state = load(sandboxId);
    if (!state) return { skipped: [] };
    const db = database();
    const workspaceId = await snapshotWorkspaceOf(db, state.sessionId);
    /** Chunks this capture stored: hash -> bytes. */
    const fresh = new Map<string, number>();
    try {
      return await captureInto(state, sandboxId, workspaceId, fresh);
    } catch (err) {
      // A capture that is refused or fails leaves none of the chunks it stored that no snapshot uses.
      if (fresh.size > 0)
        await db
          .transaction(async (tx) => {
            await lockWorkspaceSnapshots(tx, workspaceId);
            await dropUnreferencedChunks(tx, workspaceId, [...fresh.keys()]);
          })
          .catch(() => undefined);
      throw err;
    }
  };

  const captureInto = async (
    state: SnapshotState,
    sandboxId: string,
    workspaceId: string,
    fresh: Map<string, number>,
  ): Promise<CaptureResult> => {
    const db = database();
    const root = state.workdir.replace(/\/+$/, '');
    const rel = (abs: string) => abs.slice(root.length + 1);
    const known: Record<string, { size: number; mtime: string }> = {};
    for (const [p, f] of Object.entries(state.files))
      if (f.mtime) known[`${root}/${p}`] = { size: f.s, mtime: f.mtime };
    const files: SnapshotState['files'] = {};
    const refused: string[] = [];
    const skipped: string[] = [];
    let total = 0;
    // Each scan reads at most SCAN_READ_BYTES; what it defers is read by the next, with what was read now known.
    for (let pass = 0; ; pass++) {
      const scan = await provider.scanFiles(sandboxId, [root], known);
      let deferred = 0;
      total = 0;
      skipped.length = 0;
      for (const o of scan.other) {
        if (o.path === root) continue;
        if (o.kind === 'link' && o.target !== undefined) {
          const p = rel(o.path);
          files[p] = { p, m: 0o777, s: 0, h: [], t: o.target, mtime: '' };
        } else if (o.kind === 'unreadable directory') refused.push(`${rel(o.path)}: unreadable directory`);
        else skipped.push(`${rel(o.path)} (${o.kind})`);
      }
      for (const f of scan.files) {
        const p = rel(f.path);
        total += f.size;
        if (f.error) {
          refused.push(`${p}: ${f.error}`);
          continue;
        }
        if (f.deferred) {
          deferred++;
          continue;
        }
        const mode = f.mode ?? 0o644;
        if (f.content) {
          if (total > limits.maxBytes) continue; // refused below, before anything more is stored
          const before = state.files[p];
          const hash = chunksOf(f.content).map(sha256);
          const same = before && before.s === f.content.length && before.h.join() === hash.join();
          const { hashes } = same ? { hashes: before.h } : await storeContent(workspaceId, f.content, fresh);
          files[p] = { p, m: mode, s: f.content.length, h: hashes, mtime: f.mtime };
          known[f.path] = { size: f.size, mtime: f.mtime };
        } else {
          const before = state.files[p] ?? files[p];
          if (!before) throw new Error(`the scan listed ${p} as unchanged, but it was never read`);
          files[p] = { ...before, m: mode, mtime: f.mtime };
        }
      }
      if (refused.length > 0)
        throw new SnapshotRefusedError(
          `workspace snapshot refused: ${refused.slice(0, 5).join('; ')}${refused.length > 5 ? ` (and ${refused.length - 5} more)` : ''}. ${lastOne(state)}`,
        );
      if (total > limits.maxBytes)
        throw new SnapshotRefusedError(
          `workspace snapshot refused: the workspace ${state.workdir} holds ${mib(total)}, over SNAPSHOT_MAX_BYTES (${mib(limits.maxBytes)}); nothing was truncated. ${lastOne(state)} Remove files to be captured again.`,
        );
      if (deferred === 0) break;
      if (pass > 1000) throw new Error('the workspace scan made no progress');
    }
    const skippedNew = skipped.filter((s) => !state.skippedSeen.includes(s));
    const paths = Object.keys(files).sort();
    // A workspace never captured is compared with an empty one: an empty workspace needs no snapshot.
    const changed =
      paths.length !== Object.keys(state.files).length ||
      paths.some((p) => {
        const a = files[p];
        const b = state.files[p];
        return !b || a.m !== b.m || a.s !== b.s || a.t !== b.t || a.h.join() !== b.h.join();
      });
    if (!changed) {
      save(sandboxId, { ...state, files, skippedSeen: skipped });
      return { skipped: skippedNew };
    }
    const manifestFiles: ManifestFile[] = paths.map((p) => {
      const { mtime: _mtime, ...f } = files[p];
      return f;
    });
    const manifest = await encodeValue(dc, { v: 1, files: manifestFiles });
    const hashes = manifestFiles.flatMap((f) => f.h);
    const newBytes = [...fresh.values()].reduce((a, b) => a + b, 0);
    const seq = await db.transaction(async (tx) => {
      await lockWorkspaceSnapshots(tx, workspaceId);
      // A chunk found present before the lock may have been deleted since by another session's pruning.
      const have = await presentChunks(tx, workspaceId, [...new Set(hashes)]);
      const missing = [...new Set(hashes)].filter((h) => !have.has(h));
      if (missing.length > 0) throw new ChunksGoneError(`${missing.length} chunks were deleted while captured`);
      const stored = await workspaceSnapshotBytes(tx, workspaceId);
      if (stored > limits.workspaceMaxBytes)
        throw new SnapshotRefusedError(
          `workspace snapshot refused: this workspace's snapshots take ${mib(stored)}, over SNAPSHOT_WORKSPACE_MAX_BYTES (${mib(limits.workspaceMaxBytes)}). ${lastOne(state)}`,
        );
      const n = await nextSnapshotSeq(tx, state.sessionId, state.name);
      await insertSnapshot(tx, {
        id: `wsnap_${randomUUID().replace(/-/g, '')}`,
        workspace_id: workspaceId,
        session_id: state.sessionId,
        sandbox_name: state.name,
        seq: n,
        files: manifestFiles.length,
        size_bytes: total,
        chunk_count: hashes.length,
        new_chunks: fresh.size,
        new_bytes: newBytes,
        manifest,
        hashes,
      });
      await pruneSnapshots(tx, workspaceId, state.sessionId, state.name, limits.retain);
      return n;
    });
    save(sandboxId, { ...state, seq, files, skippedSeen: skipped });
    return {
      snapshot: {
        seq,
        files: manifestFiles.length,
        sizeBytes: total,
        chunkCount: hashes.length,
        newChunks: fresh.size,
        newBytes,
      },
      skipped: skippedNew,
    };
  };

  /** Makes the source's snapshot the session's first of the sandbox, unless the session has one already. */
  const adopt = async (state: SnapshotState, from: SnapshotSource): Promise<void> => {
    const db = database();
    const named = `snapshot ${from.snapshotSeq} of sandbox ${state.name} of session ${from.sessionId}`;
    const source = await snapshotAt(db, from.sessionId, state.name, from.snapshotSeq);
    if (!source)
      throw new SnapshotGoneError(
        `the fork's workspace cannot be restored: ${named} no longer exists (older snapshots are deleted past SNAPSHOT_RETAIN, and a deleted session's with it). Fork again at a later event, or without --sandboxes`,
      );
    return db.transaction(async (tx) => {
      await lockWorkspaceSnapshots(tx, source.workspace_id);
      if (await latestSnapshot(tx, state.sessionId, state.name)) return;
      // Pruned or deleted between the look and the lock.
      if (!(await snapshotAt(tx, from.sessionId, state.name, from.snapshotSeq)))
        throw new SnapshotGoneError(`the fork's workspace cannot be restored: ${named} was deleted just now`);
      await adoptSnapshot(tx, source.id, {
        id: `wsnap_${randomUUID().replace(/-/g, '')}`,
        sessionId: state.sessionId,
        sandboxName: state.name,
        seq: await nextSnapshotSeq(tx, state.sessionId, state.name),
      });
    });
  };

  const restoreNow = async (sandboxId: string, from?: SnapshotSource): Promise<RestoreResult | undefined> => {
    const state = load(sandboxId);
    if (!state) return undefined;
    const db = database();
    let snap = await latestSnapshot(db, state.sessionId, state.name);
    if (!snap && from) {
      await adopt(state, from);
      snap = await latestSnapshot(db, state.sessionId, state.name);
    }
    if (!snap) return undefined;
    const parsed = ManifestSchema.safeParse(await decodeValue(dc, snap.manifest));
    if (!parsed.success) throw new Error(`snapshot ${snap.seq} has a manifest this host cannot read`);
    const root = state.workdir.replace(/\/+$/, '');
    // The recipe's workspace gives way to the snapshot's, which was made from it.
    const cleared = await provider.execute(sandboxId, {
      key: `snapshot-restore-${snap.id}-${Date.now()}`,
      script: 'cd -- "$MA_ROOT" && find . -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +',
      env: { MA_ROOT: root },
      timeoutSeconds: 300,
      maxOutputBytes: 4096,
    });
    if (cleared.exitCode !== 0) throw new Error(`cannot clear ${root} for the restore: ${cleared.output.trim()}`);
    const dirs = new Set<string>();
    let batch: TreeEntry[] = [];
    let batchBytes = 0;
    const flush = async () => {
      await provider.putTree(sandboxId, root, batch);
      batch = [];
      batchBytes = 0;
    };
    const files: SnapshotState['files'] = {};
    // Chunks are read ahead in groups (up to 64 chunks, 64 MiB): one query each rather than one per chunk.
    let sealedChunks = new Map<string, Buffer>();
    const manifest = parsed.data.files;
    let readUpTo = 0;
    const readAhead = async (start: number) => {
      const want = new Set<string>();
      let bytes = 0;
      let i = start;
      for (; i < manifest.length; i++) {
        const f = manifest[i];
        if (f.t !== undefined) continue;
        if (want.size > 0 && (want.size + f.h.length > 64 || bytes + f.s > 64 * 1024 * 1024)) break;
        for (const h of f.h) want.add(h);
        bytes += f.s;
      }
      sealedChunks = await readChunks(db, snap.workspace_id, [...want]);
      readUpTo = i;
    };
    for (const [index, f] of manifest.entries()) {
      if (index >= readUpTo) await readAhead(index);
      const parts = f.p.split('/');
      for (let i = 1; i < parts.length; i++) {
        const d = parts.slice(0, i).join('/');
        if (!dirs.has(d)) {
          dirs.add(d);
          batch.push({ type: 'dir', path: d, uid: SANDBOX_UID, mode: 0o755 });
        }
      }
      if (f.t !== undefined) {
        batch.push({ type: 'link', path: f.p, uid: SANDBOX_UID, mode: 0o777, target: f.t });
      } else {
        const pieces: Buffer[] = [];
        for (const h of f.h) {
          const sealed = sealedChunks.get(h);
          if (!sealed) throw new Error(`snapshot ${snap.seq} lost a chunk of ${f.p}`);
          const plain = await decodeValue(dc, sealed);
          if (!(plain instanceof Uint8Array)) throw new Error(`a chunk of ${f.p} did not decode to bytes`);
          const piece = Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength);
          if (sha256(piece) !== h) throw new Error(`a chunk of ${f.p} does not match its hash`);
          pieces.push(piece);
        }
        const content = Buffer.concat(pieces);
        if (content.length !== f.s) throw new Error(`${f.p} did not restore whole`);
        batch.push({ type: 'file', path: f.p, uid: SANDBOX_UID, mode: f.m, content });
        batchBytes += content.length;
      }
      files[f.p] = { ...f, mtime: '' };
      if (batchBytes >= 64 * 1024 * 1024) await flush();
    }
    if (batch.length > 0) await flush();
    save(sandboxId, { ...state, seq: snap.seq, files, skippedSeen: [] });
    return {
      seq: snap.seq,
      createdAt: snap.created_at,
      files: snap.files,
      sizeBytes: snap.size_bytes,
      // Until a provision of a fork's sandbox succeeds, its only snapshot is the copy of the source's (taken by
      // this attempt or by one that failed after taking it).
      ...(from ? { from } : {}),
    };
  };

  return {
    track(sandboxId, sessionId, name, workdir) {
      const s = load(sandboxId);
      if (s && s.sessionId === sessionId && s.name === name && s.workdir === workdir) return;
      save(sandboxId, { sessionId, name, workdir, seq: 0, files: {}, skippedSeen: [] });
    },
    tracked: (sandboxId) => load(sandboxId) !== undefined,
    capture: (sandboxId) =>
      serial(sandboxId, async () => {
        try {
          return await captureNow(sandboxId);
        } catch (err) {
          // Another session's pruning deleted a chunk between the look and the lock: once more reads it again.
          if (!(err instanceof ChunksGoneError)) throw err;
          return captureNow(sandboxId);
        }
      }),
    restore: (sandboxId, from) => serial(sandboxId, () => restoreNow(sandboxId, from)),
    latest: (sandboxId) => load(sandboxId)?.seq,
    forget(sandboxId) {
      states.delete(sandboxId);
      const file = fileOf(sandboxId);
      if (file) fs.rmSync(file, { force: true });
    },
  };
}

class ChunksGoneError extends PlatformError {}
