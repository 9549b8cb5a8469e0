// The Debian mirror for the offline sandbox build, read from this machine's apt sources (one-line and deb822).
import fs from 'node:fs';
import path from 'node:path';

/** The Debian release the sandbox image is built from. */
export const SUITE = 'bookworm';

interface AptSource {
  uri: string;
  suites: string[];
  components: string[];
}

function parseDeb822(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last: string | undefined;
    for (const line of stanza.split('\n')) {
      if (line.startsWith('#') || !line.trim()) continue;
      if (/^\s/.test(line) && last) {
        fields.set(last, `${fields.get(last)} ${line.trim()}`);
        continue;
      }
      const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line);
      if (!m) continue;
      last = m[1].toLowerCase();
      fields.set(last, m[2].trim());
    }
    const list = (key: string) => (fields.get(key) ?? '').split(/\s+/).filter(Boolean);
    if (!list('types').includes('deb') || (fields.get('enabled') ?? 'yes').toLowerCase() === 'no') continue;
    for (const uri of list('uris')) sources.push({ uri, suites: list('suites'), components: list('components') });
  }
  return sources;
}

function parseSourcesList(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*$/, '').trim();
    const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (m) sources.push({ uri: m[1], suites: [m[2]], components: m[3].split(/\s+/).filter(Boolean) });
  }
  return sources;
}

function hostCodename(): string | undefined {
  try {
    const osRelease = fs.readFileSync('/etc/os-release', 'utf8');
    if (!/^ID=debian$/m.test(osRelease)) return undefined;
    return /^VERSION_CODENAME=(\S+)$/m.exec(osRelease)?.[1];
  } catch {
    return undefined;
  }
}

/** The Debian mirror this machine's apt uses for `suite`, read from its sources (never written down here). */
export function findDebianMirror(aptDir = '/etc/apt', suite = SUITE, codename = hostCodename()): string {
  const sources: AptSource[] = [];
  const main = path.join(aptDir, 'sources.list');
  if (fs.existsSync(main)) sources.push(...parseSourcesList(fs.readFileSync(main, 'utf8')));
  const dropIns = path.join(aptDir, 'sources.list.d');
  const names = fs.existsSync(dropIns) ? fs.readdirSync(dropIns).sort() : [];
  for (const name of names) {
    const file = path.join(dropIns, name);
    if (name.endsWith('.sources')) sources.push(...parseDeb822(fs.readFileSync(file, 'utf8')));
    else if (name.endsWith('.list')) sources.push(...parseSourcesList(fs.readFileSync(file, 'utf8')));
  }
  const usable = sources.filter((s) => /^(https?|ftp|file):/.test(s.uri) && s.components.includes('main'));
  // Failing an exact match, the mirror behind this Debian host's own release carries the other releases too.
  const match =
    usable.find((s) => s.suites.includes(suite)) ??
    (codename ? usable.find((s) => s.suites.includes(codename)) : undefined);
  if (!match)
    throw new Error(
      `no apt source for Debian ${suite} (main) in ${main} or ${dropIns}; add one, e.g. a "deb MIRROR ${suite} main" line`,
    );
  return match.uri.replace(/\/+$/, '');
}
