// The compose stack, up on this machine with no registry: every image built locally (src/infra/compose-images.ts),
// brought up by Debian's docker-compose with docker-compose.yml and docker-compose.local.yml, brain and hands
// scaled to two.
// A session through the API (the real SDK) finishes across a brain container killed mid-turn and then the Temporal
// container killed mid-turn, each tool call made once. The model is the local Messages-API server, listening on
// the host's address on the stack's egress network, the only place the brains can reach it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Anthropic from '@anthropic-ai/sdk';
import { MockModelServer } from '../src/dev/model-server';
import { dockerEnv, resolveDockerHost } from '../src/host/docker-host';
import { buildComposeImages, type BuiltImage } from '../src/infra/compose-images';
import { writeApiSecrets, writeComposeSecrets } from '../src/infra/compose-secrets';
import { ensureTool } from '../src/infra/system-tools';
import { assertConformance, watchConformance } from './helpers/conformance';
import { ROOT, removeHostSandboxes } from './helpers/env';
import { eventsUntil, idles, sayTo, toolResultTexts, type ApiEvent } from './helpers/sdk-session';

const exec = promisify(execFile);
const PROJECT = `ma-compose-${process.pid}`;
const FILES = ['-f', 'docker-compose.yml', '-f', 'docker-compose.local.yml'];
const SERVICES = ['temporal', 'temporal-ui', 'codec-server', 'api', 'brain', 'hands', 'tools'];
/** What the test did and what the commands answered, written to TRANSCRIPT for docs/guide/compose.md. */
const TRANSCRIPT = path.join(ROOT, '.data', 'compose-run.txt');

let dockerHost: string;
let dir: string | undefined;
let env: NodeJS.ProcessEnv;
let mock: MockModelServer | undefined;
let client: Anthropic;
let unwatch: (() => void) | undefined;
let built: Record<string, BuiltImage>;
const began = Date.now();
const lines: string[] = [];

function note(text: string): void {
  const at = ((Date.now() - began) / 1000).toFixed(1).padStart(6);
  for (const l of text.trimEnd().split('\n')) lines.push(`[${at} s] ${l}`);
}

async function sh(cmd: string, args: string[], show = true): Promise<string> {
  if (show) note(`$ ${cmd} ${args.join(' ')}`);
  try {
    const r = await exec(cmd, args, { cwd: dir, env, maxBuffer: 32 * 1024 * 1024 });
    // docker-compose 1.x warns that it ignores `configs:`; docker-compose.local.yml mounts that file instead.
    const out = `${r.stdout}${r.stderr}`.replace(/^Some services \(temporal\) use the 'configs' key.*\n/m, '');
    if (show && out.trim()) note(out);
    return r.stdout;
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}
const compose = (args: string[], show = true) => sh('docker-compose', ['-p', PROJECT, ...FILES, ...args], show);
const docker = (args: string[], show = false) => sh('docker', args, show);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(1000)) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

interface Container {
  id: string;
  name: string;
  service: string;
  pid: number;
  health: string;
  restarts: number;
  ips: string[];
}

async function containers(): Promise<Container[]> {
  const ids = (await compose(['ps', '-q'], false)).split('\n').filter(Boolean);
  if (ids.length === 0) return [];
  const inspected = JSON.parse(await docker(['inspect', ...ids])) as {
    Id: string;
    Name: string;
    RestartCount: number;
    State: { Pid: number; Health?: { Status: string }; Status: string };
    Config: { Labels: Record<string, string> };
    NetworkSettings: { Networks: Record<string, { IPAddress: string }> };
  }[];
  return inspected.map((c) => ({
    id: c.Id,
    name: c.Name.replace(/^\//, ''),
    service: c.Config.Labels['com.docker.compose.service'],
    pid: c.State.Pid,
    health: c.State.Health?.Status ?? c.State.Status,
    restarts: c.RestartCount,
    ips: Object.values(c.NetworkSettings.Networks).map((n) => n.IPAddress),
  }));
}

/** Every container of the stack healthy, with `counts` of each service. */
function allHealthy(counts: Record<string, number>) {
  return async () => {
    const cs = await containers();
    const ok =
      Object.entries(counts).every(([s, n]) => cs.filter((c) => c.service === s).length === n) &&
      cs.every((c) => c.health === 'healthy');
    return ok ? cs : undefined;
  };
}
const STACK = { postgres: 1, temporal: 1, 'temporal-ui': 1, 'codec-server': 1, api: 1, brain: 2, hands: 2, tools: 1 };

/** SIGKILL to the container's first process, as a crash would: its restart policy brings it back. */
async function crash(c: Container): Promise<void> {
  note(`$ kill -9 ${c.pid}    # the first process of ${c.name}`);
  process.kill(c.pid, 'SIGKILL');
}

async function logsOnFailure<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const logs = await compose(['logs', '--no-color', '--tail', '40'], false).catch(() => '');
    (e as Error).message += `\n--- docker-compose logs (last 40 lines each) ---\n${logs.slice(-20_000)}`;
    throw e;
  }
}

