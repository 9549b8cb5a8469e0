// The operator's side of the Files API: `agents files list|upload|info|download|delete`, on the API's database
// directly (as `agents api-keys` and `agents audit` are), in one workspace (`--workspace`, default `default`). They
// keep the API's rules: the same limits (FILES_MAX_BYTES, STORAGE_QUOTA_BYTES), names, expiry and downloads.
import { InvalidArgumentError, type Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../config';
import { CliError, err, out, positiveInt } from './cli-common';
import { withApiDb } from './api-key-commands';

type Db = import('../storage/db').Db;

const fileId = (raw: string): string => {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(raw))
    throw new InvalidArgumentError('file ids are 1-128 letters, digits, dash or underscore');
  return raw;
};

/** Runs `fn` with the database, the blob store and the id of workspace `name`. */
async function inWorkspace<T>(
  name: string,
  fn: (db: Db, blobs: import('../storage/blobs').BlobStore, workspaceId: string) => Promise<T>,
): Promise<T> {
  const { WorkspaceNameSchema } = await import('../api/workspace-keys');
  const parsed = WorkspaceNameSchema.safeParse(name);
  if (!parsed.success) throw new CliError(`--workspace: ${parsed.error.issues[0].message}`);
  const config = loadConfig();
  const { BlobStore } = await import('../storage/blobs');
  const { createDataConverter } = await import('../codec');
  const { loadCodecKey } = await import('../key-files');
  const { findWorkspaceId } = await import('../storage/repos/api-keys-repo');
  const converter = createDataConverter(loadCodecKey(config));
  return withApiDb(async (db) => {
    const workspaceId = await findWorkspaceId(db, parsed.data);
    if (!workspaceId) throw new CliError(`no workspace ${parsed.data}`);
    return fn(db, new BlobStore(db, converter), workspaceId);
  });
}

const line = (f: import('../api/files').ApiFile) =>
  [
    f.id,
    f.filename,
    f.mime_type,
    String(f.size_bytes),
    f.created_at,
    f.downloadable ? 'downloadable' : '-',
    f.expires_at ? `expires ${f.expires_at}` : '',
    f.scope ? `session ${f.scope.id}` : '',
  ]
    .join('\t')
    .trimEnd();

