// Finds an executable on PATH, optionally looking in more directories.
import fs from 'node:fs';
import path from 'node:path';

export function onPath(name: string, extraDirs: string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), ...extraDirs]) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}
