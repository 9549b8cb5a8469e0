// The worker image builds offline on the local engine, and a brain worker in it serves a session and passes the
// healthcheck docker-compose.yml gives it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { dockerEnv, resolveDockerHost } from '../src/infra/docker';
import { buildWorkerImage } from '../src/infra/worker-image';
import { ROOT, startHarness, startSession, turnDone, waitForEvents, type Harness } from './helpers/env';
import { TEST_CODEC_KEY } from './helpers/test-keys';

const exec = promisify(execFile);
const image = `managed-agents/worker:test-${process.pid}`;
const container = `ma-worker-image-test-${process.pid}`;
let dockerHost: string;
let h: Harness | undefined;
let secrets: string;

const docker = (args: string[]) => exec('docker', args, { env: dockerEnv(dockerHost), maxBuffer: 16 * 1024 * 1024 });
const compose = YAML.parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { command: string[]; healthcheck: { test: string[] } }>;
};

beforeAll(async () => {
  dockerHost = (await resolveDockerHost())!;
  secrets = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-image-secrets-'));
});
afterAll(async () => {
  await docker(['rm', '-f', container]).catch(() => undefined);
  await docker(['rmi', '-f', image]).catch(() => undefined);
  await h?.stop();
  fs.rmSync(secrets, { recursive: true, force: true });
});

it('builds from an image already on the engine, with no network, and runs the command line', async () => {
  const built = await buildWorkerImage(dockerHost, { image, log: () => undefined });
  expect(built.image).toBe(image);
  const inspect = JSON.parse((await docker(['image', 'inspect', image])).stdout) as [{ Config: { Env: string[]; User: string } }];
  expect(inspect[0].Config.Env).toEqual(expect.arrayContaining(['KEY_FILES=off', 'DATA_DIR=/var/lib/managed-agents']));
  expect(inspect[0].Config.User).toBe('1000');
  const help = await docker(['run', '--rm', '--network', 'none', image, '--help']);
  expect(help.stdout).toMatch(/^ {2}worker \[options\] /m);
  expect(help.stdout).toMatch(/^ {2}doctor \[options\] /m);
}, 600_000);

it("serves a session as compose's brain service and passes that service's healthcheck", async () => {
  h = await startHarness({ worker: false });
  fs.writeFileSync(path.join(secrets, 'codec_key'), TEST_CODEC_KEY, { mode: 0o444 });
  const brain = compose.services.brain;
  // The test's dev server and model server listen on loopback, so the container shares the host's network.
  await docker([
    'run', '-d', '--name', container, '--network', 'host', '--init',
    '-v', `${path.join(secrets, 'codec_key')}:/run/secrets/codec_key:ro`,
    '-e', 'CODEC_KEY_FILE=/run/secrets/codec_key',
    '-e', `TEMPORAL_ADDRESS=${h.env.address}`,
    '-e', `ANTHROPIC_BASE_URL=${h.mock.url}`,
    image, ...brain.command,
  ]);
  const deadline = Date.now() + 120_000;
  let logs = '';
  while (!/worker ready: brain/.test(logs)) {
    if (Date.now() > deadline) throw new Error(`brain not ready in its container; logs: ${logs}`);
    await new Promise((r) => setTimeout(r, 500));
    const l = await docker(['logs', container]);
    logs = l.stdout + l.stderr;
  }
  const [kind, ...healthcheck] = brain.healthcheck.test;
  expect(kind).toBe('CMD');
  const health = await docker(['exec', container, ...healthcheck, '--json']);
  const report = JSON.parse(health.stdout) as { ok: boolean; checks: { name: string; ok: boolean; detail: string }[] };
  expect(report.ok).toBe(true);
  expect(report.checks.find((c) => c.name === 'pollers')!.detail).toMatch(/agents \(workflow\): 1, agents \(activity\): 1/);

  const handle = await startSession(h, { message: { text: 'hello from the host' } });
  const events = await waitForEvents(handle, turnDone(0), 90_000);
  expect(events.map((e) => e.type)).toEqual(['session_started', 'user_message', 'assistant_message']);
  expect(JSON.stringify(h.mock.requests(handle.workflowId).map((r) => r.body))).toContain('hello from the host');
}, 300_000);
