// Live previews across hosts. A brain worker and `agents api` run in a network namespace of their own (a host on a
// private network, as a compose service is), and the worker advertises its stream endpoint at the namespace's
// loopback address, which means nothing on this machine. `agents watch` here cannot reach that URL; given the
// API's URL and a key, it gets the model's tokens relayed by the API, and without them it follows the log only.
import Anthropic from '@anthropic-ai/sdk';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { MANAGED_AGENTS_BETA } from '../src/api/beta';
import { startDevServer, type DevServer } from '../src/infra/temporal-cli';
import { MockModelServer } from '../src/dev/model-server';
import { endSignal } from '../src/session/contract';
import { SessionEventSchema, type SessionEvent } from '../src/session/events';
import type { ChildWorker } from './helpers/child-worker';
import { runAgents, spawnAgents, type Line } from './helpers/cli';
import { freePort, ROOT, temporalCliPath, testDataConverter } from './helpers/env';
import { createNetns, spawnWorkerInNetns, tcpProbe, type Netns } from './helpers/netns';
import { grpcInterceptors } from '../src/temporal-connection';

let ns: Netns | undefined;
let server: DevServer | undefined;
let mock: MockModelServer | undefined;
let brain: ChildWorker | undefined;
let api: ChildProcess | undefined;
let connection: Connection | undefined;
let client: Client;
let temporalPort: number;
/** The worker's stream endpoint as it advertises it: the namespace's own loopback. */
let streamUrl: string;
let apiUrl: string;
const keys: Record<string, string> = {};
const dirs: string[] = [];

const tmp = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

/** Runs `agents api` inside the namespace and resolves with the URL it prints. */
function startApiInNetns(
  name: string,
  env: Record<string, string>,
  listen: string,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    'ip',
    ['netns', 'exec', name, process.execPath, path.join(ROOT, 'dist/client.js'), 'api', '--listen', listen, '--json'],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`agents api not listening within 60 s; stderr: ${stderr}`)),
      60_000,
    );
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (!line) return;
      clearTimeout(timer);
      resolve({ child, url: (JSON.parse(line) as { url: string }).url });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`agents api exited with ${code}; stderr: ${stderr}`));
    });
  });
}

beforeAll(async () => {
  ns = await createNetns({ name: `ma-relay-${process.pid}` });
  temporalPort = await freePort();
  // On all addresses: the namespace reaches it at this machine's end of the pair, the tests at 127.0.0.1.
  server = await startDevServer({ cli: temporalCliPath(), ip: '0.0.0.0', port: temporalPort, headless: true });
  mock = new MockModelServer();
  await mock.start(0, '0.0.0.0');
  connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}`, interceptors: grpcInterceptors() });
  client = new Client({ connection, namespace: 'default', dataConverter: testDataConverter() });

  // A port free on this machine's loopback too, so that here the advertised URL is refused rather than answered by something else.
  const streamPort = await freePort();
  brain = await spawnWorkerInNetns(
    ns.name,
    {
      TEMPORAL_ADDRESS: `${ns.hostIp}:${temporalPort}`,
      ANTHROPIC_API_KEY: undefined,
      ANTHROPIC_BASE_URL: `http://${ns.hostIp}:${new URL(mock.url).port}`,
      STREAM_LISTEN: `127.0.0.1:${streamPort}`,
      DATA_DIR: tmp('ma-relay-brain-'),
    },
    'brain',
  );
  streamUrl = `http://127.0.0.1:${streamPort}`;

  const apiDir = tmp('ma-relay-api-');
  // The embedded database belongs to the API process once it runs, so the keys are made first.
  for (const workspace of ['default', 'other']) {
    const r = await runAgents(`127.0.0.1:${temporalPort}`, ['api-keys', 'create', '--workspace', workspace, '--json'], {
      DATA_DIR: apiDir,
    });
    if (r.code !== 0) throw new Error(`api-keys create failed: ${r.stderr}`);
    keys[workspace] = (JSON.parse(r.stdout) as { key: string }).key;
  }
  const apiPort = await freePort();
  const started = await startApiInNetns(
    ns.name,
    { DATA_DIR: apiDir, TEMPORAL_ADDRESS: `${ns.hostIp}:${temporalPort}` },
    `0.0.0.0:${apiPort}`,
  );
  api = started.child;
  apiUrl = `http://${ns.nsIp}:${apiPort}`;
}, 240_000);

