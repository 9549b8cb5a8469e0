// The sandbox commands of `agents`: copy files into and out of a session's sandbox, and hand a sandbox to another session.
import { InvalidArgumentError, type Command } from 'commander';
import fs from 'node:fs';
import { loadConfig } from '../config';
import { MAX_FILE_BYTES } from '../session/paths';
import { getFileUpdate, handoffSandboxUpdate, putFileUpdate } from '../session/contract';
import { CliError, connect, err, out, sessionId, update, withSession } from './cli-common';
import { fileStoreCommands } from './file-commands';

/** `agents files put` and `agents files get`, and the Files API's commands (./file-commands.ts). */
export function filesCommands(program: Command): void {
  const files = program
    .command('files')
    .description(
      "copy files into and out of a session's sandbox (put, get; provisions it if needed), and manage the Files API's files (list, upload, info, download, delete)",
    );
  files
    .command('put')
    .description('copy LOCAL into the sandbox at PATH (relative to the workspace, or absolute inside it)')
    .argument('<id>', 'session id', sessionId)
    .argument('<local>', 'local file')
    .argument('<path>', 'path in the sandbox')
    .option('--sandbox <name>', 'sandbox name', 'main')
    .option('--json', 'print {"path","bytes"} on stdout')
    .action(async (id: string, local: string, target: string, opts: { sandbox: string; json?: boolean }) => {
      let content: Buffer;
      try {
        const stat = fs.statSync(local);
        if (!stat.isFile()) throw new CliError(`${local} is not a regular file`);
        if (stat.size > MAX_FILE_BYTES)
          throw new CliError(`${local} is ${stat.size} bytes; the limit is ${MAX_FILE_BYTES}`);
        content = fs.readFileSync(local);
      } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(`cannot read ${local}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
      const client = await connect(loadConfig());
      const r = await withSession(id, () =>
        update(client, id, putFileUpdate, {
          sandbox: opts.sandbox,
          path: target,
          contentBase64: content.toString('base64'),
        }),
      );
      if (opts.json) out(JSON.stringify({ path: r.path, bytes: r.bytes }));
      err(`wrote ${r.bytes} bytes to ${r.path}`);
    });
  files
    .command('get')
    .description('copy PATH out of the sandbox to LOCAL')
    .argument('<id>', 'session id', sessionId)
    .argument('<path>', 'path in the sandbox')
    .argument('<local>', 'local file')
    .option('--sandbox <name>', 'sandbox name', 'main')
    .option('--json', 'print {"path","bytes"} on stdout')
    .action(async (id: string, source: string, local: string, opts: { sandbox: string; json?: boolean }) => {
      const client = await connect(loadConfig());
      const r = await withSession(id, () => update(client, id, getFileUpdate, { sandbox: opts.sandbox, path: source }));
      fs.writeFileSync(local, Buffer.from(r.contentBase64, 'base64'));
      if (opts.json) out(JSON.stringify({ path: r.path, bytes: r.bytes }));
      err(`read ${r.bytes} bytes from ${r.path}`);
    });
  fileStoreCommands(files);
}

/** `agents handoff`: one of a session's sandboxes passed to another session. */
export function handoffCommand(program: Command): void {
  program
    .command('handoff')
    .description(
      "pass one of session FROM's sandboxes to session TO: the container stays on its host, its owner changes, and FROM's later calls to it are denied",
    )
    .argument('<from>', 'the session that holds the sandbox', sessionId)
    .argument('<sandbox>', 'the sandbox name, e.g. main', (v: string) => {
      if (!/^[a-z][a-z0-9-]{0,30}$/.test(v))
        throw new InvalidArgumentError('sandbox names are lowercase letters, digits and -');
      return v;
    })
    .argument('<to>', 'the session that receives it', sessionId)
    .option('--json', 'print {"sandboxId"} on stdout')
    .action(async (from: string, sandbox: string, to: string, opts: { json?: boolean }) => {
      if (from === to) throw new CliError('a session cannot hand a sandbox to itself');
      const client = await connect(loadConfig());
      const desc = await withSession(to, () => client.workflow.getHandle(to).describe());
      if (desc.status.name !== 'RUNNING')
        throw new CliError(`session ${to} is not running (${desc.status.name.toLowerCase()})`);
      const r = await withSession(from, () => update(client, from, handoffSandboxUpdate, { sandbox, to }));
      if (opts.json) out(JSON.stringify(r));
      err(`sandbox ${sandbox} (${r.sandboxId.slice(0, 12)}) of ${from} now belongs to ${to}`);
    });
}
