// execute() against an engine that misbehaves: a proxy in front of the real Docker engine's socket holds back
// an exec's start, or keeps an exec's output stream open after the engine has closed it. Each attempt then fails
// within its bounds (src/sandbox/exec-guard.ts) instead of waiting forever, and the next attempt with the same
// key reads the command's record.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { EXEC_END_GRACE_MS, ExecStalledError } from '../src/sandbox/exec-guard';
import type { ExecRequest } from '../src/sandbox/provider';
import { SandboxRecipeSchema } from '../src/session/agent';

type Fault = 'none' | 'hold-start' | 'keep-open';

/** A proxy of the engine's socket that applies `fault` to the requests that start an exec. */
async function engineProxy(enginePath: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-guard-'));
  const socketPath = path.join(dir, 'engine.sock');
  const state = { fault: 'none' as Fault, held: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const engine = net.connect(enginePath);
    sockets.add(client).add(engine);
    let faulted: Fault = 'none';
    client.on('data', (chunk) => {
      // A request starts a chunk; one that starts an exec gets the fault in force.
      if (/^POST \S*\/exec\/[^/]+\/start /.test(chunk.toString('latin1', 0, 200))) faulted = state.fault;
      if (faulted === 'hold-start') {
        state.held++;
        return;
      }
      engine.write(chunk);
    });
    engine.on('data', (chunk) => client.write(chunk));
    // keep-open: the engine's end of the exec's stream never reaches the client.
    engine.on('end', () => faulted !== 'keep-open' && client.end());
    engine.on('error', () => client.destroy());
    client.on('end', () => engine.end());
    client.on('error', () => engine.destroy());
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  return {
    host: `unix://${socketPath}`,
    state,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let proxy: Awaited<ReturnType<typeof engineProxy>>;
let provider: DockerSandboxProvider;
let sandboxId: string;

beforeAll(async () => {
  const host = await resolveDockerHost();
  if (!host?.startsWith('unix://')) throw new Error('no Docker engine on a unix socket: run `npm run setup`');
  proxy = await engineProxy(host.slice('unix://'.length));
  provider = new DockerSandboxProvider({ dockerHost: proxy.host, defaultImage: sandboxImage(), runtime: 'runc' });
  sandboxId = (
    await provider.provision({
      sessionId: `exec-guard-${process.pid}`,
      name: 'main',
      recipe: SandboxRecipeSchema.parse({}),
      hostId: `test-exec-guard-${process.pid}`,
    })
  ).sandboxId;
}, 60_000);
afterAll(async () => {
  proxy.state.fault = 'none';
  if (sandboxId) await provider.destroy(sandboxId);
  await proxy?.close();
});

const request = (key: string, script: string, timeoutSeconds = 1): ExecRequest => ({
  key,
  script,
  timeoutSeconds,
  maxOutputBytes: 4096,
});

it('gives up on an exec whose start the engine never answers, after the command timeout and its grace', async () => {
  proxy.state.fault = 'hold-start';
  const key = randomUUID();
  const started = Date.now();
  await expect(
    provider.execute(sandboxId, request(key, 'echo once >> /tmp/guard-a; cat /tmp/guard-a')),
  ).rejects.toThrow(ExecStalledError);
  expect(proxy.state.held).toBeGreaterThan(0);
  expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  proxy.state.fault = 'none';
  // The held start never ran the command: the next attempt with the key runs it, once.
  const r = await provider.execute(sandboxId, request(key, 'echo once >> /tmp/guard-a; cat /tmp/guard-a'));
  expect(r).toMatchObject({ output: 'once\n', exitCode: 0 });
}, 60_000);

it('gives up on a cancelled exec the engine does not end, soon after the kill', async () => {
  proxy.state.fault = 'hold-start';
  const abort = new AbortController();
  const call = provider.execute(sandboxId, request(randomUUID(), 'sleep 600', 600), abort.signal);
  call.catch(() => undefined);
  while (proxy.state.held === 0) await new Promise((r) => setTimeout(r, 50));
  const reason = new Error('the activity was cancelled');
  abort.abort(reason);
  await expect(call).rejects.toBe(reason);
  proxy.state.fault = 'none';
}, 60_000);

it(
  'gives up on an exec that ended while its output stream stays open; the retry reads the record',
  async () => {
    proxy.state.fault = 'keep-open';
    const key = randomUUID();
    const script = 'echo ran >> /tmp/guard-c; echo done';
    await expect(provider.execute(sandboxId, request(key, script, 600))).rejects.toThrow(
      /ended \(exit 0\) but its output stream stayed open/,
    );
    proxy.state.fault = 'none';
    const r = await provider.execute(sandboxId, request(key, script, 600));
    expect(r).toMatchObject({ output: 'done\n', exitCode: 0, replayed: true });
    expect((await provider.execute(sandboxId, request(randomUUID(), 'cat /tmp/guard-c'))).output).toBe('ran\n');
  },
  60_000 + EXEC_END_GRACE_MS,
);
