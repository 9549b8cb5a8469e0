// A session's mounts on the hands host: written into a sandbox when it is provisioned, brought up to date when the
// session's mount generation moves, and collected after every tool call (new and changed outputs become files,
// changed memories new versions, written with the SHA-256 the sandbox last had as their precondition). What this
// host last wrote into each sandbox (generation, mounts, memory base) is kept in memory and in a file per sandbox,
// so a restarted worker carries on; a sandbox it knows nothing of has every mount written again.
import { createHash } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ApplicationFailure } from '@temporalio/common';
import { SandboxLostError, type SandboxProvider, type TreeEntry } from '../sandbox/provider';
import { Failure } from '../session/failure-types';
import type { ToolOutput } from './hands-contract';
import { SANDBOX_UID } from '../sandbox/mount-tree';
import { PlatformError } from '../session/platform-error';
import type { MountData, SessionMount, SessionMounts } from './mount-data';

export const OUTPUTS_DIR = '/mnt/session/outputs';
const ROOT = 0;

/** A mount's data could not be read: the sandbox cannot be given its mounts. */
export class MountDataError extends PlatformError {}

const StateSchema = z.object({
  sessionId: z.string(),
  workspaceId: z.string(),
  generation: z.number(),
  /** The mounts written, by mount path. */
  mounts: z.record(z.string(), z.object({ kind: z.string(), ref: z.string(), access: z.string().optional() })),
  /** Per read-write store: memory path -> the SHA-256 the sandbox's copy was last in step with. */
  base: z.record(z.string(), z.record(z.string(), z.string())),
  /** Outputs saved: sandbox path -> SHA-256. */
  outputs: z.record(z.string(), z.string()),
  /** Size and mtime of each file as the last scan saw it. */
  seen: z.record(z.string(), z.object({ size: z.number(), mtime: z.string() })),
  /** Contents refused for good (invalid), by path -> SHA-256, so the same refusal is not repeated every call. */
  refused: z.record(z.string(), z.string()),
  /** Links and other non-regular files already noted. */
  noted: z.array(z.string()),
});
type MountState = z.infer<typeof StateSchema>;

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const keyOf = (m: SessionMount) => m.mountPath;
const refOf = (m: SessionMount) =>
  m.kind === 'file' ? m.fileId : m.kind === 'memory_store' ? m.storeId : `${m.skillId}@${m.version}`;

/** Where a mount path is written from: the /mnt volume, or the workspace. */
function rootOf(mountPath: string): string {
  if (mountPath.startsWith('/mnt/')) return '/mnt';
  if (mountPath.startsWith('/workspace/')) return '/workspace';
  throw new MountDataError(`mount path ${mountPath} is neither under /mnt/ nor under /workspace/`);
}

/** Entries of one tree, with each directory between the root and a path added once. */
class Tree {
  readonly byRoot = new Map<string, Map<string, TreeEntry>>();

  private add(root: string, e: TreeEntry): void {
    let entries = this.byRoot.get(root);
    if (!entries) this.byRoot.set(root, (entries = new Map()));
    entries.set(e.path, e);
  }

  /** The directories above `abs`, up to its root: root's on /mnt, the sandbox user's in the workspace. */
  private parents(abs: string): void {
    const root = rootOf(abs);
    const parts = abs.slice(root.length + 1).split('/');
    const uid = root === '/mnt' ? ROOT : SANDBOX_UID;
    for (let i = 1; i < parts.length; i++) {
      const rel = parts.slice(0, i).join('/');
      if (!this.byRoot.get(root)?.has(rel)) this.add(root, { type: 'dir', path: rel, uid, mode: 0o755 });
    }
  }

  dir(abs: string, uid: number, mode: number): void {
    this.parents(abs);
    const root = rootOf(abs);
    this.add(root, { type: 'dir', path: abs.slice(root.length + 1), uid, mode });
  }

  file(abs: string, content: Buffer, uid: number, mode: number): void {
    this.parents(abs);
    const root = rootOf(abs);
    this.add(root, { type: 'file', path: abs.slice(root.length + 1), uid, mode, content });
  }
}

