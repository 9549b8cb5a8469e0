// The memory store commands of `agents`: what the operator reads of every workspace's memory stores, straight from
// the API's database (as `agents api-keys` does), with contents opened under CODEC_KEY.
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { loadConfig } from '../config';
import { CliError, out } from './cli-common';
import { withApiDb } from './api-key-commands';
import type { Db } from '../storage/db';
import type { BlobStore } from '../storage/blobs';
import type { MemoryStoreRow, MemoryVersionRow } from '../storage/repos/memory-repo';

function storeId(raw: string): string {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(raw)) throw new InvalidArgumentError('store ids look like memstore_01…');
  return raw;
}

/** Runs `fn` on the API's database and a blob store that opens its contents. */
async function withMemory<T>(fn: (db: Db, blobs: BlobStore) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { BlobStore } = await import('../storage/blobs');
  const { createDataConverter } = await import('../codec');
  const { loadCodecKey } = await import('../key-files');
  const converter = createDataConverter(loadCodecKey(config));
  return withApiDb((db) => fn(db, new BlobStore(db, converter)));
}

async function storeOrFail(db: Db, id: string): Promise<MemoryStoreRow & { workspace: string }> {
  const { findMemoryStoreById } = await import('../storage/repos/memory-repo');
  const store = await findMemoryStoreById(db, id);
  if (!store) throw new CliError(`no memory store ${id}`);
  return store;
}

const actorOf = (a: MemoryVersionRow['created_by']) =>
  !a ? '-' : a.type === 'api_actor' ? `api:${a.api_key_id}` : `session:${a.session_id}`;

/** `agents memory stores`, `ls`, `cat` and `versions`. */
export function memoryCommands(program: Command): void {
  const memory = program
    .command('memory')
    .description("read memory stores: what agents remember across sessions (the API's /v1/memory_stores)");
  memory
    .command('stores')
    .description('list memory stores, of every workspace or one')
    .option('--workspace <name>', 'only this workspace')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { workspace?: string; json?: boolean }) => {
      const { listAllMemoryStores } = await import('../storage/repos/memory-repo');
      const stores = await withApiDb((db) => listAllMemoryStores(db, opts.workspace ?? null));
      for (const s of stores)
        out(
          opts.json
            ? JSON.stringify({
                id: s.id,
                workspace: s.workspace,
                name: s.name,
                description: s.description,
                created_at: s.created_at,
                archived_at: s.archived_at,
              })
            : `${s.id}\t${s.workspace}\t${s.name}${s.archived_at ? '\tarchived' : ''}`,
        );
    });
  memory
    .command('ls')
    .description("list a store's memories: path, size in bytes, SHA-256 and id")
    .argument('<store_id>', 'memory store id', storeId)
    .option('--prefix <prefix>', 'only paths under this directory, such as /notes/')
    .option('--json', 'one JSON object per line')
    .action(async (id: string, opts: { prefix?: string; json?: boolean }) => {
      const prefix = opts.prefix ?? '/';
      if (!prefix.startsWith('/') || !prefix.endsWith('/'))
        throw new CliError('--prefix must start and end with "/", such as /notes/');
      const { listMemories } = await import('../storage/repos/memory-repo');
      const rows = await withApiDb(async (db) => {
        await storeOrFail(db, id);
        const all = [];
        for (let after: string | null = null; ;) {
          const page = await listMemories(db, id, { prefix, depth: 0, after, limit: 500 });
          all.push(...page);
          if (page.length < 500) return all;
          const last = page[page.length - 1];
          after = last.kind === 'memory' ? last.memory.path : last.path;
        }
      });
      for (const e of rows) {
        if (e.kind !== 'memory') continue;
        const m = e.memory;
        out(
          opts.json
            ? JSON.stringify({
                id: m.id,
                path: m.path,
                content_size_bytes: m.content_size_bytes,
                content_sha256: m.content_sha256,
                memory_version_id: m.version_id,
                updated_at: m.updated_at,
              })
            : `${m.path}\t${m.content_size_bytes}\t${m.content_sha256.slice(0, 12)}\t${m.id}`,
        );
      }
    });
  memory
    .command('cat')
    .description("print a memory's current content")
    .argument('<store_id>', 'memory store id', storeId)
    .argument('<path>', "the memory's path, such as /notes/todo.md")
    .option('--json', 'print {"id","path","content_sha256","content"} on stdout')
    .action(async (id: string, path: string, opts: { json?: boolean }) => {
      const { memoryAtPath, memoryContent } = await import('../storage/repos/memory-repo');
      const found = await withMemory(async (db, blobs) => {
        await storeOrFail(db, id);
        const m = await memoryAtPath(db, id, path);
        if (!m) throw new CliError(`no memory at ${path} in ${id}`);
        return { m, content: (await memoryContent(db, blobs, m)).toString('utf8') };
      });
      if (opts.json)
        out(
          JSON.stringify({
            id: found.m.id,
            path: found.m.path,
            content_sha256: found.m.content_sha256,
            content: found.content,
          }),
        );
      else process.stdout.write(found.content);
    });
  memory
    .command('versions')
    .description("a store's history, newest first: every change, its operation, path and author")
    .argument('<store_id>', 'memory store id', storeId)
    .option('--path <path>', 'only the memories that were ever at this path (renames included)')
    .option('--json', 'one JSON object per line')
    .action(async (id: string, opts: { path?: string; json?: boolean }) => {
      const { listMemoryVersions, memoryIdsAtPath } = await import('../storage/repos/memory-repo');
      const versions = await withApiDb(async (db) => {
        await storeOrFail(db, id);
        const ids = opts.path === undefined ? [undefined] : await memoryIdsAtPath(db, id, opts.path);
        const all: MemoryVersionRow[] = [];
        for (const memoryId of ids)
          for (let before: number | null = null; ;) {
            const page = await listMemoryVersions(db, id, { before, memoryId, limit: 500 });
            all.push(...page);
            if (page.length < 500) break;
            before = page[page.length - 1].pos;
          }
        return all.sort((a, b) => b.pos - a.pos);
      });
      for (const v of versions)
        out(
          opts.json
            ? JSON.stringify({
                id: v.id,
                memory_id: v.memory_id,
                operation: v.operation,
                path: v.path,
                content_sha256: v.content_sha256,
                content_size_bytes: v.content_size_bytes,
                created_by: v.created_by,
                created_at: v.created_at,
                redacted_at: v.redacted_at,
              })
            : `${v.id}\t${v.operation}\t${v.path ?? '(redacted)'}\t${actorOf(v.created_by)}\t${new Date(v.created_at).toISOString()}`,
        );
    });
}
