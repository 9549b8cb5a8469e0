// Hands under faults: activity retries never repeat a command, a dead hands host becomes a tool error,
// and the reaper removes containers nobody owns any more.
import { MockActivityEnvironment } from '@temporalio/testing';
import type Docker from 'dockerode';
import { createHandsActivities, type ExecuteInput, type ToolOutput } from '../src/hands/hands-activities';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { reapOrphans } from '../src/sandbox/reaper';
import { SandboxRecipeSchema } from '../src/session/agent';
import { endSignal } from '../src/session/contract';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { allEvents, startHarness, startSession, type Harness } from './helpers/env';
import { bash, docker, sessionContainers } from './helpers/hands';

let h: Harness;
let d: Docker;
let provider: DockerSandboxProvider;
const HOST = `test-faults-${process.pid}`;
const children: ChildWorker[] = [];

beforeAll(async () => {
  d = await docker();
  provider = new DockerSandboxProvider({ dockerHost: await resolveDockerHost(), defaultImage: sandboxImage() });
  h = await startHarness({ role: 'brain' });
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await h?.stop();
  const left = await d.listContainers({ all: true, filters: JSON.stringify({ label: ['managed-agents.host'] }) });
  await Promise.all(
    left
      .filter((c) => c.Labels['managed-agents.host'].startsWith(`test-faults-${process.pid}`))
      .map((c) => provider.destroy(c.Id)),
  );
});

async function handsWorker(hostId: string): Promise<ChildWorker> {
  const w = await spawnWorker(
    { TEMPORAL_ADDRESS: h.env.address, HANDS_HOST_ID: hostId, DOCKER_HOST: (await resolveDockerHost())! },
    'hands',
  );
  children.push(w);
  return w;
}

describe('execute is idempotent per tool_use id', () => {
  it('returns the recorded result when the activity is retried after the command completed', async () => {
    const sandbox = await provider.provision({
      sessionId: `idem-${process.pid}`,
      name: 'main',
      recipe: SandboxRecipeSchema.parse({}),
      hostId: HOST,
    });
    try {
      const activities = createHandsActivities({ provider, hostId: HOST });
      const mockEnv = new MockActivityEnvironment();
      const run = (i: ExecuteInput) => mockEnv.run(activities.execute, i) as Promise<ToolOutput>;
      const input: ExecuteInput = {
        sandboxId: sandbox.sandboxId,
        toolUseId: 'toolu_counter',
        tool: 'bash',
        input: { command: 'echo run >> counter; wc -l < counter' },
        timeoutSeconds: 30,
      };
      const first = await run(input);
      const retried = await run(input);
      expect(first.output).toBe('1\n[exit 0]');
      expect(retried).toEqual(first);
      // A retry that overlaps the first attempt waits for it instead of running the command again.
      const slow = {
        ...input,
        toolUseId: 'toolu_slow',
        input: { command: 'sleep 1; echo run >> counter; wc -l < counter' },
      };
      const [a, b] = await Promise.all([run(slow), run(slow)]);
      expect(a.output).toBe('2\n[exit 0]');
      expect(b).toEqual(a);
      const check = await run({ ...input, toolUseId: 'toolu_check', input: { command: 'cat counter' } });
      expect(check.output).toBe('run\nrun\n[exit 0]');
    } finally {
      await provider.destroy(sandbox.sandboxId);
    }
  });
});

describe('a hands host killed with SIGKILL during execute', () => {
  it('yields an infra tool error within the configured timeouts, and the session continues on another host', async () => {
    const first = await handsWorker(`${HOST}-a`);
    const handle = await startSession(h, {
      agent: { limits: { handsHeartbeatTimeoutMs: 2000, handsScheduleToStartMs: 3000 } },
    });
    expect((await bash(h, handle, 'echo up')).output).toBe('up\n[exit 0]');
    const result = await bash(h, handle, 'sleep 120', {
      timeoutMs: 60_000,
      during: async () => {
        await new Promise((r) => setTimeout(r, 500));
        await first.kill('SIGKILL');
      },
    });
    expect(result).toMatchObject({ isError: true, error: { kind: 'infra' } });
    expect(result.output).toMatch(/sandbox main was lost/);
    const lost = (await allEvents(handle)).find((e) => e.type === 'sandbox_lost');
    expect(lost).toMatchObject({ name: 'main' });
    const second = await handsWorker(`${HOST}-b`);
    const after = await bash(h, handle, 'echo still here');
    expect(after.output).toBe('still here\n[exit 0]');
    const provisioned = (await allEvents(handle)).filter((e) => e.type === 'sandbox_provisioned');
    expect(provisioned.map((e) => e.type === 'sandbox_provisioned' && e.host)).toEqual([`${HOST}-a`, `${HOST}-b`]);
    await handle.signal(endSignal, {});
    await handle.result();
    await second.kill('SIGTERM');
  });
});

describe('the reaper', () => {
  it('removes the containers of sessions that are gone and keeps those of running sessions', async () => {
    const hostId = `${HOST}-reap`;
    const worker = await handsWorker(hostId);
    const live = await startSession(h);
    const dead = await startSession(h);
    await bash(h, live, 'true');
    await bash(h, dead, 'true');
    await dead.terminate('simulated crash that skipped cleanup');
    // A container of the live session that it no longer uses (e.g. left by a replaced sandbox).
    const stray = await provider.provision({
      sessionId: live.workflowId,
      name: 'old',
      recipe: SandboxRecipeSchema.parse({}),
      hostId,
    });
    // An orphan of a session that never existed on this server.
    const unknown = await provider.provision({
      sessionId: `never-${process.pid}`,
      name: 'main',
      recipe: SandboxRecipeSchema.parse({}),
      hostId,
    });
    const [deadContainer] = await sessionContainers(d, dead.workflowId);
    const [liveContainer] = (await sessionContainers(d, live.workflowId)).filter(
      (c) => c.Labels['managed-agents.sandbox'] === 'main',
    );

    const result = await reapOrphans({ provider, client: h.env.client, hostId, graceMs: 0 });
    expect(result.removed.sort()).toEqual([deadContainer.Id, stray.sandboxId, unknown.sandboxId].sort());
    expect(await provider.health(deadContainer.Id)).toBe('missing');
    expect(await provider.health(liveContainer.Id)).toBe('running');
    expect((await bash(h, live, 'echo alive')).output).toBe('alive\n[exit 0]');
    await live.signal(endSignal, {});
    await live.result();
    await worker.kill('SIGTERM');
  });
});