/** A plain relative path of a store or skill (no `..`, no empty part), joined under `dir`. */
function under(dir: string, rel: string): string {
  const parts = rel.split('/').filter(Boolean);
  if (parts.length === 0 || parts.some((p) => p === '.' || p === '..'))
    throw new MountDataError(`cannot mount ${JSON.stringify(rel)} under ${dir}: not a plain relative path`);
  return `${dir}/${parts.join('/')}`;
}

export interface SessionMountsHands {
  /** After a sandbox is provisioned: writes every mount it does not have yet (all of them, for a new one). */
  provisioned(sessionId: string, sandboxId: string): Promise<void>;
  /** Before a tool runs: writes the mounts added since (and removes those gone) when the generation moved. */
  beforeTool(sessionId: string, sandboxId: string): Promise<void>;
  /** After a tool ran: collects outputs and memory changes; returns notes for the tool result ('' when none). */
  afterTool(sessionId: string, sandboxId: string): Promise<string>;
  /** The sandbox is gone for good. */
  forget(sandboxId: string): void;
}

/** The file in `stateDir` that holds a sandbox's mount state (which session, what was collected). */
export function mountStateFile(stateDir: string, sandboxId: string): string {
  return path.join(stateDir, `${sandboxId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
}

export function sessionMountsHands(
  provider: SandboxProvider,
  data: MountData,
  stateDir: string | undefined,
): SessionMountsHands {
  const states = new Map<string, MountState>();
  const fileOf = (sandboxId: string) => (stateDir ? mountStateFile(stateDir, sandboxId) : undefined);

  /** What each sandbox's file holds, as written or read: a save that would write the same is skipped. */
  const written = new Map<string, string>();
  const load = (sandboxId: string, sessionId: string): MountState | undefined => {
    let s = states.get(sandboxId);
    const file = fileOf(sandboxId);
    if (!s && file) {
      try {
        const parsed = StateSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
        if (parsed.success) {
          s = parsed.data;
          states.set(sandboxId, s);
          written.set(sandboxId, JSON.stringify(s));
        }
      } catch {
        // no record: every mount is written again
      }
    }
    // A sandbox handed to another session has that session's mounts written afresh.
    return s?.sessionId === sessionId ? s : undefined;
  };

  const save = (sandboxId: string, s: MountState): void => {
    states.set(sandboxId, s);
    const file = fileOf(sandboxId);
    if (!file) return;
    const json = JSON.stringify(s);
    if (written.get(sandboxId) === json) return;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, json);
    fs.renameSync(tmp, file);
    written.set(sandboxId, json);
  };

  const fetching = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw new MountDataError(`cannot mount ${what}: ${(err as Error).message}`);
    }
  };

  /** Adds mount `m` to `tree`, recording a read-write store's base in `state`. */
  const addMount = async (tree: Tree, sm: SessionMounts, m: SessionMount, state: MountState): Promise<void> => {
    if (m.kind === 'file') {
      const content = await fetching(`file ${m.fileId} at ${m.mountPath}`, () =>
        data.fileContent(sm.workspaceId, m.fileId),
      );
      tree.file(m.mountPath, content, ROOT, 0o444);
    } else if (m.kind === 'memory_store') {
      const rw = m.access === 'read_write';
      const memories = await fetching(`memory store ${m.storeId} at ${m.mountPath}`, () => data.memories(m.storeId));
      const [uid, dirMode, fileMode] = rw ? [SANDBOX_UID, 0o755, 0o644] : [ROOT, 0o555, 0o444];
      tree.dir(m.mountPath, uid, dirMode);
      const base: Record<string, string> = {};
      for (const mem of memories) {
        const abs = under(m.mountPath, mem.path);
        // Directories inside the store belong to whoever owns the store's mount.
        const rel = abs.slice(m.mountPath.length + 1).split('/');
        for (let i = 1; i < rel.length; i++) tree.dir(`${m.mountPath}/${rel.slice(0, i).join('/')}`, uid, dirMode);
        tree.file(abs, mem.content, uid, fileMode);
        base[`/${rel.join('/')}`] = mem.sha256;
      }
      if (rw) state.base[m.mountPath] = base;
    } else {
      const files = await fetching(`skill ${m.skillId} version ${m.version} at ${m.mountPath}`, () =>
        data.skillFiles(sm.workspaceId, m.skillId, m.version),
      );
      tree.dir(m.mountPath, ROOT, 0o555);
      for (const f of files) {
        const abs = under(m.mountPath, f.path);
        const rel = abs.slice(m.mountPath.length + 1).split('/');
        for (let i = 1; i < rel.length; i++) tree.dir(`${m.mountPath}/${rel.slice(0, i).join('/')}`, ROOT, 0o555);
        tree.file(abs, f.content, ROOT, f.executable ? 0o555 : 0o444);
      }
    }
    state.mounts[keyOf(m)] = {
      kind: m.kind,
      ref: refOf(m),
      ...(m.kind === 'memory_store' ? { access: m.access } : {}),
    };
  };

  const write = async (sandboxId: string, tree: Tree): Promise<void> => {
    for (const [root, entries] of tree.byRoot) await provider.putTree(sandboxId, root, [...entries.values()]);
  };

  /** Brings the sandbox to `sm`: every mount when `state` is new, else those added since and without those gone. */
  const sync = async (
    sessionId: string,
    sandboxId: string,
    sm: SessionMounts,
    previous: MountState | undefined,
  ): Promise<void> => {
    const state: MountState = previous
      ? { ...previous, generation: sm.generation }
      : {
          sessionId,
          workspaceId: sm.workspaceId,
          generation: sm.generation,
          mounts: {},
          base: {},
          outputs: {},
          seen: {},
          refused: {},
          noted: [],
        };
    const wanted = new Map(sm.mounts.map((m) => [keyOf(m), m]));
    const gone = Object.keys(state.mounts).filter((p) => {
      const m = wanted.get(p);
      return (
        !m ||
        state.mounts[p].ref !== refOf(m) ||
        state.mounts[p].access !== (m.kind === 'memory_store' ? m.access : undefined)
      );
    });
    if (previous && gone.length > 0) {
      await provider.removePaths(sandboxId, gone);
      for (const p of gone) {
        delete state.mounts[p];
        delete state.base[p];
        for (const k of Object.keys(state.seen)) if (k === p || k.startsWith(`${p}/`)) delete state.seen[k];
      }
    }
    const tree = new Tree();
    if (!previous) tree.dir(OUTPUTS_DIR, SANDBOX_UID, 0o755);
    for (const m of sm.mounts) if (!state.mounts[keyOf(m)]) await addMount(tree, sm, m, state);
    await write(sandboxId, tree);
    return save(sandboxId, state);
  };

  /** Puts the store's current content of `rel` (or nothing, when gone) into the sandbox, as the sandbox user. */
  const restore = async (sandboxId: string, abs: string, current: { content: Buffer } | undefined): Promise<void> => {
    const r = await provider.execute(sandboxId, {
      key: `memory-restore-${sha256(`${abs}${Date.now()}${Math.random()}`).slice(0, 16)}`,
      script: current
        ? 'rm -f -- "$MA_PATH" && mkdir -p -- "$(dirname -- "$MA_PATH")" && cat > "$MA_PATH"'
        : 'rm -f -- "$MA_PATH"',
      env: { MA_PATH: abs },
      ...(current ? { stdin: current.content } : {}),
      timeoutSeconds: 60,
      maxOutputBytes: 4096,
    });
    if (r.exitCode !== 0) throw new Error(`cannot restore ${abs}: ${r.output.trim()}`);
  };

  return {
    async provisioned(sessionId, sandboxId) {
      const sm = await fetching('the session mounts', () => data.mounts(sessionId));
      if (!sm) return;
      const known = load(sandboxId, sessionId);
      if (known && known.generation === sm.generation) return;
      await sync(sessionId, sandboxId, sm, known);
    },

    async beforeTool(sessionId, sandboxId) {
      const generation = await data.generation(sessionId);
      if (generation === undefined) return;
      const known = load(sandboxId, sessionId);
      if (known && known.generation === generation) return;
      const sm = await fetching('the session mounts', () => data.mounts(sessionId));
      if (!sm) return;
      try {
        await sync(sessionId, sandboxId, sm, known);
      } catch (err) {
        if (!(err instanceof MountDataError) && (await provider.health(sandboxId)) !== 'running')
          throw new SandboxLostError(`sandbox ${sandboxId.slice(0, 12)} is gone: ${(err as Error).message}`);
        throw err;
      }
    },

    async afterTool(sessionId, sandboxId) {
      const state = load(sandboxId, sessionId);
      if (!state) return '';
      const stores = Object.entries(state.mounts)
        .filter(([, m]) => m.kind === 'memory_store' && m.access === 'read_write')
        .map(([p, m]) => ({ mountPath: p, storeId: m.ref }));
      const dirs = [OUTPUTS_DIR, ...stores.map((s) => s.mountPath)];
      const scan = await provider.scanFiles(sandboxId, dirs, state.seen);
      const notes: string[] = [];
      const present = new Set<string>();
      for (const o of scan.other) {
        present.add(o.path);
        if (state.noted.includes(o.path)) continue;
        state.noted.push(o.path);
        notes.push(`${o.path} was not collected: it is a ${o.kind}, and only regular files are.`);
      }
      const seen: MountState['seen'] = {};
      // Outputs to save and memories to write: the two run side by side (outputs' rows and a store's lock do not
      // meet); each kind in scan order.
      const outputs: Array<{ path: string; content: Buffer; sha: string }> = [];
      const writes: Array<{ path: string; content: Buffer; sha: string; store: (typeof stores)[number] }> = [];
      for (const f of scan.files) {
        present.add(f.path);
        if (f.error) {
          const note = `${f.path} was not collected: ${f.error}.`;
          if (!state.noted.includes(f.path)) notes.push(note);
          state.noted.push(f.path);
          continue;
        }
        if (!f.content) {
          // Unchanged since the last scan, or deferred to the next one.
          if (state.seen[f.path] && !f.deferred) seen[f.path] = state.seen[f.path];
          continue;
        }
        const sha = sha256(f.content);
        if (f.path.startsWith(`${OUTPUTS_DIR}/`)) {
          if (state.outputs[f.path] !== sha) outputs.push({ path: f.path, content: f.content, sha });
          seen[f.path] = { size: f.size, mtime: f.mtime };
          continue;
        }
        const store = stores.find((s) => f.path.startsWith(`${s.mountPath}/`));
        if (!store) continue;
        const rel = f.path.slice(store.mountPath.length);
        seen[f.path] = { size: f.size, mtime: f.mtime };
        if ((state.base[store.mountPath] ??= {})[rel] === sha || state.refused[f.path] === sha) continue;
        writes.push({ path: f.path, content: f.content, sha, store });
      }
      const saveOutputs = async () => {
        for (const o of outputs) {
          await data.saveOutput({
            workspaceId: state.workspaceId,
            sessionId,
            relativePath: o.path.slice(OUTPUTS_DIR.length + 1),
            content: o.content,
          });
          state.outputs[o.path] = o.sha;
        }
      };
      const memoryNotes: string[] = [];
      const syncMemories = async () => {
        for (const { path: abs, content, sha, store } of writes) {
          const rel = abs.slice(store.mountPath.length);
          const base = state.base[store.mountPath];
          if (!isUtf8(content)) {
            state.refused[abs] = sha;
            memoryNotes.push(`Memory ${abs} was not saved: a memory is UTF-8 text, and this file is not.`);
            continue;
          }
          const w = await data.writeMemory({
            workspaceId: state.workspaceId,
            storeId: store.storeId,
            sessionId,
            path: rel,
            content: content.toString('utf8'),
            expectedSha256: base[rel] ?? null,
          });
          if (w.ok) {
            base[rel] = w.sha256;
            delete state.refused[abs];
          } else if (w.reason === 'invalid') {
            state.refused[abs] = sha;
            memoryNotes.push(`Memory ${abs} was not saved: ${w.message}`);
          } else {
            memoryNotes.push(await conflict(sandboxId, store.storeId, abs, rel, base, seen));
          }
        }
        // Memories the sandbox no longer has: deleted from the store, unless another session changed them since.
        for (const store of stores) {
          const base = state.base[store.mountPath] ?? {};
          for (const [rel, expected] of Object.entries(base)) {
            const abs = `${store.mountPath}${rel}`;
            if (present.has(abs)) continue;
            const d = await data.deleteMemory({
              workspaceId: state.workspaceId,
              storeId: store.storeId,
              sessionId,
              path: rel,
              expectedSha256: expected,
            });
            if (d.ok) delete base[rel];
            else if (d.reason === 'invalid') memoryNotes.push(`Memory ${abs} was not deleted: ${d.message}`);
            else memoryNotes.push(await conflict(sandboxId, store.storeId, abs, rel, base, seen, 'deletion'));
          }
        }
      };
      const failed = (await Promise.allSettled([saveOutputs(), syncMemories()])).find((r) => r.status === 'rejected');
      if (failed) {
        // What was saved stays recorded; the rest, not marked as seen, is read and tried again by the next scan.
        save(sandboxId, state);
        throw failed.reason;
      }
      notes.push(...memoryNotes);
      for (const p of Object.keys(state.outputs)) if (!present.has(p)) delete state.outputs[p];
      for (const p of Object.keys(state.refused)) if (!present.has(p)) delete state.refused[p];
      state.noted = [...new Set(state.noted)].filter((p) => present.has(p));
      state.seen = seen;
      save(sandboxId, state);
      return notes.join('\n');
    },

    forget(sandboxId) {
      states.delete(sandboxId);
      written.delete(sandboxId);
      const file = fileOf(sandboxId);
      if (file) fs.rmSync(file, { force: true });
    },
  };

  /** Another session wrote `rel` since: the sandbox gets the store's current content and the model a note. */
  async function conflict(
    sandboxId: string,
    storeId: string,
    abs: string,
    rel: string,
    base: Record<string, string>,
    seen: MountState['seen'],
    what: 'change' | 'deletion' = 'change',
  ): Promise<string> {
    const current = (await data.memories(storeId)).find((m) => m.path === rel);
    await restore(sandboxId, abs, current);
    delete seen[abs];
    if (current) base[rel] = current.sha256;
    else delete base[rel];
    const now = current
      ? `${abs} now holds the store's current content: read it again, then make your ${what} again if it still applies.`
      : `another session deleted it, so ${abs} is gone now: write it again if it still applies.`;
    return `Memory ${abs} was changed by another session since you last read it, so your ${what} was not saved. ${now}`;
  }
}

