// Builds the stdio MCP server fixture into plain JavaScript that `node` can run as a child of the tools worker.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from './env';

/** The compiled script and the NODE_PATH it needs to find the SDK from a temporary directory. */
export function buildStdioServer(): { script: string; nodePath: string; dir: string } {
  const source = fs.readFileSync(path.join(__dirname, 'mcp-stdio-server.ts'), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-mcp-stdio-'));
  const script = path.join(dir, 'server.js');
  fs.writeFileSync(script, outputText);
  return { script, nodePath: path.join(ROOT, 'node_modules'), dir };
}
