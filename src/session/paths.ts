// Workspace path rules, shared by the CLI, the workflow's validators and the hands: nothing escapes the workspace.
import { z } from 'zod';
import { shared } from './shared';

/** Normalises a POSIX path without touching a filesystem. */
export function normalizePosix(p: string): string {
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length === 0) return '/..';
      out.pop();
    } else out.push(part);
  }
  return `/${out.join('/')}`;
}

/** Resolves `p` (relative to the workspace, or absolute inside it); throws a clear error if it leaves the workspace. */
export function resolveWorkspacePath(workdir: string, p: string): string {
  if (p.length === 0) throw new Error('path must not be empty');
  if (p.includes('\0')) throw new Error('path must not contain NUL');
  if (p.length > 4096) throw new Error('path is longer than 4096 characters');
  const root = normalizePosix(workdir);
  const resolved = normalizePosix(p.startsWith('/') ? p : `${root}/${p}`);
  if (resolved === root || !resolved.startsWith(`${root}/`))
    throw new Error(`path ${p} is outside the workspace ${root}`);
  return resolved;
}

/** Files copied in or out through `agents files` are at most this large. */
export const MAX_FILE_BYTES = 1024 * 1024;

/**
 * A path field of a file tool's input (`file_path`, `path`): relative to the workspace, or absolute inside it.
 * Whether it stays inside is decided in the sandbox, where symbolic links can be resolved.
 */
export const ToolPathSchema = shared('paths.ToolPathSchema', () =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(4096, 'must be at most 4096 characters')
    .refine((p) => !p.includes('\0'), 'must not contain NUL'),
);
