// The jail a stdio MCP server runs in on the tools worker: bubblewrap, as an unprivileged user of its own,
// in new PID, mount, IPC, UTS and cgroup namespaces. It sees the system's programs and libraries read-only,
// the files its command line names, a private /tmp as its home, and nothing else of the host: no /proc of
// the worker, no DATA_DIR (keys, vaults, archive), no /run or /var (the Docker socket), no home directories
// beyond the files named.
// The network is shared: MCP servers exist to reach services.
import fs from 'node:fs';
import path from 'node:path';
import { onPath } from '../host/which';
import type { McpServer } from '../session/agent';
import { PlatformError } from '../session/platform-error';

type StdioServer = Extract<McpServer, { transport: 'stdio' }>;

export interface JailOptions {
  /** Absolute path of bwrap. */
  bwrap: string;
  /** Absolute path of setpriv, to drop from root to `uid` before bwrap runs; unused when not root. */
  setpriv?: string;
  /** The unprivileged host user the server runs as when the worker is root (default nobody). */
  uid: number;
  gid: number;
  /** Host paths the server must never see even inside a tree its command names (DATA_DIR, sockets). */
  hidden: string[];
}

export class JailError extends PlatformError {}

const SYSTEM_DIRS = ['/usr', '/etc', '/opt'];
const TOP_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Never visible: the Docker sockets and the project's runtime directory live under these. */
const ALWAYS_HIDDEN = ['/run', '/var/run', '/var/lib/docker', '/var/lib/managed-agents-docker', '/proc', '/sys'];
export const NOBODY = 65534;

/** Where setup installs bwrap, and setpriv from util-linux; undefined when bwrap is missing. */
export function findJail(hidden: string[]): JailOptions | undefined {
  const dirs = ['/usr/bin', '/bin', '/usr/sbin', '/sbin'];
  const bwrap = onPath('bwrap', dirs);
  if (!bwrap) return undefined;
  return { bwrap, setpriv: onPath('setpriv', dirs), uid: NOBODY, gid: NOBODY, hidden };
}

const within = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** Absolute paths named by the command line and by path-like environment values (NODE_PATH, PYTHONPATH). */
function namedPaths(server: StdioServer): string[] {
  const candidates = [server.command, ...server.args, ...Object.values(server.env).flatMap((v) => v.split(':'))];
  const out = new Set<string>();
  for (const c of candidates) {
    const m = /^(?:--?[\w-]+=)?(\/[^\0]*)$/.exec(c);
    if (!m) continue;
    const p = path.normalize(m[1]);
    if (fs.existsSync(p)) out.add(p);
  }
  return [...out];
}

/** The host command and arguments that run `server` inside the jail. */
export function jailedCommand(server: StdioServer, opts: JailOptions): { command: string; args: string[] } {
  const hidden = [...ALWAYS_HIDDEN, ...opts.hidden].map((h) => path.resolve(h));
  const args = ['--unshare-all', '--share-net', '--die-with-parent', '--new-session', '--cap-drop', 'ALL'];
  for (const dir of SYSTEM_DIRS) if (fs.existsSync(dir)) args.push('--ro-bind', dir, dir);
  for (const link of TOP_LINKS) {
    let target: string | undefined;
    try {
      target = fs.readlinkSync(link);
    } catch {
      if (fs.existsSync(link)) args.push('--ro-bind', link, link);
      continue;
    }
    args.push('--symlink', target, link);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  const binds: string[] = [];
  for (const p of namedPaths(server)) {
    if (SYSTEM_DIRS.some((d) => within(p, d))) continue;
    if (p === '/' || hidden.some((h) => within(p, h))) {
      throw new JailError(
        `the stdio MCP server's command line names ${p}, which its jail keeps hidden (DATA_DIR, /run, /var/run, /proc, /sys)`,
      );
    }
    binds.push(p);
  }
  for (const p of binds) args.push('--ro-bind', p, p);
  // A named tree that holds a hidden path (a repository with DATA_DIR inside it) gets that path masked.
  for (const h of hidden) {
    if (!binds.some((b) => within(h, b)) || !fs.existsSync(h)) continue;
    if (fs.statSync(h).isDirectory()) args.push('--tmpfs', h);
    else args.push('--ro-bind', '/dev/null', h);
  }
  args.push(
    '--setenv',
    'HOME',
    '/tmp',
    '--setenv',
    'TMPDIR',
    '/tmp',
    '--unsetenv',
    'LOGNAME',
    '--unsetenv',
    'USER',
    '--chdir',
    '/tmp',
    '--',
    server.command,
    ...server.args,
  );
  if (process.getuid?.() === 0) {
    if (!opts.setpriv)
      throw new JailError(
        'the tools worker runs as root, and setpriv (util-linux) is not installed to drop to an unprivileged user for stdio MCP servers',
      );
    return {
      command: opts.setpriv,
      args: [
        `--reuid=${opts.uid}`,
        `--regid=${opts.gid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--',
        opts.bwrap,
        ...args,
      ],
    };
  }
  return { command: opts.bwrap, args };
}
