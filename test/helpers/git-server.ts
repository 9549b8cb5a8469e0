// A real authenticated git HTTP server on loopback: `git http-backend` behind a token check.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

export interface GitServer {
  url: string;
  root: string;
  /** Tokens the server accepts right now; remove one to make it expired. */
  tokens: Set<string>;
  /** Every Authorization header and URL the server saw, to prove what reached it. */
  seen: string[];
  createRepo(name: string, files: Record<string, string>, branch?: string): string;
  /** Someone else's commit of `files` on `branch`, pushed straight into the repository on disk. */
  commitUpstream(repo: string, files: Record<string, string>, message: string, branch?: string): void;
  git(repo: string, ...args: string[]): string;
  stop(): Promise<void>;
}

function tokenOf(auth: string | undefined): string | undefined {
  if (!auth) return undefined;
  const [scheme, value] = auth.split(' ');
  if (scheme === 'Bearer') return value;
  if (scheme === 'Basic')
    return Buffer.from(value ?? '', 'base64')
      .toString('utf8')
      .split(':')
      .slice(1)
      .join(':');
  return undefined;
}

export async function startGitServer(tokens: string[]): Promise<GitServer> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-git-'));
  const accepted = new Set(tokens);
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    const token = tokenOf(req.headers.authorization);
    if (!token || !accepted.has(token)) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' });
      res.end('authentication required\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://git');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REMOTE_USER: 'agent',
        REQUEST_METHOD: req.method,
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        CONTENT_LENGTH: req.headers['content-length'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const i = line.indexOf(':');
        const key = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (key.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else res.setHeader(key, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const git = (repo: string, ...args: string[]) =>
    execFileSync(
      'git',
      ['-C', path.join(root, repo), '-c', 'user.name=upstream', '-c', 'user.email=up@example.com', ...args],
      { encoding: 'utf8' },
    );
  return {
    url: `http://127.0.0.1:${port}`,
    root,
    tokens: accepted,
    seen,
    git,
    createRepo(name, files, branch = 'main') {
      const work = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-git-work-'));
      const w = (...args: string[]) =>
        execFileSync('git', ['-C', work, '-c', 'user.name=upstream', '-c', 'user.email=up@example.com', ...args]);
      w('init', '--quiet', '--initial-branch', branch);
      for (const [f, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(work, f)), { recursive: true });
        fs.writeFileSync(path.join(work, f), content);
      }
      w('add', '.');
      w('commit', '--quiet', '-m', 'initial');
      execFileSync('git', ['clone', '--quiet', '--bare', work, path.join(root, name)]);
      execFileSync('git', ['-C', path.join(root, name), 'config', 'http.receivepack', 'true']);
      fs.rmSync(work, { recursive: true, force: true });
      return `http://127.0.0.1:${port}/${name}`;
    },
    commitUpstream(repo, files, message, branch = 'main') {
      const other = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-other-'));
      try {
        const g = (...args: string[]) =>
          execFileSync('git', ['-C', other, '-c', 'user.name=o', '-c', 'user.email=o@example.com', ...args]);
        execFileSync('git', ['clone', '--quiet', '--branch', branch, path.join(root, repo), other]);
        for (const [f, content] of Object.entries(files)) fs.writeFileSync(path.join(other, f), content);
        g('add', ...Object.keys(files));
        g('commit', '-qm', message);
        g('push', '--quiet', 'origin', branch);
      } finally {
        fs.rmSync(other, { recursive: true, force: true });
      }
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
