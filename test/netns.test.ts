// The customer-VPC case: a hands worker in its own network namespace, able to reach only the Temporal frontend, serves a session's sandbox.
import net from 'node:net';
import os from 'node:os';
import type Docker from 'dockerode';
import { Client, Connection } from '@temporalio/client';
import { resolveDockerHost } from '../src/host/docker-host';
import { startDevServer, type DevServer } from '../src/infra/temporal-cli';
import { MockModelServer } from '../src/dev/model-server';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import type { RunningWorker } from '../src/worker';
import { sessionWorkflow } from '../src/workflows';
import { endSignal, statusQuery } from '../src/session/contract';
import type { ChildWorker } from './helpers/child-worker';
import {
  allEvents,
  freePort,
  startTestWorker,
  temporalCliPath,
  testAgent,
  testDataConverter,
  uniqueId,
  type Harness,
} from './helpers/env';
import { bash, docker, sessionContainers } from './helpers/hands';
import { createNetns, ip, spawnWorkerInNetns, tcpProbe, type Netns } from './helpers/netns';
import { grpcInterceptors } from '../src/temporal-connection';

const HOST_ID = `netns-host-${process.pid}`;

let ns: Netns | undefined;
let server: DevServer | undefined;
/** The frontend as the namespace sees it: this machine's end of the pair. */
let frontend: string;
let mock: MockModelServer | undefined;
let brain: RunningWorker | undefined;
let connection: Connection | undefined;
let client: Client;
let hands: ChildWorker | undefined;
let decoy: net.Server | undefined;
let d: Docker;

beforeAll(async () => {
  d = await docker();
  const dockerHost = await resolveDockerHost();
  // A unix socket is a file, so it is reachable from inside the namespace; a TCP engine would not be.
  if (!dockerHost?.startsWith('unix://'))
    throw new Error(`this test needs the Docker engine on a unix socket, not ${dockerHost}`);
  const port = await freePort();
  ns = await createNetns({ name: `ma-test-${process.pid}`, onlyTcpPort: port });
  // The dev server cannot bind one non-loopback address: its services then still dial each other on
  // 127.0.0.1 and every call fails. So it listens on all addresses, and the namespace's routing does the narrowing.
  server = await startDevServer({ cli: temporalCliPath(), ip: '0.0.0.0', port, headless: true });
  frontend = `${ns.hostIp}:${port}`;
  mock = new MockModelServer();
  await mock.start();
  brain = await startTestWorker(`127.0.0.1:${port}`, mock.url);
  connection = await Connection.connect({ address: `127.0.0.1:${port}`, interceptors: grpcInterceptors() });
  client = new Client({ connection, namespace: 'default', dataConverter: testDataConverter() });
  hands = await spawnWorkerInNetns(ns.name, {
    TEMPORAL_ADDRESS: frontend,
    HANDS_HOST_ID: HOST_ID,
    DOCKER_HOST: dockerHost,
    // Hands never talk to the model.
    ANTHROPIC_API_KEY: undefined,
    ANTHROPIC_BASE_URL: undefined,
  });
  // Something else listening on this machine's end of the pair, which the namespace must not reach.
  decoy = net.createServer((s) => s.end());
  await new Promise<void>((resolve, reject) => decoy!.once('error', reject).listen(0, ns!.hostIp, resolve));
}, 180_000);

