// The stack the fault suite breaks on purpose: a Temporal dev server on a SQLite file (so it can be restarted),
// the local Messages API server, and a brain and a hands worker as child processes (so they can be SIGKILLed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { clientInterceptors } from '../../src/log/query-retry';
import { startDevServer, type DevServer } from '../../src/infra/temporal-cli';
import { resolveDockerHost, sandboxImage } from '../../src/host/docker-host';
import { restartProjectDaemon } from '../../src/infra/dockerd';
import { MockModelServer } from '../../src/dev/model-server';
import { DockerSandboxProvider, LABEL } from '../../src/sandbox/docker';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker';
import { freePort, temporalCliPath, testDataConverter } from '../helpers/env';
import { grpcInterceptors } from '../../src/temporal-connection';

export class FaultStack {
  server!: DevServer;
  client!: Client;
  mock = new MockModelServer();
  /** The brain workers; the fault matrix runs one, the soak several so a kill leaves one polling. */
  brains: ChildWorker[] = [];
  hands!: ChildWorker;
  provider!: DockerSandboxProvider;
  readonly hostId = `faults-${process.pid}`;
  private port = 0;
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-faults-'));

  constructor(private readonly brainCount = 1) {}

  get brain(): ChildWorker {
    return this.brains[0];
  }

  async start(): Promise<void> {
    this.port = await freePort();
    await this.startServer();
    // The model makes a tool call again when infrastructure lost it, so every cell can finish its task.
    this.mock.reissueLostTools = true;
    await this.mock.start();
    const connection = await Connection.connect({ address: this.address, interceptors: grpcInterceptors() });
    this.client = new Client({ connection, dataConverter: testDataConverter(), interceptors: clientInterceptors });
    const dockerHost = await resolveDockerHost();
    if (!dockerHost) throw new Error('no Docker engine: run `npm run setup`');
    this.provider = new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage() });
    for (let i = 0; i < this.brainCount; i++) this.brains.push(await this.spawn('brain'));
    this.hands = await this.spawn('hands');
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  private async startServer(): Promise<void> {
    this.server = await startDevServer({
      cli: temporalCliPath(),
      dbFile: path.join(this.dir, 'temporal.db'),
      port: this.port,
      headless: true,
    });
  }

  spawn(role: 'brain' | 'hands'): Promise<ChildWorker> {
    return spawnWorker(
      {
        TEMPORAL_ADDRESS: this.address,
        ANTHROPIC_BASE_URL: this.mock.url,
        ANTHROPIC_API_KEY: 'test-key',
        HANDS_HOST_ID: this.hostId,
      },
      role,
    );
  }

  /** SIGKILL, then a replacement started at once (a supervisor restarting the process). */
  async killBrain(i = 0): Promise<void> {
    await this.brains[i].kill('SIGKILL');
    this.brains[i] = await this.spawn('brain');
  }

  async killHands(): Promise<void> {
    await this.hands.kill('SIGKILL');
    this.hands = await this.spawn('hands');
  }

  /** Stops the dev server and starts it again on the same SQLite file and port. */
  async restartTemporal(): Promise<void> {
    await this.server.stop();
    await this.startServer();
  }

  async restartDocker(): Promise<void> {
    await restartProjectDaemon(() => undefined);
  }

  /** `docker kill` of the session's running containers; false if it had none. */
  async killSandbox(sessionId: string): Promise<boolean> {
    const mine = await this.provider.docker.listContainers({
      filters: JSON.stringify({ label: [`${LABEL.session}=${sessionId}`] }),
    });
    await Promise.all(
      mine.map((c) =>
        this.provider.docker
          .getContainer(c.Id)
          .kill()
          .catch(() => undefined),
      ),
    );
    return mine.length > 0;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.brains.map((b) => b.kill()), this.hands?.kill()].map((p) => p?.catch(() => undefined)));
    for (const sb of (await this.provider?.list(this.hostId).catch(() => [])) ?? [])
      await this.provider.destroy(sb.sandboxId).catch(() => undefined);
    await this.client?.connection.close().catch(() => undefined);
    await this.mock.stop();
    await this.server?.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
