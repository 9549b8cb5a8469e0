// Schemathesis (PyPI) for the API fuzz test: installed on first use into a virtualenv in the cache outside the repo
// (beside the Temporal CLI's), from test/api/schemathesis/requirements.txt, where every package is pinned.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withLockFile } from '../../src/host/lock';
import { onPath } from '../../src/host/which';
import { ROOT } from './env';

export const SCHEMATHESIS_VERSION = '4.32.5';
const REQUIREMENTS = path.join(ROOT, 'test/api/schemathesis/requirements.txt');

function venvDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', `schemathesis-${SCHEMATHESIS_VERSION}`);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The virtualenv's python, with schemathesis installed; installs it (about 20 s) when the cache lacks it. */
export async function ensureSchemathesis(log: (m: string) => void = () => undefined): Promise<string> {
  const dir = venvDir();
  const python = path.join(dir, 'bin', 'python');
  const done = path.join(dir, '.installed');
  if (fs.existsSync(done)) return python;
  const base = onPath('python3');
  if (!base)
    throw new Error(
      'python3 is needed to install schemathesis for the API fuzz test; install python3 (with its venv module)',
    );
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  return withLockFile(`${dir}.lock`, async () => {
    if (fs.existsSync(done)) return python;
    fs.rmSync(dir, { recursive: true, force: true });
    log(`installing schemathesis ${SCHEMATHESIS_VERSION} into ${dir}`);
    const venv = await run(base, ['-m', 'venv', dir]);
    if (venv.code !== 0) throw new Error(`python3 -m venv ${dir} failed: ${venv.stderr}`);
    const pip = await run(python, [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--no-input',
      '-r',
      REQUIREMENTS,
    ]);
    if (pip.code !== 0) throw new Error(`pip install of schemathesis failed: ${pip.stderr.slice(-2000)}`);
    fs.writeFileSync(done, `${SCHEMATHESIS_VERSION}\n`);
    return python;
  });
}

/** `st` with `args`, run by the virtualenv's python. */
export async function runSchemathesis(
  python: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<Run> {
  return run(python, ['-m', 'schemathesis.cli', ...args], { env: { ...process.env, ...env, NO_COLOR: '1' }, cwd });
}
