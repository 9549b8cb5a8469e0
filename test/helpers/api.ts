// A real API server for tests, on the project's PostgreSQL cluster (a fresh database per server) or the embedded
// default (a fresh DATA_DIR), with a vault key pair whose private half only the test holds, and SDK clients for it.
import Anthropic from '@anthropic-ai/sdk';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { spawn, type ChildProcess } from 'node:child_process';
import { startApiServer } from '../../src/api/server';
import type { Db } from '../../src/storage/db';
import type { SessionDeps } from '../../src/api/sessions/sessions';
import { runAgents } from './cli';
import { TEST_CODEC_KEY } from './test-keys';
import { ROOT, testArchive, type Harness } from './env';
import { ArchivedSessionLog, LiveSessionLog } from '../../src/log/session-log';
import { createApiKey } from '../../src/api/workspace-keys';
import { loadConfig } from '../../src/config';
import { ensurePostgres, withDatabase } from '../../src/infra/postgres-server';
import { vaultPublicKey } from '../../src/vault/sealed';
import { parseCodecKeys } from '../../src/codec';
import { assertConformance, watchConformance } from './conformance';

// Every response and event of a test API is checked against the SDK's types; a disagreement fails the test.
if (typeof afterEach === 'function') {
  afterEach(assertConformance);
  afterAll(assertConformance);
}

export type Storage = 'postgres' | 'embedded';
export const STORAGES: Storage[] = ['postgres', 'embedded'];

export interface TestApi {
  url: string;
  storage: Storage;
  /** The private half: what a tools worker would hold. */
  vaultKey: string;
  dataDir: string;
  databaseUrl?: string;
  /** The database itself, on PostgreSQL only (the embedded one belongs to the server process while it runs). */
  db?: Db;
  /** A key in `workspace`: one of the workspaces the server was started with. */
  key(workspace?: string): Promise<string>;
  /** An SDK client with a key in `workspace`. */
  client(workspace?: string): Promise<Anthropic>;
  stop(): Promise<void>;
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh database on the project's cluster; `drop` removes it. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const server = await ensurePostgres(() => undefined);
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(server.url, `create database ${name}`);
  return {
    url: withDatabase(server.url, name),
    drop: () => adminQuery(server.url, `drop database if exists ${name} with (force)`),
  };
}

const children = new Set<ChildProcess>();
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

/** `agents api` as a child process (PGlite runs outside jest's module sandbox, which cannot load it), its URL once it listens. */
async function spawnApi(env: Record<string, string>): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'api', '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve((JSON.parse(line) as { url: string }).url);
    });
    void exited.then(() => reject(new Error(`agents api exited before listening: ${stderr}`)));
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      children.delete(child);
    },
  };
}

/**
 * A server on `storage` whose keys may be in `workspaces`; on PostgreSQL, sessions run on `sessions` when given, and the
 * server's log lines go to `log`. The rate limit and the session quota are off unless `extraEnv` sets them.
 */
export async function startTestApi(
  storage: Storage,
  workspaces: string[] = ['default'],
  sessions?: SessionDeps,
  log: (m: string) => void = () => undefined,
  extraEnv: Record<string, string> = {},
): Promise<TestApi> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-api-'));
  const vaultKey = randomBytes(32).toString('base64');
  const pg = storage === 'postgres' ? await freshPostgresDatabase() : undefined;
  const cleanup = async () => {
    await pg?.drop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    KEY_FILES: 'off',
    CODEC_KEY: TEST_CODEC_KEY,
    // Without a test's own Temporal, sessions point nowhere: never at a dev server someone else runs on 7233.
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    VAULT_PUBLIC_KEY: await vaultPublicKey(vaultKey),
    API_LISTEN: '127.0.0.1:0',
    ...(pg ? { DATABASE_URL: pg.url } : {}),
    // The loopback servers a test opens to its tenants (the embedded server's child inherits it anyway).
    ...(process.env.EGRESS_ALLOW ? { EGRESS_ALLOW: process.env.EGRESS_ALLOW } : {}),
    API_RATE_LIMIT: 'off',
    API_SESSION_QUOTA: 'off',
    ...extraEnv,
  };
  const clientFor = (url: string) => async (key: string) => new Anthropic({ apiKey: key, baseURL: url, maxRetries: 0 });
  try {
    if (pg) {
      const api = await startApiServer(loadConfig(env), log, undefined, sessions);
      const unwatch = watchConformance(api.url);
      const key = async (workspace = 'default') => (await createApiKey(api.db, workspace)).key;
      return {
        url: api.url,
        storage,
        vaultKey,
        dataDir,
        databaseUrl: pg.url,
        db: api.db,
        key,
        client: async (workspace?: string) => clientFor(api.url)(await key(workspace)),
        stop: async () => {
          try {
            await api.stop();
          } finally {
            unwatch();
            await cleanup();
          }
        },
      };
    }
    const keys = new Map<string, string>();
    for (const w of workspaces) {
      const r = await runAgents('localhost:7233', ['api-keys', 'create', '--workspace', w, '--json'], env);
      if (r.code !== 0) throw new Error(`api-keys create failed: ${r.stderr}`);
      keys.set(w, (JSON.parse(r.stdout) as { key: string }).key);
    }
    const server = await spawnApi(env);
    const unwatch = watchConformance(server.url);
    const key = async (workspace = 'default') => {
      const k = keys.get(workspace);
      if (!k) throw new Error(`start the embedded test API with workspace ${workspace} in its list`);
      return k;
    };
    return {
      url: server.url,
      storage,
      vaultKey,
      dataDir,
      key,
      client: async (workspace?: string) => clientFor(server.url)(await key(workspace)),
      stop: async () => {
        try {
          await server.stop();
        } finally {
          unwatch();
          await cleanup();
        }
      },
    };
  } catch (e) {
    await cleanup();
    throw e;
  }
}

/** What a test API's sessions run on: `client`'s Temporal, the test archive, and the codec key (for the workers' streams and log push). */
export function testSessionDeps(client: import('@temporalio/client').Client): SessionDeps {
  const archive = testArchive();
  return {
    client,
    archive,
    log: new ArchivedSessionLog(archive, new LiveSessionLog(client)),
    streamKey: parseCodecKeys(TEST_CODEC_KEY).current.key,
  };
}

/** A test API on PostgreSQL whose sessions run on the harness's Temporal; the harness is stopped if it fails to start. */
export async function startApiOn(
  h: Harness,
  workspaces: string[] = ['default'],
  extraEnv: Record<string, string> = {},
): Promise<TestApi> {
  try {
    return await startTestApi('postgres', workspaces, testSessionDeps(h.env.client), undefined, extraEnv);
  } catch (e) {
    await h.stop();
    throw e;
  }
}
