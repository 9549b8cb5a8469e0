// Builds a stdio MCP server fixture into plain JavaScript that `node` can run as a child of the tools worker.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from './env';

/** The compiled script and the NODE_PATH it needs to find the SDK from a temporary directory. */
export function buildStdioServer(fixture = 'mcp-stdio-server.ts'): { script: string; nodePath: string; dir: string } {
  const source = fs.readFileSync(path.join(__dirname, fixture), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-mcp-stdio-'));
  const script = path.join(dir, 'server.js');
  fs.writeFileSync(script, outputText);
  // The jailed server runs as an unprivileged user, which must be able to read its own script.
  fs.chmodSync(dir, 0o755);
  return { script, nodePath: path.join(ROOT, 'node_modules'), dir };
}

/** Host pids of every process whose command line names `script` (the jail's bwrap and setpriv, and the server). */
export function processesRunning(script: string): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(script)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