beforeAll(async () => {
  dockerHost = (await resolveDockerHost())!;
  expect(dockerHost).toBeDefined();
  await ensureTool('docker-compose', 'docker-compose', () => undefined);
  const started = Date.now();
  built = await buildComposeImages(dockerHost, { log: () => undefined });
  note(
    `images (${Math.round((Date.now() - started) / 1000)} s): ${Object.values(built)
      .map((b) => `${b.image} ${b.action}${b.action === 'built' ? ` in ${b.seconds} s` : ''}`)
      .join(', ')}`,
  );

  // The project folder: the repository's compose files and dynamic config, and secrets of this run's own.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-compose-'));
  for (const f of ['docker-compose.yml', 'docker-compose.local.yml', 'deploy/temporal-dynamicconfig.yaml']) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, f), path.join(dir, f));
  }
  const secrets = path.join(dir, 'deploy', 'secrets');
  writeComposeSecrets(secrets, { ANTHROPIC_API_KEY: 'sk-ant-compose-test-not-a-key' });
  await writeApiSecrets(secrets);
  env = {
    ...dockerEnv(dockerHost),
    DOCKER_SOCKET: dockerHost.replace(/^unix:\/\//, ''),
    API_PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    CODEC_PORT: String(await freePort()),
  };

  await logsOnFailure(async () => {
    // Networks first: the model server listens on the host's address on the egress network.
    await compose(['up', '-d', 'postgres']);
    const gateway = (
      await docker(['network', 'inspect', `${PROJECT}_egress`, '--format', '{{(index .IPAM.Config 0).Gateway}}'])
    ).trim();
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    mock = new MockModelServer();
    env.ANTHROPIC_BASE_URL = await mock.start(0, gateway);
    note(`model server at ${env.ANTHROPIC_BASE_URL} (the egress network's gateway)`);
    await compose(['up', '-d', '--scale', 'brain=2', '--scale', 'hands=2', ...SERVICES]);
    const healthy = await until('every container healthy', 240_000, allHealthy(STACK));
    await compose(['ps']);
    expect(healthy).toHaveLength(10);
    // The Web UI, built here too, lists the namespace the Temporal image registered.
    const ui = await fetch(`http://127.0.0.1:${env.TEMPORAL_UI_PORT}/api/v1/namespaces`);
    expect(ui.status).toBe(200);
    const listed = (await ui.json()) as { namespaces: { namespaceInfo: { name: string } }[] };
    expect(listed.namespaces.map((n) => n.namespaceInfo.name)).toContain('default');
    note(`the Web UI lists namespaces: ${listed.namespaces.map((n) => n.namespaceInfo.name).join(', ')}`);
  });
  const created = await compose(
    ['exec', '-T', 'api', 'node', 'dist/client.js', 'api-keys', 'create', '--workspace', 'default', '--json'],
    false,
  );
  const key = (JSON.parse(created.trim().split('\n').pop()!) as { key: string }).key;
  // Every response of the stack's API is checked against the SDK's types, as for a test API.
  unwatch = watchConformance(`http://127.0.0.1:${env.API_PORT}`);
  client = new Anthropic({ apiKey: key, baseURL: `http://127.0.0.1:${env.API_PORT}`, maxRetries: 4 });
}, 900_000);

