// Chromium for the browser tests (the console and the Web UI) and the console benchmark, never for running the
// platform: found on the machine, or installed from Debian with apt the first time a test asks for it.
import fs from 'node:fs';
import { withLock } from '../host/lock';
import { onPath } from '../host/which';
import type { Log } from '../host/run';
import { aptInstall, isRoot, SYSTEM_DIRS } from './system-tools';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** `$CHROMIUM_PATH`, else Debian's chromium; undefined when there is none. */
export function findChromium(): string | undefined {
  return process.env.CHROMIUM_PATH || CANDIDATES.find((p) => fs.existsSync(p)) || onPath('chromium');
}

export function chromiumPath(): string {
  const found = findChromium();
  if (!found)
    throw new Error(
      "Chromium not found: run `npm run setup -- --test-deps` (it installs Debian's chromium), or set CHROMIUM_PATH",
    );
  return found;
}

/**
 * A Chromium binary, installing Debian's `chromium` with apt-get when it is missing and this is a root Debian
 * machine. One process installs at a time; the others wait for it and find the result.
 */
export async function ensureChromium(log: Log = (m) => process.stderr.write(`${m}\n`)): Promise<string> {
  const found = findChromium();
  if (found) return found;
  if (!isRoot() || !onPath('apt-get', SYSTEM_DIRS))
    throw new Error(
      'Chromium is missing and this is not a root Debian machine: install chromium, or set CHROMIUM_PATH',
    );
  return withLock('chromium', log, async () => {
    const meanwhile = findChromium();
    if (meanwhile) return meanwhile;
    log("installing Debian's chromium with apt-get (the browser tests use it; it is installed once)");
    await aptInstall(['chromium'], log);
    return chromiumPath();
  });
}
