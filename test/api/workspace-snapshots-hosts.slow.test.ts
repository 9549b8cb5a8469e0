// A workspace that outlives its hands host: a session writes files on host A (an `agents worker --role hands`
// process reading the API's PostgreSQL); A is SIGKILLed and its containers and volumes removed; the next turn runs
// on host B, which restores the latest snapshot before the call, and sees every file byte for byte, with the
// restore named in the tool result.
import type Anthropic from '@anthropic-ai/sdk';
import type Docker from 'dockerode';
import { startApiOn, type TestApi } from '../helpers/api';
import { bashStep, doneStep, eventsUntil, sayTo, toolResultTexts, idles } from '../helpers/sdk-session';
import type { ChildWorker } from '../helpers/child-worker';
import { removeHostSandboxes, startHarness, type Harness } from '../helpers/env';
import { docker } from '../helpers/hands';
import type { PlatformEvent } from '../../src/api/sessions/projection';
import { spawnHandsHost, WORKSPACE_LISTING } from '../helpers/hands-hosts';

const HOST = `snap-hosts-${process.pid}`;
let h: Harness;
let api: TestApi;
let client: Anthropic;
let d: Docker;
const children: ChildWorker[] = [];

beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'brain' });
  api = await startApiOn(h);
  client = await api.client();
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await api?.stop();
  await h?.stop();
  for (const host of [`${HOST}-a`, `${HOST}-b`]) await removeHostSandboxes(host).catch(() => undefined);
});

const handsHost = (hostId: string) =>
  spawnHandsHost({ address: h.env.address, databaseUrl: api.databaseUrl!, hostId }, children);

it('restores the workspace of a session whose hands host was lost on the next host, byte for byte', async () => {
  const first = await handsHost(`${HOST}-a`);
  const agent = await client.beta.agents.create({
    name: 'writer',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const env = await client.beta.environments.create({ name: 'snap-hosts-env' });
  const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  h.mock.script(s.id, {
    steps: [
      bashStep(
        [
          'mkdir -p src/deep notes',
          'head -c 3000000 /dev/urandom > data.bin',
          'printf "#!/bin/sh\\necho hi\\n" > src/run.sh && chmod 755 src/run.sh',
          'for i in $(seq 1 30); do echo "note $i" > notes/n$i.md; done',
          'echo "half a refactor" > src/deep/wip.ts',
          'ln -s ../notes/n1.md src/first-note',
        ].join(' && '),
      ),
      bashStep(`echo "last edit" >> src/deep/wip.ts && ${WORKSPACE_LISTING}`),
      doneStep,
      // The first call of the next turn may go to the dead host and come back lost; the one after gets a new sandbox.
      bashStep(WORKSPACE_LISTING),
      bashStep(WORKSPACE_LISTING),
      doneStep,
    ],
  });
  await sayTo(client, s.id, 'write things');
  const firstTurn = toolResultTexts(await eventsUntil(client, s.id, idles(1), 1200));
  expect(firstTurn).toHaveLength(2);
  const listing = firstTurn[1].replace(/\n\[exit 0\]$/, '');
  expect(listing.split('\n')).toHaveLength(34);
  expect(listing).toContain('./src/run.sh f 755 ');
  expect(listing).toContain('./src/first-note l ../notes/n1.md');

  // Host A dies with its containers and volumes.
  await first.kill('SIGKILL');
  await removeHostSandboxes(`${HOST}-a`);
  expect(
    await d.listContainers({ all: true, filters: JSON.stringify({ label: [`managed-agents.host=${HOST}-a`] }) }),
  ).toEqual([]);
  expect(
    (await d.listVolumes({ filters: JSON.stringify({ label: [`managed-agents.host=${HOST}-a`] }) })).Volumes ?? [],
  ).toEqual([]);

  await handsHost(`${HOST}-b`);
  await sayTo(client, s.id, 'what is there?');
  const second = toolResultTexts(await eventsUntil(client, s.id, idles(2), 1200)).slice(2);
  const restored = second.filter((t) => t.includes('[workspace restored'));
  expect(restored).toHaveLength(1);
  expect(
    restored[0].startsWith(`${listing}\n[exit 0]\n\n[workspace restored on host ${HOST}-b from snapshot 2 (taken `),
  ).toBe(true);
  for (const t of second.filter((t) => t !== restored[0]))
    expect(t === `${listing}\n[exit 0]` || /sandbox main was lost/.test(t)).toBe(true);

  // The log holds the references: each snapshot's seq, size and chunks, and the restore.
  const platform: PlatformEvent[] = [];
  for await (const e of client.beta.sessions.events.list(s.id))
    if (e.type.startsWith('platform.workspace_')) platform.push(e as unknown as PlatformEvent);
  expect(platform).toEqual([
    expect.objectContaining({
      type: 'platform.workspace_snapshot',
      seq: 1,
      // 30 notes, run.sh and wip.ts one chunk each, data.bin three; the link none.
      files: 34,
      chunk_count: 35,
      new_chunks: 35,
    }),
    // The second call changed one file: one new chunk.
    expect.objectContaining({ type: 'platform.workspace_snapshot', seq: 2, files: 34, new_chunks: 1 }),
    expect.objectContaining({
      type: 'platform.workspace_restored',
      sandbox_name: 'main',
      seq: 2,
      files: 34,
      duration_ms: expect.any(Number),
    }),
  ]);

  // Deleting the session deletes its snapshots and their chunks.
  const count = async (table: string) =>
    (await api.db!.query<{ n: number }>(`select count(*)::int as n from ${table}`))[0].n;
  expect(await count('workspace_snapshots')).toBe(2);
  await client.beta.sessions.delete(s.id);
  for (const table of ['workspace_snapshots', 'snapshot_chunks', 'snapshot_chunk_refs'])
    expect(await count(table)).toBe(0);
}, 300_000);
