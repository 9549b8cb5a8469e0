// The local stack behind `agents dev` and `npm start`: dev server, offline model server when no key, and workers.
import fs from 'node:fs';
import path from 'node:path';
import { EncryptionCodec, createDataConverter, parseCodecKeys } from '../codec';
import { CodecServer } from '../codec/codec-server';
import type { Config } from '../config';
import { MockModelServer } from './model-server';
import { startApiServer, type RunningApi } from '../api/server';
import { authenticate, createApiKey } from '../api/workspace-keys';
import type { Db } from '../storage/db';
import { installRuntime, startWorker, type RunningWorker } from '../worker';
import { ensureKeys } from '../key-files';
import { ensureTemporalCli, portInUse, startDevServer, type DevServer } from '../infra/temporal-cli';

export interface LocalStack {
  address: string;
  uiUrl?: string;
  modelUrl?: string;
  /** The codec endpoint the Web UI decodes encrypted histories with. */
  codecUrl: string;
  /** The Managed Agents API (`client.beta.*` with this baseURL), unless API_LISTEN was taken. */
  apiUrl?: string;
  worker: RunningWorker;
  stop(): Promise<void>;
}

export async function startLocalStack(config: Config, log: (m: string) => void): Promise<LocalStack> {
  const [host, portText] = config.TEMPORAL_ADDRESS.split(':');
  const port = Number(portText);
  // The Web UI sits on 8233 beside the default 7233, and 1000 above any other frontend port.
  const uiPort = port === 7233 ? 8233 : port + 1000;
  const keys = parseCodecKeys(ensureKeys(config.dataDir).codecKey);
  const codecServer = new CodecServer({
    codec: new EncryptionCodec(keys),
    origins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
    token: config.CODEC_SERVER_TOKEN,
    namespaces: [config.TEMPORAL_NAMESPACE],
    log,
  });
  const codecUrl = await codecServer.start();
  log(`history is encrypted; the Web UI decodes it through the codec server at ${codecUrl}`);
  let server: DevServer | undefined;
  let uiUrl: string | undefined;
  if (await portInUse(host, port)) {
    log(
      `a Temporal server already answers at ${config.TEMPORAL_ADDRESS}; using it (set its Web UI's codec endpoint to ${codecUrl} to read encrypted histories)`,
    );
    uiUrl = `http://localhost:${uiPort}`;
  } else {
    const cli = await ensureTemporalCli(log);
    const dbFile = path.join(config.dataDir, 'temporal.db');
    log(`starting the Temporal dev server (${cli.path}) with SQLite at ${dbFile}`);
    // The dev server's own services talk over loopback, so it binds loopback or every address, never one other address.
    const loopback = host === 'localhost' || host.startsWith('127.');
    if (!loopback) log(`TEMPORAL_ADDRESS names ${host}: the dev server listens on all addresses`);
    try {
      server = await startDevServer({
        cli: cli.path,
        dbFile,
        port,
        uiPort,
        uiCodecEndpoint: codecUrl,
        ip: loopback ? '127.0.0.1' : '0.0.0.0',
        logFile: path.join(config.dataDir, 'temporal.log'),
      });
    } catch (err) {
      await codecServer.stop();
      throw err;
    }
    uiUrl = server.uiUrl;
  }

  let mock: MockModelServer | undefined;
  let baseURL = config.ANTHROPIC_BASE_URL;
  if (!config.ANTHROPIC_API_KEY && !baseURL) {
    mock = new MockModelServer();
    baseURL = await mock.start();
    log(`no ANTHROPIC_API_KEY: using the local Messages API server at ${baseURL}`);
  }

  // The dev stack shares its terminal with the user: worker logs stay at warnings unless LOG_LEVEL says otherwise.
  installRuntime(process.env.LOG_LEVEL ? config.LOG_LEVEL : 'WARN');
  let worker: RunningWorker;
  // The embedded database is this process's API's alone; the workers here read the API's vaults and sessions'
  // repository tokens through it.
  let api: RunningApi | undefined;
  const apiDb = config.DATABASE_URL ? undefined : () => api?.db;
  try {
    worker = await startWorker({
      role: 'all',
      address: config.TEMPORAL_ADDRESS,
      namespace: config.TEMPORAL_NAMESPACE,
      apiKey: config.ANTHROPIC_API_KEY,
      baseURL,
      log,
      dataConverter: createDataConverter(keys),
      apiDb,
    });
  } catch (err) {
    await mock?.stop();
    await codecServer.stop();
    await server?.stop();
    throw err;
  }
  // The API is the front door, but a dev stack without it still runs sessions: a taken port is a warning.
  try {
    api = await startApiServer(config, log);
    const keyFile = await ensureDevApiKey(api.db, config.dataDir);
    log(
      `Managed Agents API at ${api.url}: new Anthropic({ baseURL: '${api.url}', apiKey }), with the key for workspace default in ${keyFile}; the console at ${api.url}/console`,
    );
  } catch (err) {
    log(
      `the Managed Agents API is not started: ${(err as Error).message.split('\n')[0]} (API_LISTEN=${config.API_LISTEN})`,
    );
  }
  return {
    address: config.TEMPORAL_ADDRESS,
    uiUrl,
    modelUrl: baseURL,
    codecUrl,
    ...(api ? { apiUrl: api.url } : {}),
    worker,
    async stop() {
      await api?.stop().catch(() => undefined);
      await worker.shutdown().catch(() => undefined);
      await mock?.stop();
      await codecServer.stop();
      await server?.stop();
    },
  };
}

/**
 * A key for workspace `default`, kept in DATA_DIR/api-key (mode 0600) so a local client can read it: the embedded
 * database is open in this process, so `agents api-keys create` cannot reach it while the stack runs. A key that
 * no longer authenticates (revoked, or the database was reset) is replaced.
 */
async function ensureDevApiKey(db: Db, dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'api-key');
  const kept = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '';
  if (kept && (await authenticate(db, kept))) return file;
  const { key } = await createApiKey(db, 'default');
  fs.writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return file;
}
