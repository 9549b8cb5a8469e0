// Pause and resume by idling: a sandbox idle past its idleStopMinutes on hands host A is captured and removed from A
// with its volumes (`sandbox_paused`); A then goes away, and the next call provisions the sandbox on host B, which
// restores the snapshot before the call runs (`sandbox_rescheduling`, `workspace_restored`), with the same files,
// and puts back the home directory the pause kept (without ~/.cache).
import type Docker from 'dockerode';
import { endSignal, statusQuery } from '../src/session/contract';
import { LABEL } from '../src/sandbox/docker';
import { deleteSessionRows } from '../src/storage/repos/sessions-repo';
import { startApiOn, type TestApi } from './helpers/api';
import type { ChildWorker } from './helpers/child-worker';
import { allEvents, removeHostSandboxes, startHarness, startSession, type Harness } from './helpers/env';
import { bash, docker } from './helpers/hands';
import { spawnHandsHost, WORKSPACE_LISTING } from './helpers/hands-hosts';

const HOST = `pause-hosts-${process.pid}`;
let h: Harness;
let api: TestApi;
let d: Docker;
const children: ChildWorker[] = [];

beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'brain' });
  // The API's PostgreSQL database, where the hands hosts keep snapshots.
  api = await startApiOn(h);
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await api?.stop();
  await h?.stop();
  for (const host of [`${HOST}-a`, `${HOST}-b`]) await removeHostSandboxes(host).catch(() => undefined);
});

const handsHost = (hostId: string) =>
  spawnHandsHost({ address: h.env.address, databaseUrl: api.databaseUrl!, hostId }, children);

const onHost = async (sessionId: string, host: string) => ({
  containers: await d.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${LABEL.session}=${sessionId}`, `${LABEL.host}=${host}`] }),
  }),
  volumes:
    (await d.listVolumes({ filters: JSON.stringify({ label: [`${LABEL.session}=${sessionId}`] }) })).Volumes ?? [],
});

it('pauses an idle sandbox, freeing its host, and resumes it on another host with the same files', async () => {
  const hostA = await handsHost(`${HOST}-a`);
  const handle = await startSession(h, { agent: { sandboxes: { main: { idleStopMinutes: 0.05 } } } });
  const sessionId = handle.workflowId;
  const wrote = await bash(
    h,
    handle,
    [
      'mkdir -p src/deep notes',
      'head -c 1500000 /dev/urandom > data.bin',
      'printf "#!/bin/sh\\necho hi\\n" > src/run.sh && chmod 755 src/run.sh',
      'for i in $(seq 1 12); do echo "note $i" > notes/n$i.md; done',
      'ln -s ../notes/n1.md src/first-note',
      // The home directory: a user-level install and a note are kept across the pause, the cache is not.
      'mkdir -p ~/.local/bin ~/.cache/pip',
      'printf "#!/bin/sh\\necho from-home\\n" > ~/.local/bin/mytool && chmod 750 ~/.local/bin/mytool',
      'echo kept > ~/note.txt && head -c 200000 /dev/urandom > ~/.cache/pip/wheel',
      WORKSPACE_LISTING,
    ].join(' && '),
    { timeoutMs: 120_000 },
  );
  const listing = wrote.output.replace(/\n\[exit 0\]$/, '');
  expect(listing.split('\n')).toHaveLength(15);
  const [container] = await d.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${LABEL.session}=${sessionId}`] }),
  });
  expect(container.Labels[LABEL.host]).toBe(`${HOST}-a`);

  // Idle past its 3 s: paused, and gone from host A with its volumes.
  const deadline = Date.now() + 90_000;
  while ((await handle.query(statusQuery)).sandboxes[0]?.state !== 'paused') {
    if (Date.now() > deadline) throw new Error('the idle sandbox was not paused');
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(await onHost(sessionId, `${HOST}-a`)).toEqual({ containers: [], volumes: [] });
  const paused = (await allEvents(handle)).filter((e) => e.type === 'sandbox_paused');
  expect(paused).toEqual([
    expect.objectContaining({ name: 'main', sandboxId: container.Id, snapshotSeq: expect.any(Number) }),
  ]);
  const snapshotSeq = paused[0].type === 'sandbox_paused' ? paused[0].snapshotSeq : 0;
  expect(snapshotSeq).toBeGreaterThan(0);

  // Host A goes; the next call resumes the sandbox on host B.
  await hostA.kill('SIGKILL');
  await handsHost(`${HOST}-b`);
  const after = await bash(h, handle, WORKSPACE_LISTING, { timeoutMs: 120_000 });
  const [note, ...rest] = after.output.split('\n\n[workspace restored').reverse();
  expect(rest).toHaveLength(1);
  expect(`${rest[0]}`).toBe(`${listing}\n[exit 0]`);
  expect(note).toMatch(
    new RegExp(
      `^ on host ${HOST}-b from snapshot ${snapshotSeq} \\(taken \\d+ (s|min) ago, 15 files, \\d+ bytes\\): the sandbox was paused while idle and resumed here; its home directory put back \\(\\d+ bytes, kept \\d+ (s|min) ago, without ~/\\.cache\\); its processes were not kept\\]$`,
    ),
  );
  const home = await bash(
    h,
    handle,
    'cat ~/note.txt && ~/.local/bin/mytool && stat -c "%u %a" ~/.local/bin/mytool && { [ -e ~/.cache/pip/wheel ] && echo cached || echo no-cache; }',
  );
  expect(home.output).toBe('kept\nfrom-home\n1000 750\nno-cache\n[exit 0]');
  const events = await allEvents(handle);
  const tail = events.slice(events.findIndex((e) => e.type === 'sandbox_paused'));
  expect(tail.filter((e) => e.type.startsWith('sandbox_') || e.type.startsWith('workspace_'))).toEqual([
    expect.objectContaining({ type: 'sandbox_paused' }),
    expect.objectContaining({ type: 'sandbox_rescheduling', name: 'main', reason: 'paused' }),
    expect.objectContaining({ type: 'sandbox_provisioned', name: 'main', host: `${HOST}-b`, resumed: false }),
    expect.objectContaining({ type: 'workspace_restored', name: 'main', host: `${HOST}-b`, snapshotSeq, files: 15 }),
  ]);
  // The kept home is sealed in the API's database, and goes with the session's rows.
  const rows = async () =>
    (
      await api.db!.query<{ data: string }>(
        "select encode(data, 'escape') as data from sandbox_home_chunks where session_id = $1",
        [sessionId],
      )
    ).map((r) => r.data);
  expect((await rows()).length).toBeGreaterThan(0);
  expect((await rows()).join('')).not.toContain('from-home');
  await handle.signal(endSignal, {});
  await handle.result();
  await deleteSessionRows(api.db!, sessionId);
  expect(await rows()).toEqual([]);
  expect(await api.db!.query('select 1 from sandbox_homes where session_id = $1', [sessionId])).toEqual([]);
}, 300_000);