afterAll(async () => {
  const quietly = (p: Promise<unknown> | undefined) => p?.catch(() => undefined);
  await quietly(hands?.kill());
  await quietly(brain?.shutdown());
  await quietly(connection?.close());
  await quietly(new Promise((resolve) => (decoy ? decoy.close(resolve) : resolve(undefined))));
  await quietly(mock?.stop());
  await quietly(server?.stop());
  await quietly(ns?.remove());
  // Anything a failed test left behind on this host.
  const left = await quietly(
    d?.listContainers({ all: true, filters: JSON.stringify({ label: [`managed-agents.host=${HOST_ID}`] }) }),
  );
  await Promise.all(
    ((left as Docker.ContainerInfo[] | undefined) ?? []).map((c) =>
      d
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
}, 60_000);

describe('a hands worker in its own network namespace', () => {
  it('runs inside the namespace, whose only network is its end of the veth pair', async () => {
    const { name, nsVeth, nsIp, hostIp, table } = ns!;
    expect((await ip('netns', 'identify', String(hands!.process.pid))).trim()).toBe(name);
    const addrs = (await ip('-n', name, '-o', 'addr', 'show'))
      .trim()
      .split('\n')
      .map((l) => l.split(/\s+/).slice(1, 4).join(' '));
    expect(addrs).toEqual(['lo inet 127.0.0.1/8', `${nsVeth} inet ${nsIp}/30`]);
    // No default route, nothing in the main table: one rule routes TCP to the frontend's port, and only that.
    expect((await ip('-n', name, 'route', 'show')).trim()).toBe('');
    expect((await ip('-n', name, 'route', 'show', 'table', String(table))).trim()).toBe(
      `${hostIp} dev ${nsVeth} scope link src ${nsIp}`,
    );
    const port = frontend.split(':')[1];
    expect((await ip('-n', name, 'rule', 'show', 'pref', '100')).trim()).toBe(
      `100:\tfrom all to ${hostIp} ipproto tcp dport ${port} lookup ${table}`,
    );
  });

  it('reaches the Temporal frontend and nothing else', async () => {
    const { name, hostIp } = ns!;
    const [host, port] = frontend.split(':');
    expect(await tcpProbe(host, Number(port), name)).toBe('connected');

    // Another service on this machine's end of the pair answers from here, but not from the namespace.
    const decoyPort = (decoy!.address() as net.AddressInfo).port;
    expect(await tcpProbe(hostIp, decoyPort)).toBe('connected');
    expect(await tcpProbe(hostIp, decoyPort, name)).toBe('ENETUNREACH');

    // The model server listens on this machine's loopback; the namespace has a loopback of its own.
    const mockPort = Number(new URL(mock!.url).port);
    expect(await tcpProbe('127.0.0.1', mockPort)).toBe('connected');
    expect(await tcpProbe('127.0.0.1', mockPort, name)).toBe('ECONNREFUSED');
    expect(await tcpProbe(hostIp, mockPort, name)).toBe('ENETUNREACH');

    // This machine's other addresses have no route, not even to the frontend's port; nor has the internet.
    const others = Object.values(os.networkInterfaces())
      .flat()
      .filter((a) => a && a.family === 'IPv4' && !a.internal && a.address !== hostIp)
      .map((a) => a!.address);
    for (const addr of others) expect([addr, await tcpProbe(addr, Number(port), name)]).toEqual([addr, 'ENETUNREACH']);
    expect(await tcpProbe('1.1.1.1', 443, name)).toBe('ENETUNREACH');
  });

  it("serves a session's sandbox, provisioned on its host and destroyed when the session ends", async () => {
    const handle = await client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: uniqueId('ses-netns'),
      args: [{ agent: testAgent() }],
    });
    // bash() needs only the model server from a harness.
    const h = { mock: mock! } as Pick<Harness, 'mock'> as Harness;
    const result = await bash(h, handle, 'echo served-from-netns; whoami; pwd');
    expect(result.output).toBe('served-from-netns\nagent\n/workspace\n[exit 0]');
    expect(result.isError).toBe(false);

    const provisioned = (await allEvents(handle)).filter((e) => e.type === 'sandbox_provisioned');
    expect(provisioned).toHaveLength(1);
    expect(provisioned[0]).toMatchObject({ name: 'main', host: HOST_ID, resumed: false });
    const containers = await sessionContainers(d, handle.workflowId);
    expect(containers).toHaveLength(1);
    expect(containers[0].Labels).toMatchObject({
      'managed-agents.session': handle.workflowId,
      'managed-agents.host': HOST_ID,
    });
    expect((await handle.query(statusQuery)).sandboxes).toEqual([
      { name: 'main', sandboxId: containers[0].Id, host: HOST_ID, state: 'running' },
    ]);

    await handle.signal(endSignal, {});
    await handle.result();
    expect(await sessionContainers(d, handle.workflowId)).toHaveLength(0);
    // The worker in the namespace is still up and polling.
    expect(hands!.process.exitCode).toBeNull();
  });
});
