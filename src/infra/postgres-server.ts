// A PostgreSQL server of the project's own for tests and local use: Debian's `postgresql` binaries, its own data
// directory under a cache dir outside the repo, listening only on loopback. The machine's system cluster is never used.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { withLock } from '../host/lock';
import { logTail, run, type Log } from '../host/run';
import { aptInstall, isRoot, systemPath } from './system-tools';

/** The loopback port the project's cluster listens on; `MANAGED_AGENTS_PG_PORT` moves it. */
export function postgresPort(): number {
  const raw = process.env.MANAGED_AGENTS_PG_PORT;
  return raw && /^\d{2,5}$/.test(raw) ? Number(raw) : 54329;
}

/**
 * Where the cluster lives. As root the server runs as the `postgres` user, which cannot enter root's home, so the
 * cache is the system one; otherwise it is the user's own.
 */
export function postgresDir(): string {
  if (process.env.MANAGED_AGENTS_PG_DIR) return process.env.MANAGED_AGENTS_PG_DIR;
  if (isRoot()) return '/var/cache/managed-agents/postgres';
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', 'postgres');
}

const BINARIES = ['initdb', 'pg_ctl', 'postgres'];

/** The newest installed server's bin directory (`/usr/lib/postgresql/<major>/bin`), if any. */
export function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  let majors: string[] = [];
  try {
    majors = fs.readdirSync(root).filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const major of majors.sort((a, b) => Number(b) - Number(a))) {
    const bin = path.join(root, major, 'bin');
    if (BINARIES.every((b) => fs.existsSync(path.join(bin, b)))) return bin;
  }
  return undefined;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

function postgresUser(): RunAs {
  if (!isRoot()) return {};
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line)
    throw new Error(
      'running as root, but there is no postgres user to run the server as (the postgresql package creates it)',
    );
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

async function canConnect(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface PostgresServer {
  /** A superuser connection URL to the `postgres` database. */
  url: string;
  action: 'running' | 'started' | 'initialised';
  dataDir: string;
}

/**
 * Ensures the project's cluster is up and returns its URL: installs Debian's `postgresql` if no server binaries are
 * found, creates the data directory once (password auth, the password in a 0600 file), and starts the server.
 */
export async function ensurePostgres(log: Log = (m) => process.stderr.write(`${m}\n`)): Promise<PostgresServer> {
  const dir = postgresDir();
  const dataDir = path.join(dir, 'data');
  const urlFile = path.join(dir, 'url');
  const existing = fs.existsSync(urlFile) ? fs.readFileSync(urlFile, 'utf8').trim() : undefined;
  if (existing && (await canConnect(existing))) return { url: existing, action: 'running', dataDir };

  return withLock('postgres', log, async () => {
    const again = fs.existsSync(urlFile) ? fs.readFileSync(urlFile, 'utf8').trim() : undefined;
    if (again && (await canConnect(again))) return { url: again, action: 'running', dataDir };

    let bin = findPostgresBin();
    if (!bin) {
      await aptInstall(['postgresql'], log);
      bin = findPostgresBin();
      if (!bin) throw new Error('installed postgresql, but found no server under /usr/lib/postgresql/*/bin');
    }
    const as = postgresUser();
    const env = { ...process.env, PATH: systemPath(), LC_ALL: 'C.UTF-8' };
    const runDir = path.join(dir, 'run');
    const logFile = path.join(dir, 'server.log');
    const passwordFile = path.join(dir, 'password');
    // The parents must stay traversable by the server's user; the cluster's own directory is closed.
    fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
    const own = (p: string) => as.uid !== undefined && fs.chownSync(p, as.uid, as.gid!);

    let action: PostgresServer['action'] = 'started';
    if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.writeFileSync(passwordFile, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
      own(dir);
      own(passwordFile);
      log(`initialising a cluster in ${dataDir} (${bin})`);
      const init = await run(
        path.join(bin, 'initdb'),
        [
          '-D',
          dataDir,
          '-U',
          'postgres',
          '--auth=scram-sha-256',
          `--pwfile=${passwordFile}`,
          '-E',
          'UTF8',
          '--no-locale',
        ],
        { env, ...as },
      );
      if (init.code !== 0) {
        logTail(log, init.output);
        throw new Error(`initdb failed (exit ${init.code}); its output ends above`);
      }
      action = 'initialised';
    }
    own(dir);
    own(runDir);
    const port = postgresPort();
    log(`starting PostgreSQL on 127.0.0.1:${port} (data ${dataDir}, log ${logFile})`);
    const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${runDir}`;
    const start = await run(
      path.join(bin, 'pg_ctl'),
      ['-D', dataDir, '-l', logFile, '-o', options, '-w', '-t', '60', 'start'],
      { env, ...as },
    );
    const password = fs.readFileSync(passwordFile, 'utf8').trim();
    const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
    if (start.code !== 0) {
      logTail(log, start.output);
      if (fs.existsSync(logFile)) logTail(log, fs.readFileSync(logFile, 'utf8'));
      throw new Error(`pg_ctl start failed (exit ${start.code}); see ${logFile}`);
    }
    for (let i = 0; i < 60 && !(await canConnect(url)); i++) await sleep(500);
    if (!(await canConnect(url)))
      throw new Error(`PostgreSQL started but does not accept connections on 127.0.0.1:${port}; see ${logFile}`);
    fs.writeFileSync(urlFile, `${url}\n`, { mode: 0o600 });
    return { url, action, dataDir };
  });
}

/** A URL like `url` naming another database on the same server. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
