// Hand-off of hands: a sandbox passes between sessions with its files; the container stays on its host, the
// host's registry names the new owner, the old owner's calls are denied, and the reaper asks the registry.
import type Docker from 'dockerode';
import { loadConfig } from '../src/config';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { reapOrphans } from '../src/sandbox/reaper';
import { OwnershipRegistry } from '../src/sandbox/ownership';
import { childSessionId } from '../src/workflows/subagents';
import { endSignal, statusQuery } from '../src/session/contract';
import { expectOneLineError, runAgents } from './helpers/cli';
import { allEvents, startHarness, startSession, type Harness } from './helpers/env';
import { bash, callTool, docker, sessionContainers } from './helpers/hands';
import { ofType, resultOf, spawn, turn } from './helpers/subagents';

let h: Harness;
let d: Docker;
const HOST = `test-handoff-${process.pid}`;
beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'all', hostId: HOST });
});
afterAll(async () => {
  await h?.stop();
});

const registry = () => OwnershipRegistry.forHost(loadConfig().dataDir, HOST);

it('lends a sandbox to a child, which finds its files; the parent is denied meanwhile and gets it back after', async () => {
  const parent = await startSession(h, { agent: { tools: ['bash', 'spawn_agent'] } });
  await bash(h, parent, 'echo from-parent > keep.txt');
  const [container] = await sessionContainers(d, parent.workflowId);
  const childId = childSessionId(parent.workflowId, 'toolu_lend');
  const events = await turn(h, parent, [
    { type: 'tool_use', id: 'toolu_meanwhile', name: 'bash', input: { command: 'cat keep.txt' } },
    spawn('toolu_lend', { task: 'Run `cat keep.txt; echo from-child >> keep.txt`', sandboxes: ['main'] }),
  ]);
  expect(resultOf(events, 'toolu_meanwhile')).toMatchObject({
    isError: true,
    error: { kind: 'denied', message: expect.stringContaining(`was handed to session ${childId}`) },
  });
  expect(resultOf(events, 'toolu_lend')).toMatchObject({
    isError: false,
    output: expect.stringContaining('from-parent'),
  });
  expect(ofType(events, 'sandbox_handed_off')).toMatchObject([
    { name: 'main', sandboxId: container.Id, from: parent.workflowId, to: childId },
  ]);
  expect(ofType(events, 'sandbox_received')).toMatchObject([
    { name: 'main', sandboxId: container.Id, from: childId, host: HOST },
  ]);

  const childLog = await allEvents(h.env.client.workflow.getHandle(childId));
  expect(ofType(childLog, 'sandbox_received')).toMatchObject([
    { name: 'main', sandboxId: container.Id, from: parent.workflowId },
  ]);
  expect(ofType(childLog, 'sandbox_provisioned')).toEqual([]);
  expect(ofType(childLog, 'sandbox_handed_off')).toMatchObject([
    { sandboxId: container.Id, from: childId, to: parent.workflowId },
  ]);

  // Back with the parent: the same container, with the child's change in it.
  expect((await bash(h, parent, 'cat keep.txt')).output).toBe('from-parent\nfrom-child\n[exit 0]');
  expect((await sessionContainers(d, parent.workflowId)).map((c) => c.Id)).toEqual([container.Id]);
  expect(registry().get(container.Id)?.owner).toBe(parent.workflowId);
  await parent.signal(endSignal, {});
  await parent.result();
  expect(await sessionContainers(d, parent.workflowId)).toEqual([]);
});

it('hands a sandbox over with `agents handoff`: the files go along, the old owner is denied, and the reaper keeps it for the new owner', async () => {
  const tools = ['bash' as const, 'handoff_sandbox' as const];
  const a = await startSession(h, { agent: { tools } });
  const b = await startSession(h, { agent: { tools } });
  await bash(h, a, 'echo one > f.txt');
  const [container] = await sessionContainers(d, a.workflowId);

  const run = await runAgents(h.env.address, ['handoff', a.workflowId, 'main', b.workflowId]);
  expect(run.code).toBe(0);
  expect(run.stderr).toMatch(/now belongs to/);
  expect(registry().get(container.Id)?.owner).toBe(b.workflowId);
  expect(ofType(await allEvents(a), 'sandbox_handed_off')).toMatchObject([
    { name: 'main', sandboxId: container.Id, from: a.workflowId, to: b.workflowId },
  ]);
  expect(ofType(await allEvents(b), 'sandbox_received')).toMatchObject([
    { name: 'main', sandboxId: container.Id, from: a.workflowId },
  ]);

  expect((await bash(h, b, 'cat f.txt')).output).toBe('one\n[exit 0]');
  expect(ofType(await allEvents(b), 'sandbox_provisioned')).toEqual([]);
  const denied = await bash(h, a, 'cat f.txt');
  expect(denied).toMatchObject({ isError: true, error: { kind: 'denied' } });
  expect(denied.output).toMatch(
    new RegExp(`was handed to session ${b.workflowId}; this session \\(${a.workflowId}\\) may no longer use it`),
  );
  expect((await a.query(statusQuery)).sandboxes).toEqual([
    { name: 'main', sandboxId: container.Id, host: HOST, state: 'handed_off', handedTo: b.workflowId },
  ]);

  expectOneLineError(
    await runAgents(h.env.address, ['handoff', a.workflowId, 'main', b.workflowId]),
    /was handed to session .* already/,
  );
  expectOneLineError(
    await runAgents(h.env.address, ['handoff', a.workflowId, 'Main', b.workflowId]),
    /sandbox names are lowercase/,
  );

  // The labels still name `a`; with `a` ended, only the registry keeps the reaper off the container.
  await a.signal(endSignal, {});
  await a.result();
  const dockerHost = await resolveDockerHost();
  const provider = new DockerSandboxProvider({ dockerHost: dockerHost!, defaultImage: sandboxImage() });
  const reaped = await reapOrphans({ provider, client: h.env.client, hostId: HOST, registry: registry(), graceMs: 0 });
  expect(reaped.removed).not.toContain(container.Id);
  expect(await provider.health(container.Id)).toBe('running');

  // Handing it to a session that has ended fails, and the registry is put back.
  const back = await callTool(h, b, 'handoff_sandbox', { sandbox: 'main', to: a.workflowId });
  expect(back).toMatchObject({
    isError: true,
    output: expect.stringMatching(new RegExp(`session ${a.workflowId} could not take sandbox main`)),
  });
  expect(registry().get(container.Id)?.owner).toBe(b.workflowId);
  expect((await bash(h, b, 'cat f.txt')).output).toBe('one\n[exit 0]');

  await b.signal(endSignal, {});
  await b.result();
  expect(await provider.health(container.Id)).toBe('missing');
  expect(registry().get(container.Id)).toBeUndefined();
});
