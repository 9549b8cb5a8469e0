// Reading /proc/mounts: what is mounted at or below a directory.
import fs from 'node:fs';

export function mountsUnder(dir: string): string[] {
  const decode = (s: string) => s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
  return fs
    .readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((line) => decode(line.split(' ')[1] ?? ''))
    .filter((m) => m === dir || m.startsWith(`${dir}/`));
}

export function isMountPoint(dir: string): boolean {
  return mountsUnder(dir).includes(dir);
}
