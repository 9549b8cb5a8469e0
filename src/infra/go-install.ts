// `go install` of a pinned command into a cache directory, with go's output shown above a progress line, or
// handed to a log when the caller shows several steps at once.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { progress, type Progress } from '../host/term';

/** Builds `goPackage` (path@version) into `dir` and returns the path of `binary` there. */
export async function goInstall(
  goPackage: string,
  dir: string,
  binary: string,
  what: string,
  env: NodeJS.ProcessEnv = {},
  log?: (line: string) => void,
): Promise<string> {
  fs.mkdirSync(dir, { recursive: true });
  const p: Progress = log ? { log, done: (m) => m && log(m), fail: () => undefined } : progress(`building ${what}`);
  // go's own output goes to stderr, line by line above the progress line; stdout stays clean.
  const child = spawn('go', ['install', goPackage], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, GOBIN: dir },
  });
  for (const s of [child.stdout, child.stderr]) readline.createInterface({ input: s }).on('line', (l) => p.log(l));
  const status = await new Promise<number | null>((resolve) => {
    child.on('error', () => resolve(null));
    child.on('close', (code) => resolve(code));
  });
  const built = path.join(dir, binary);
  if (status !== 0 || !fs.existsSync(built)) {
    p.fail();
    throw new Error(`go install ${goPackage} failed (exit ${status})`);
  }
  p.done(`built ${what} at ${built}`);
  return built;
}
