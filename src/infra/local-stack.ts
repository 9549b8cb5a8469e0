// The local stack behind `agents dev` and `npm start`: dev server, offline model server when no key, and workers.
import path from 'node:path';
import type { Config } from '../config';
import { MockModelServer } from '../model/mock-server';
import { startWorker, type RunningWorker } from '../worker';
import { ensureTemporalCli, portInUse, startDevServer, type DevServer } from './temporal-cli';

export interface LocalStack {
  address: string;
  uiUrl?: string;
  modelUrl?: string;
  worker: RunningWorker;
  stop(): Promise<void>;
}

export async function startLocalStack(config: Config, log: (m: string) => void): Promise<LocalStack> {
  const [host, portText] = config.TEMPORAL_ADDRESS.split(':');
  const port = Number(portText);
  let server: DevServer | undefined;
  let uiUrl: string | undefined;
  if (await portInUse(host, port)) {
    log(`a Temporal server already answers at ${config.TEMPORAL_ADDRESS}; using it`);
    uiUrl = `http://localhost:${port === 7233 ? 8233 : port + 1000}`;
  } else {
    const cli = ensureTemporalCli(log);
    const dbFile = path.join(config.dataDir, 'temporal.db');
    log(`starting the Temporal dev server (${cli.path}) with SQLite at ${dbFile}`);
    // The Web UI sits on 8233 beside the default 7233, and 1000 above any other frontend port.
    const uiPort = port === 7233 ? 8233 : port + 1000;
    // The dev server's own services talk over loopback, so it binds loopback or every address, never one other address.
    const loopback = host === 'localhost' || host.startsWith('127.');
    if (!loopback) log(`TEMPORAL_ADDRESS names ${host}: the dev server listens on all addresses`);
    server = await startDevServer({ cli: cli.path, dbFile, port, uiPort, ip: loopback ? '127.0.0.1' : '0.0.0.0', logFile: path.join(config.dataDir, 'temporal.log') });
    uiUrl = server.uiUrl;
  }

  let mock: MockModelServer | undefined;
  let baseURL = config.ANTHROPIC_BASE_URL;
  if (!config.ANTHROPIC_API_KEY && !baseURL) {
    mock = new MockModelServer();
    baseURL = await mock.start();
    log(`no ANTHROPIC_API_KEY: using the local Messages API server at ${baseURL}`);
  }

  let worker: RunningWorker;
  try {
    worker = await startWorker({ role: 'all', address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE, apiKey: config.ANTHROPIC_API_KEY, baseURL, log });
  } catch (err) {
    await mock?.stop();
    await server?.stop();
    throw err;
  }
  return {
    address: config.TEMPORAL_ADDRESS,
    uiUrl,
    modelUrl: baseURL,
    worker,
    async stop() {
      await worker.shutdown().catch(() => undefined);
      await mock?.stop();
      await server?.stop();
    },
  };
}
