// Finds Debian's Chromium for the browser test, and installs it with apt when missing and allowed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { onPath } from '../host/which';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

export function chromiumPath(): string {
  const found = process.env.CHROMIUM_PATH || CANDIDATES.find((p) => fs.existsSync(p)) || onPath('chromium');
  if (!found)
    throw new Error("Chromium not found: run `npm run setup` (it installs Debian's chromium), or set CHROMIUM_PATH");
  return found;
}

/** Ensures a Chromium binary, with `apt-get install chromium` when running as root; says what it did. */
export function ensureChromium(log: (m: string) => void): string {
  try {
    return chromiumPath();
  } catch {
    if (process.getuid?.() !== 0 || !onPath('apt-get'))
      throw new Error(
        'Chromium is missing and this is not a root Debian machine: install chromium, or set CHROMIUM_PATH',
      );
    log("installing Debian's chromium with apt-get (used by the Web UI browser test)");
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env,
    });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'], env });
      r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
        stdio: ['ignore', 'ignore', 'inherit'],
        env,
      });
    }
    if (r.status !== 0) throw new Error(`apt-get install chromium failed (exit ${r.status})`);
    return chromiumPath();
  }
}
