// Runs the `agents` command line as a child process, as a user would.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './env';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runAgents(address: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), ...args], { env: { ...process.env, TEMPORAL_ADDRESS: address, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Asserts a failed run: non-zero exit, nothing on stdout, one line on stderr matching `pattern`. */
export function expectOneLineError(r: Run, pattern: RegExp) {
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}