/** Adds the Files API's commands to `agents files`. */
export function fileStoreCommands(files: Command): void {
  const workspaceOption = ['--workspace <name>', 'the workspace the files are in', 'default'] as const;
  files
    .command('list')
    .description("list the workspace's files (uploads and sessions' outputs), newest first")
    .option(...workspaceOption)
    .option('--session <id>', "only this session's outputs")
    .option('--limit <n>', 'at most N files (default 100)', positiveInt)
    .option('--json', 'one JSON object per line')
    .action(async (opts: { workspace: string; session?: string; limit?: number; json?: boolean }) => {
      const { listFiles, releaseExpired } = await import('../storage/repos/files-repo');
      const { toFileMetadata } = await import('../api/files');
      const rows = await inWorkspace(opts.workspace, async (db, blobs, ws) => {
        await releaseExpired(db, blobs, ws);
        return listFiles(db, ws, {
          before: null,
          ...(opts.session ? { scopeId: opts.session } : {}),
          limit: opts.limit ?? 100,
        });
      });
      for (const r of rows) out(opts.json ? JSON.stringify(toFileMetadata(r)) : line(toFileMetadata(r)));
    });

  files
    .command('upload')
    .description('upload a local file to the workspace, as files.upload does (uploads are not downloadable)')
    .argument('<path>', 'local file')
    .option(...workspaceOption)
    .option('--expires-in <seconds>', 'seconds until its bytes expire, 3600 to 7776000', positiveInt)
    .option('--json', "print the file's metadata on stdout")
    .action(async (local: string, opts: { workspace: string; expiresIn?: number; json?: boolean }) => {
      const api = await import('../api/files');
      const { insertUpload, mimeTypeFor, StorageQuotaError } = await import('../storage/repos/files-repo');
      const { recordAudit } = await import('../api/audit');
      const limits = api.fileLimitsFrom(loadConfig());
      if (
        opts.expiresIn !== undefined &&
        (opts.expiresIn < api.MIN_EXPIRES_IN_SECONDS || opts.expiresIn > api.MAX_EXPIRES_IN_SECONDS)
      )
        throw new CliError(
          `--expires-in: must be between ${api.MIN_EXPIRES_IN_SECONDS} (one hour) and ${api.MAX_EXPIRES_IN_SECONDS} (ninety days) seconds`,
        );
      let size: number;
      try {
        const stat = fs.statSync(local);
        if (!stat.isFile()) throw new CliError(`${local} is not a regular file`);
        size = stat.size;
      } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(`cannot read ${local}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
      if (size > limits.maxBytes)
        throw new CliError(
          `${local} is ${size} bytes; the most a file may hold is ${limits.maxBytes} (FILES_MAX_BYTES)`,
        );
      const mimeType = mimeTypeFor(local);
      let filename: string;
      try {
        filename = api.uploadFilename(path.basename(local), mimeType);
      } catch (e) {
        throw new CliError((e as Error).message);
      }
      const row = await inWorkspace(opts.workspace, async (db, blobs, ws) => {
        const { releaseExpired } = await import('../storage/repos/files-repo');
        await releaseExpired(db, blobs, ws);
        try {
          return await db.transaction(async (tx) => {
            const blob = await blobs.put(ws, fs.createReadStream(local), { q: tx, maxBytes: limits.maxBytes });
            const made = await insertUpload(tx, {
              workspaceId: ws,
              filename,
              mimeType,
              blob,
              ...(opts.expiresIn !== undefined ? { expiresInSeconds: opts.expiresIn } : {}),
              ...(limits.quotaBytes !== undefined ? { quotaBytes: limits.quotaBytes } : {}),
            });
            await recordAudit(tx, {
              workspaceId: ws,
              apiKeyId: null,
              action: 'created',
              resourceType: 'file',
              resourceId: made.id,
            });
            return made;
          });
        } catch (e) {
          if (e instanceof StorageQuotaError) throw new CliError(e.message);
          throw e;
        }
      });
      const meta = api.toFileMetadata(row);
      if (opts.json) out(JSON.stringify(meta));
      err(`uploaded ${local} as ${meta.id} (${meta.size_bytes} bytes, ${meta.mime_type})`);
    });

  files
    .command('info')
    .description("print a file's metadata")
    .argument('<file_id>', 'file id', fileId)
    .option(...workspaceOption)
    .option('--json', 'print it as JSON')
    .action(async (id: string, opts: { workspace: string; json?: boolean }) => {
      const { findFile } = await import('../storage/repos/files-repo');
      const { toFileMetadata } = await import('../api/files');
      const row = await inWorkspace(opts.workspace, (db, _blobs, ws) => findFile(db, ws, id));
      if (!row) throw new CliError(`no file ${id} in workspace ${opts.workspace}`);
      const meta = toFileMetadata(row);
      if (opts.json) out(JSON.stringify(meta));
      else
        for (const [k, v] of Object.entries(meta))
          out(`${k}\t${v && typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
    });

  files
    .command('download')
    .description("write a downloadable file's content (a session's output) to -o PATH, or to stdout")
    .argument('<file_id>', 'file id', fileId)
    .option(...workspaceOption)
    .option('-o, --output <path>', 'the local file to write')
    .option('--json', 'with -o: print {"id","path","bytes"} on stdout')
    .action(async (id: string, opts: { workspace: string; output?: string; json?: boolean }) => {
      if (opts.json && !opts.output) throw new CliError('--json needs -o: without it the content goes to stdout');
      const { findFile, isExpired, releaseExpired } = await import('../storage/repos/files-repo');
      const bytes = await inWorkspace(opts.workspace, async (db, blobs, ws) => {
        const row = await findFile(db, ws, id);
        if (!row) throw new CliError(`no file ${id} in workspace ${opts.workspace}`);
        if (isExpired(row) || !row.blob_id) {
          await releaseExpired(db, blobs, ws);
          throw new CliError(`file ${id} expired; its content is no longer available`);
        }
        if (!row.downloadable)
          throw new CliError(
            `file ${id} is not downloadable: only files a session wrote to its outputs can be downloaded`,
          );
        const sink: NodeJS.WritableStream = opts.output ? fs.createWriteStream(opts.output) : process.stdout;
        let n = 0;
        for await (const chunk of blobs.stream(row.blob_id)) {
          n += chunk.length;
          if (!sink.write(chunk)) await new Promise<void>((resolve) => sink.once('drain', () => resolve()));
        }
        if (opts.output)
          await new Promise<void>((resolve, reject) => {
            sink.once('error', reject);
            sink.end(() => resolve());
          });
        return n;
      });
      if (opts.output) {
        if (opts.json) out(JSON.stringify({ id, path: opts.output, bytes }));
        err(`wrote ${bytes} bytes to ${opts.output}`);
      }
    });

  files
    .command('delete')
    .description('delete a file and its content')
    .argument('<file_id>', 'file id', fileId)
    .option(...workspaceOption)
    .option('--json', 'print {"id","type"} on stdout')
    .action(async (id: string, opts: { workspace: string; json?: boolean }) => {
      const { deleteFile } = await import('../storage/repos/files-repo');
      const { recordAudit } = await import('../api/audit');
      const deleted = await inWorkspace(opts.workspace, async (db, blobs, ws) => {
        if (!(await deleteFile(db, blobs, ws, id))) return false;
        await recordAudit(db, {
          workspaceId: ws,
          apiKeyId: null,
          action: 'deleted',
          resourceType: 'file',
          resourceId: id,
        });
        return true;
      });
      if (!deleted) throw new CliError(`no file ${id} in workspace ${opts.workspace}`);
      if (opts.json) out(JSON.stringify({ id, type: 'file_deleted' }));
      err(`deleted ${id}`);
    });
}
