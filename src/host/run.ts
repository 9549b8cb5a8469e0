// Running a command and keeping the end of its output, and showing that end (or a log file's) when a step fails.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

export type Log = (msg: string) => void;
export const defaultLog: Log = (m) => process.stderr.write(`${m}\n`);

export interface RunResult {
  code: number | null;
  stdout: string;
  output: string;
}

export const OUTPUT_KEEP = 64_000;

export function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; stdin?: NodeJS.ReadableStream; uid?: number; gid?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: opts.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      uid: opts.uid,
      gid: opts.gid,
    });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout = (stdout + chunk.toString()).slice(-OUTPUT_KEEP);
      output = (output + chunk.toString()).slice(-OUTPUT_KEEP);
    });
    child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-OUTPUT_KEEP)));
    // The reader may exit early (a failed import); its exit code tells the story, not EPIPE.
    child.stdin.on('error', () => undefined);
    if (opts.stdin) opts.stdin.pipe(child.stdin);
    else child.stdin.end();
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, output }));
  });
}

export function logTail(log: Log, text: string, lines = 15): void {
  for (const line of text.trimEnd().split('\n').slice(-lines)) log(`  | ${line}`);
}

export async function mustRun(
  what: string,
  cmd: string,
  args: string[],
  log: Log,
  env?: NodeJS.ProcessEnv,
): Promise<RunResult> {
  const result = await run(cmd, args, { env });
  if (result.code !== 0) {
    logTail(log, result.output);
    throw new Error(`${what} failed (exit ${result.code}); its output ends above`);
  }
  return result;
}

/** The end of `file` from byte `offset` (at most the last {@link OUTPUT_KEEP} bytes); empty when it cannot be read. */
export function readFrom(file: string, offset: number): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const start = Math.max(offset, size - OUTPUT_KEEP);
      const buf = Buffer.alloc(size - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}
