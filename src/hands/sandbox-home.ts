// The home directory across a pause: a sandbox paused while idle is removed with its volumes, and its workspace comes
// back from its snapshot (workspace-snapshots.ts). Its home directory (user-level installs, ~/.local, the kept
// outputs of long commands in ~/.tool-output) is kept too, whole but for ~/.cache: the engine's archive of the
// directory, read outside the sandbox, stored in the API's database in chunks sealed by the payload codec, one per
// sandbox of a session (the next pause replaces it), and put back by the engine before the resumed sandbox's first
// call. A home larger than SNAPSHOT_MAX_BYTES is not kept, and the tool result says so.
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import tar from 'tar-stream';
import type { DataConverter } from '@temporalio/common';
import type { Db } from '../storage/db';
import { chunked } from '../storage/blobs';
import { decodeValue, encodeValue } from '../storage/payload-seal';
import {
  deleteSandboxHome,
  findSandboxHome,
  insertSandboxHome,
  insertSandboxHomeChunk,
  sandboxHomeChunk,
} from '../storage/repos/sandbox-homes-repo';
import type { SandboxProvider, SandboxRef } from '../sandbox/provider';
import { PlatformError } from '../session/platform-error';

/** What is left out of a kept home: caches, which a tool fills again. */
const SKIPPED = /^\.cache(\/|$)/;

export type HomeKept = { kept: true; sizeBytes: number } | { kept: false; reason: string };

export interface SandboxHomes {
  /** Keeps the sandbox's home directory for its resume, replacing what an earlier pause kept. */
  keep(sandboxId: string, ref: SandboxRef): Promise<HomeKept>;
  /** Puts back what the last pause of (session, name) kept into a new sandbox; undefined when nothing was kept. */
  restore(sandboxId: string, ref: SandboxRef): Promise<{ sizeBytes: number; keptAt: Date } | undefined>;
}

class HomeTooLargeError extends PlatformError {}

/**
 * The engine's archive of the home directory as one whose paths are relative to it: the directory's own entry
 * dropped, its name taken off every path (the archive is put into the home volume, as the read-only root refuses
 * one put into its parent), and what SKIPPED matches left out.
 */
export function rehome(source: NodeJS.ReadableStream): tar.Pack {
  const extract = tar.extract();
  const pack = tar.pack();
  const inside = (p: string) => {
    const name = p.replace(/^\.?\//, '');
    const slash = name.indexOf('/');
    return slash < 0 ? '' : name.slice(slash + 1).replace(/\/+$/, '');
  };
  extract.on('entry', (header, stream, next) => {
    const name = inside(header.name);
    if (name === '' || SKIPPED.test(name)) {
      stream.on('end', next);
      stream.resume();
      return;
    }
    const entry = {
      ...header,
      name,
      ...(header.type === 'link' && header.linkname ? { linkname: inside(header.linkname) } : {}),
    };
    if (header.type === 'file' || header.type === 'contiguous-file') {
      stream.pipe(pack.entry(entry, next));
    } else {
      stream.on('end', () => pack.entry(entry, next));
      stream.resume();
    }
  });
  extract.on('finish', () => pack.finalize());
  const fail = (err: Error) => pack.destroy(err);
  extract.on('error', fail);
  source.on('error', fail);
  pack.on('close', () => (source as Readable).destroy?.());
  source.pipe(extract);
  return pack;
}

export function createSandboxHomes(opts: {
  provider: SandboxProvider;
  db: () => Db | undefined;
  dataConverter?: DataConverter;
  /** The most a kept home may hold (the archive's size). */
  maxBytes: number;
}): SandboxHomes {
  const { provider, maxBytes } = opts;
  const dc = opts.dataConverter ?? {};
  const database = (): Db => {
    const db = opts.db();
    if (!db) throw new Error("keeping a sandbox's home needs the API's database (DATABASE_URL) on the hands host");
    return db;
  };

  return {
    async keep(sandboxId, { sessionId, name }) {
      const db = database();
      let archive: tar.Pack | undefined;
      try {
        const source = (archive = rehome(await provider.homeArchive(sandboxId)));
        let size = 0;
        await db.transaction(async (tx) => {
          await deleteSandboxHome(tx, sessionId, name);
          let n = 0;
          for await (const piece of chunked(source as AsyncIterable<Uint8Array>)) {
            size += piece.length;
            if (size > maxBytes)
              throw new HomeTooLargeError(`its home directory holds over ${maxBytes} bytes (SNAPSHOT_MAX_BYTES)`);
            await insertSandboxHomeChunk(tx, sessionId, name, n++, await encodeValue(dc, new Uint8Array(piece)));
          }
          await insertSandboxHome(tx, sessionId, name, size, n);
        });
        return { kept: true, sizeBytes: size };
      } catch (err) {
        archive?.destroy();
        // What an earlier pause kept is older than the files now: a resume starts with the image's home instead.
        await deleteSandboxHome(db, sessionId, name).catch(() => undefined);
        if (!(err instanceof HomeTooLargeError)) throw err;
        return { kept: false, reason: err.message };
      }
    },

    async restore(sandboxId, { sessionId, name }) {
      const db = database();
      const row = await findSandboxHome(db, sessionId, name);
      if (!row) return undefined;
      const body = new PassThrough();
      // A restore that fails midway ends the engine's request too: a body that just stops would hold it open.
      const abort = new AbortController();
      const put = provider.putHome(sandboxId, body, abort.signal);
      try {
        for (let n = 0; n < row.chunks; n++) {
          const sealed = await sandboxHomeChunk(db, sessionId, name, n);
          if (!sealed) throw new Error(`the kept home of sandbox ${name} lost its chunk ${n}`);
          const plain = await decodeValue(dc, sealed);
          if (!(plain instanceof Uint8Array))
            throw new Error(`a chunk of the kept home of sandbox ${name} is not bytes`);
          if (!body.write(Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength))) await once(body, 'drain');
        }
        body.end();
        await put;
      } catch (err) {
        abort.abort();
        body.destroy();
        await put.catch(() => undefined);
        throw err;
      }
      return { sizeBytes: row.size_bytes, keptAt: row.created_at };
    },
  };
}
