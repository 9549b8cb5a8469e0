// The worker image builds offline on the local engine, and a brain worker in it serves a session and passes the
// healthcheck docker-compose.yml gives it.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { dockerEnv, resolveDockerHost } from '../src/host/docker-host';
import { buildWorkerImage } from '../src/infra/worker-image';
import {
  ROOT,
  allEvents,
  removeHostSandboxes,
  startHarness,
  startSession,
  turnDone,
  waitForEvents,
  type Harness,
} from './helpers/env';
import { bash } from './helpers/hands';
import { TEST_CODEC_KEY } from './helpers/test-keys';

const exec = promisify(execFile);
const image = `managed-agents/worker:test-${process.pid}`;
const container = `ma-worker-image-test-${process.pid}`;
const containers: string[] = [];
const hostId = `image-test-${process.pid}`;
let dockerHost: string;
let h: Harness | undefined;
let secrets: string;

const docker = (args: string[]) => exec('docker', args, { env: dockerEnv(dockerHost), maxBuffer: 16 * 1024 * 1024 });
// As compose reads it with no variable set: `${NAME:-default}` is its default.
const composeText = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8').replace(/\$\{\w+:-([^}]*)\}/g, '$1');
const compose = YAML.parse(composeText, { merge: true }) as {
  services: Record<string, { command: string[]; healthcheck: { test: string[] } }>;
};

beforeAll(async () => {
  dockerHost = (await resolveDockerHost())!;
  secrets = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-image-secrets-'));
  fs.writeFileSync(path.join(secrets, 'codec_key'), TEST_CODEC_KEY, { mode: 0o444 });
});
afterAll(async () => {
  for (const c of containers) await docker(['rm', '-f', c]).catch(() => undefined);
  await removeHostSandboxes(hostId);
  await docker(['rmi', '-f', image]).catch(() => undefined);
  await h?.stop();
  fs.rmSync(secrets, { recursive: true, force: true });
});

it('builds from an image already on the engine, with no network, and runs the command line', async () => {
  const built = await buildWorkerImage(dockerHost, { image, log: () => undefined });
  expect(built.image).toBe(image);
  const inspect = JSON.parse((await docker(['image', 'inspect', image])).stdout) as [
    { Config: { Env: string[]; User: string } },
  ];
  expect(inspect[0].Config.Env).toEqual(expect.arrayContaining(['KEY_FILES=off', 'DATA_DIR=/var/lib/managed-agents']));
  expect(inspect[0].Config.User).toBe('1000');
  const help = await docker(['run', '--rm', '--network', 'none', image, '--help']);
  expect(help.stdout).toMatch(/^ {2}worker \[options\] /m);
  expect(help.stdout).toMatch(/^ {2}doctor \[options\] /m);
}, 600_000);

/** Runs a compose service's command from the image; workers on the host's network, since the test's servers listen on loopback. */
async function runService(
  name: 'brain' | 'hands' | 'codec-server',
  env: Record<string, string>,
  extra: string[] = [],
  ready = `worker ready: ${name}`,
): Promise<string> {
  const service = compose.services[name];
  const id = `${container}-${name}`;
  containers.push(id);
  const secretArgs = Object.values(env)
    .filter((v) => v.startsWith('/run/secrets/'))
    .flatMap((v) => ['-v', `${path.join(secrets, path.basename(v))}:${v}:ro`]);
  const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  // The codec server needs no network but its own loopback, where its healthcheck calls it.
  const network = name === 'codec-server' ? 'none' : 'host';
  await docker([
    'run',
    '-d',
    '--name',
    id,
    '--network',
    network,
    '--init',
    ...secretArgs,
    ...envArgs,
    ...extra,
    image,
    ...service.command,
  ]);
  const deadline = Date.now() + 120_000;
  let logs = '';
  while (!logs.includes(ready)) {
    if (Date.now() > deadline) throw new Error(`${name} not ready in its container; logs: ${logs}`);
    await new Promise((r) => setTimeout(r, 500));
    const l = await docker(['logs', id]);
    logs = l.stdout + l.stderr;
  }
  return id;
}

/** Runs the service's compose healthcheck inside its container. */
async function healthcheck(name: 'brain' | 'hands' | 'codec-server', id: string, extra: string[] = []) {
  const [kind, ...test] = compose.services[name].healthcheck.test;
  expect(kind).toBe('CMD');
  return docker(['exec', id, ...test, ...extra]);
}
const doctorReport = (r: { stdout: string }) =>
  JSON.parse(r.stdout) as { ok: boolean; checks: { name: string; ok: boolean; detail: string }[] };

it("serves a session as compose's brain and hands services, each passing its compose healthcheck", async () => {
  h = await startHarness({ worker: false });
  fs.writeFileSync(path.join(secrets, 'vault_key'), randomBytes(32).toString('base64'), { mode: 0o444 });
  const common = { TEMPORAL_ADDRESS: h.env.address, CODEC_KEY_FILE: '/run/secrets/codec_key' };
  const brain = await runService('brain', { ...common, ANTHROPIC_BASE_URL: h.mock.url });
  // As in compose: the engine's socket at /var/run/docker.sock, so the hands worker runs as root.
  const socket = dockerHost.replace(/^unix:\/\//, '');
  const hands = await runService(
    'hands',
    { ...common, VAULT_KEY_FILE: '/run/secrets/vault_key', HANDS_HOST_ID: hostId },
    ['--user', '0:0', '-v', `${socket}:/var/run/docker.sock`],
  );

  const brainHealth = doctorReport(await healthcheck('brain', brain, ['--json']));
  expect(brainHealth.ok).toBe(true);
  expect(brainHealth.checks.find((c) => c.name === 'pollers')!.detail).toMatch(
    /agents \(workflow\): 1, agents \(activity\): 1/,
  );
  const handsHealth = doctorReport(await healthcheck('hands', hands, ['--json']));
  expect(handsHealth.ok).toBe(true);
  expect(handsHealth.checks.map((c) => c.name)).toEqual(['config', 'temporal', 'pollers', 'docker', 'sandbox-image']);
  expect(handsHealth.checks.find((c) => c.name === 'pollers')!.detail).toContain(`hands.${hostId} (activity): 1`);

  const handle = await startSession(h, { message: { text: 'hello from the host' } });
  const events = await waitForEvents(handle, turnDone(0), 90_000);
  expect(events.map((e) => e.type)).toEqual(['session_started', 'user_message', 'assistant_message']);
  expect(JSON.stringify(h.mock.requests(handle.workflowId).map((r) => r.body))).toContain('hello from the host');
  // A sandbox provisioned by the hands worker in its container, as a sibling on the host's engine.
  const result = await bash(h, handle, 'echo hello from $(whoami)');
  expect(result).toMatchObject({ output: 'hello from agent\n[exit 0]', isError: false });
  expect((await allEvents(handle)).find((e) => e.type === 'sandbox_provisioned')).toMatchObject({ host: hostId });
}, 300_000);

it("runs compose's codec server, whose healthcheck passes for the UI's origin", async () => {
  const id = await runService(
    'codec-server',
    { CODEC_KEY_FILE: '/run/secrets/codec_key' },
    [],
    'codec server at http://0.0.0.0:8234',
  );
  // The healthcheck exits non-zero (and docker exec rejects) unless the preflight from the UI's origin gets 204.
  await expect(healthcheck('codec-server', id)).resolves.toMatchObject({ stdout: '' });
});