/**
 * Runs a tool with the session's mounts kept in step: new mounts written before it, outputs and memory changes
 * collected after it (also after a tool error; not when the sandbox is gone), with notes appended to its result.
 */
export async function withMounts(
  mounts: SessionMountsHands,
  sessionId: string,
  sandboxId: string,
  run: () => Promise<ToolOutput>,
  heartbeating: <T>(fn: () => Promise<T>) => Promise<T>,
): Promise<ToolOutput> {
  try {
    await heartbeating(() => mounts.beforeTool(sessionId, sandboxId));
  } catch (err) {
    if (err instanceof SandboxLostError) throw err;
    return {
      output: `the tool did not run: the session's mounts could not be written: ${(err as Error).message}`,
      isError: true,
    };
  }
  let out: ToolOutput;
  try {
    out = await run();
  } catch (err) {
    if (!(err instanceof ApplicationFailure && err.type === Failure.Sandbox.Lost) && !(err instanceof SandboxLostError))
      await heartbeating(() => mounts.afterTool(sessionId, sandboxId)).catch(() => undefined);
    throw err;
  }
  let notes: string;
  try {
    notes = await heartbeating(() => mounts.afterTool(sessionId, sandboxId));
  } catch (err) {
    if (err instanceof SandboxLostError) return out;
    notes = `Outputs and memory changes of this call could not be collected yet: ${(err as Error).message}`;
  }
  return notes ? { ...out, output: out.output ? `${out.output}\n\n${notes}` : notes } : out;
}