afterEach(assertConformance);
afterAll(async () => {
  unwatch?.();
  if (dir) {
    await compose(['down', '-v', '--remove-orphans', '--timeout', '5']).catch((e: Error) =>
      process.stderr.write(`compose down: ${e.message}\n`),
    );
    // Sandboxes are the hands workers' siblings on the engine, not part of the project.
    for (const n of [1, 2]) await removeHostSandboxes(`${PROJECT}-hands-${n}`).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  await mock?.stop();
  note(`total ${Math.round((Date.now() - began) / 1000)} s`);
  fs.mkdirSync(path.dirname(TRANSCRIPT), { recursive: true });
  fs.writeFileSync(TRANSCRIPT, `${lines.join('\n')}\n`);
}, 120_000);

it('runs a session through the API on the stack, which finishes across a brain and then Temporal killed mid-turn, each tool call once', async () => {
  await logsOnFailure(async () => {
    const environment = await client.beta.environments.create({ name: 'compose-env' });
    const agent = await client.beta.agents.create({
      name: 'compose',
      model: 'claude-haiku-5-5',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const session = await client.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
    note(`session ${session.id}`);
    const calls = () => mock!.requests(session.id).filter((r) => r.path === '/v1/messages');
    const step = (n: number) => `run \`echo step-${n} >> /workspace/steps.txt; cat /workspace/steps.txt\``;

    // Turn 1: the model call is held at a gate while the brain that made it is killed.
    mock!.script(session.id, { steps: [{ gate: 'brain' }] });
    await sayTo(client, session.id, step(1));
    const held = await until('the first model call', 60_000, async () => calls()[0]);
    const brains = (await containers()).filter((c) => c.service === 'brain');
    const caller = brains.find((c) => c.ips.includes(held.from!.replace(/^::ffff:/, '')));
    expect(caller).toBeDefined();
    note(`the first model call came from ${caller!.name}`);
    await crash(caller!);
    mock!.release('brain');
    const turn1 = await eventsUntil(client, session.id, idles(1), 1200);
    note(`turn 1 ended: ${JSON.stringify(toolResultTexts(turn1))}`);
    expect(toolResultTexts(turn1)).toEqual(['step-1\n[exit 0]']);
    // The call was made again, from the brain that was not killed.
    const retried = calls().find((r, i) => i > 0 && r.from !== held.from);
    expect(retried).toBeDefined();
    expect(JSON.stringify(retried!.body.messages)).toEqual(JSON.stringify(held.body.messages));

    // Turn 2: the model call is held while the Temporal container is killed; it restarts on its own.
    const temporal = (await containers()).find((c) => c.service === 'temporal')!;
    const before = calls().length;
    mock!.script(session.id, { steps: [{ gate: 'temporal' }] });
    await sayTo(client, session.id, step(2));
    await until("the second turn's model call", 60_000, async () => (calls().length > before ? true : undefined));
    await crash(temporal);
    await until('Temporal restarted', 60_000, async () => {
      const t = (await containers()).find((c) => c.service === 'temporal');
      return t && t.restarts > temporal.restarts && t.pid !== temporal.pid ? t : undefined;
    });
    note('temporal restarted by its restart policy');
    mock!.release('temporal');
    const events = await eventsUntil(client, session.id, idles(2), 1800);
    note(`turn 2 ended: ${JSON.stringify(toolResultTexts(events))}`);

    // Each step once: one tool call a turn, each run once (the file has each line once), each result once.
    expect(toolResultTexts(events)).toEqual(['step-1\n[exit 0]', 'step-1\nstep-2\n[exit 0]']);
    const uses = events.filter((e): e is Extract<ApiEvent, { type: 'agent.tool_use' }> => e.type === 'agent.tool_use');
    expect(uses.map((u) => (u.input as { command: string }).command)).toEqual([
      'echo step-1 >> /workspace/steps.txt; cat /workspace/steps.txt',
      'echo step-2 >> /workspace/steps.txt; cat /workspace/steps.txt',
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.filter((e) => e.type === 'user.message')).toHaveLength(2);
    const status = await client.beta.sessions.retrieve(session.id);
    expect(status.status).toBe('idle');
    note(`session ${session.id}: ${status.status}; events: ${events.map((e) => e.type).join(', ')}`);

    // The killed brain came back too, and the stack is whole again.
    const after = await until('every container healthy again', 180_000, allHealthy(STACK));
    expect(after.find((c) => c.name === caller!.name)!.restarts).toBeGreaterThan(caller!.restarts);
    await compose(['ps']);
  });
}, 600_000);