afterAll(async () => {
  const quietly = (p: Promise<unknown> | undefined) => p?.catch(() => undefined);
  if (api && api.exitCode === null && api.signalCode === null) {
    const exited = new Promise((resolve) => api!.once('exit', resolve));
    api.kill('SIGKILL');
    await exited;
  }
  await quietly(brain?.kill());
  await quietly(connection?.close());
  await quietly(mock?.stop());
  await quietly(server?.stop());
  await quietly(ns?.remove());
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

const sdk = (workspace = 'default') => new Anthropic({ baseURL: apiUrl, apiKey: keys[workspace], maxRetries: 0 });

async function newSession(): Promise<string> {
  const c = sdk();
  const agent = await c.beta.agents.create({ name: 'talker', model: 'claude-test' });
  const environment = await c.beta.environments.create({ name: `env-${agent.id}` });
  return (await c.beta.sessions.create({ agent: agent.id, environment_id: environment.id })).id;
}

interface Preview {
  type: 'stream' | 'delta';
  item: { kind: string; throughSeq?: number };
  worker?: string;
  text: string;
}

function parse(lines: Line[]): { events: SessionEvent[]; previews: Preview[]; order: string[] } {
  const events: SessionEvent[] = [];
  const previews: Preview[] = [];
  const order: string[] = [];
  for (const l of lines) {
    const o = JSON.parse(l.text) as { seq?: number; type: string };
    if (o.seq !== undefined) {
      events.push(SessionEventSchema.parse(o));
      order.push(`event:${o.type}`);
    } else {
      previews.push(o as Preview);
      order.push('preview');
    }
  }
  return { events, previews, order };
}

const textOf = (e: SessionEvent) =>
  e.type === 'assistant_message'
    ? e.content
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join('')
    : '';

describe('live previews relayed by the API', () => {
  it("puts the worker's advertised stream URL out of this machine's reach, and in the namespace's", async () => {
    expect(brain!.stderr()).toContain(`(stream ${streamUrl})`);
    const port = Number(new URL(streamUrl).port);
    expect(await tcpProbe('127.0.0.1', port, ns!.name)).toBe('connected');
    expect(await tcpProbe('127.0.0.1', port)).toBe('ECONNREFUSED');
  });

  it("shows the model's tokens through AGENTS_API_URL, and follows the log only without it", async () => {
    const id = await newSession();
    const reply = Array.from({ length: 16 }, (_, i) => `tok${i}`).join(' ');
    mock!.script(id, { steps: [{ reply: { content: [{ type: 'text', text: reply }] }, chunkDelayMs: 150 }] });
    const address = `127.0.0.1:${temporalPort}`;
    const relayed = spawnAgents(address, ['watch', id, '--json'], {
      AGENTS_API_URL: apiUrl,
      AGENTS_API_KEY: keys.default,
    });
    const direct = spawnAgents(address, ['watch', id, '--json']);
    await relayed.waitFor((l) => l.text.includes('"session_started"'));
    await direct.waitFor((l) => l.text.includes('"session_started"'));

    await sdk().beta.sessions.events.send(id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'talk slowly' }] }],
    });
    await relayed.waitFor((l) => l.text.includes('"assistant_message"'), 60_000);
    await direct.waitFor((l) => l.text.includes('"assistant_message"'), 60_000);
    await client.workflow.getHandle(id).signal(endSignal, { reason: 'test over' });
    expect(await relayed.done).toBe(0);
    expect(await direct.done).toBe(0);

    const viaApi = parse(relayed.lines);
    const assistant = viaApi.events.find((e) => e.type === 'assistant_message')!;
    expect(textOf(assistant)).toBe(reply);
    const model = viaApi.previews.filter((p) => p.item.kind === 'model');
    // The reply came in many pieces, named as the worker whose URL this machine cannot reach, and all before its event.
    expect(model.length).toBeGreaterThan(3);
    expect(new Set(model.filter((p) => p.type === 'stream').map((p) => p.worker))).toEqual(new Set([streamUrl]));
    let text = '';
    for (const p of model) text = p.type === 'stream' ? p.text : text + p.text;
    expect(text).toBe(reply);
    expect(viaApi.order.lastIndexOf('preview')).toBeLessThan(viaApi.order.indexOf('event:assistant_message'));
    expect(relayed.stderr()).not.toContain('unavailable');

    // Straight to the worker, the stream is refused here; the log alone still brings every event.
    const alone = parse(direct.lines);
    expect(alone.previews).toEqual([]);
    expect(direct.stderr()).toContain(`live stream from ${streamUrl} unavailable (connect ECONNREFUSED`);
    expect(alone.events).toEqual(viaApi.events);
  });

  it('relays only to a key of the session’s workspace', async () => {
    const id = await newSession();
    const at = `${apiUrl}/v1/sessions/${id}/stream`;
    const none = await fetch(at);
    expect(none.status).toBe(401);
    const beta = { 'anthropic-beta': MANAGED_AGENTS_BETA };
    const other = await fetch(at, { headers: { 'x-api-key': keys.other, ...beta } });
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
    const bad = await fetch(`${apiUrl}/v1/sessions/${'x'.repeat(300)}/stream`, {
      headers: { 'x-api-key': keys.default, ...beta },
    });
    expect(bad.status).toBe(400);

    // The CLI says so in one line and follows the log.
    const watcher = spawnAgents(`127.0.0.1:${temporalPort}`, ['watch', id, '--json'], {
      AGENTS_API_URL: apiUrl,
      AGENTS_API_KEY: keys.other,
    });
    await watcher.waitFor((l) => l.text.includes('"session_started"'));
    for (let i = 0; i < 200 && !watcher.stderr().includes('unavailable'); i++)
      await new Promise((r) => setTimeout(r, 50));
    await client.workflow.getHandle(id).signal(endSignal, { reason: 'test over' });
    expect(await watcher.done).toBe(0);
    expect(watcher.stderr()).toMatch(
      /live stream through the API at http:\/\/\S+ unavailable \(HTTP 404: session sesn_\w+ not found\): is AGENTS_API_KEY a key of the session’s workspace\?/,
    );

    // A URL without a key is refused before anything starts.
    const keyless = await runAgents(`127.0.0.1:${temporalPort}`, ['watch', id], { AGENTS_API_URL: apiUrl });
    expect(keyless.code).not.toBe(0);
    expect(keyless.stderr).toMatch(/AGENTS_API_URL needs AGENTS_API_KEY/);
  });
});
