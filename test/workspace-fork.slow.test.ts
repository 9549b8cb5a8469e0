// Fork with files (`agents fork --sandboxes`): a fork's sandbox starts from the source's workspace snapshot at or
// before the fork point, byte for byte, on real sandboxes (the Docker engine, gVisor where it has it), real
// Temporal and the API's PostgreSQL. The choice is carried to a new run; forks of forks go back along the chain;
// once a fork has restored, it no longer needs its source's snapshots; a snapshot that is gone makes the fork's
// provision fail naming it.
import type { WorkflowHandle } from '@temporalio/client';
import { forkSession, wakeSession } from '../src/session-ops';
import { deleteSessionSnapshots, listSessionSnapshots } from '../src/storage/repos/workspace-snapshots-repo';
import type { EventOf, SessionEvent } from '../src/session/events';
import { startApiOn, type TestApi } from './helpers/api';
import { bash } from './helpers/hands';
import {
  logOf,
  removeHostSandboxes,
  startHarness,
  startSession,
  startTestWorker,
  testArchive,
  waitForEvents,
  type Harness,
} from './helpers/env';
import type { RunningWorker } from '../src/worker';

const HOST = `fork-files-${process.pid}`;
let h: Harness;
let api: TestApi;
let hands: RunningWorker;
const sessions: string[] = [];

beforeAll(async () => {
  h = await startHarness({ role: 'brain' });
  api = await startApiOn(h);
  hands = await startTestWorker(h.env.address, h.mock.url, {
    role: 'hands',
    hostId: HOST,
    apiDb: () => api.db,
    reapIntervalMs: 0,
  });
}, 120_000);
afterAll(async () => {
  for (const id of sessions)
    await h?.env.client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => undefined);
  await hands?.shutdown().catch(() => undefined);
  await removeHostSandboxes(HOST).catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

/** Each file's mode, size and content hash, then the text file's content. */
const LISTING = 'for f in $(ls | sort); do stat -c "%n %a %s" "$f"; sha256sum < "$f"; done; cat note.txt';

const id = (p: string) => {
  const s = `${p}-${process.pid}-${sessions.length}`;
  sessions.push(s);
  return s;
};

const events = (handle: WorkflowHandle) => waitForEvents(handle, () => true);
const lastSeq = async (handle: WorkflowHandle) => (await events(handle)).at(-1)!.seq;
const restoredEvents = (ev: SessionEvent[]) =>
  ev.filter((e): e is EventOf<'workspace_restored'> => e.type === 'workspace_restored');

async function fork(source: WorkflowHandle, at: number, name: string) {
  const forkId = id(name);
  const r = await forkSession(h.env.client, testArchive(), logOf(source), {
    source: source.workflowId,
    at,
    id: forkId,
    sandboxes: true,
  });
  return { handle: h.env.client.workflow.getHandle(forkId), workspaces: r.workspaces };
}

it('gives a fork the workspace of the last snapshot at or before the fork point, byte for byte', async () => {
  const source = await startSession(h, { id: id('fork-src'), agent: { name: 'forker', tools: ['bash'] } });
  // Turn 1 writes v1 of both files, turn 2 replaces them with v2.
  const write = (v: string, bytes: number) =>
    `head -c ${bytes} /dev/urandom > data.bin && chmod 640 data.bin && echo "${v}" > note.txt && ${LISTING}`;
  const v1 = (await bash(h, source, write('v1', 300_000))).output.replace(/\n\[exit 0\]$/, '');
  const betweenTurns = await lastSeq(source);
  const v2 = (await bash(h, source, write('v2', 2_500_000))).output.replace(/\n\[exit 0\]$/, '');
  expect(v1).toMatch(/^data\.bin 640 300000\n[0-9a-f]{64} {2}-\nnote\.txt 644 3\n[0-9a-f]{64} {2}-\nv1$/);
  expect(v2).toMatch(/data\.bin 640 2500000\n[\s\S]*\nv2$/);
  const sourceEvents = await events(source);
  const snapshots = sourceEvents.filter((e) => e.type === 'workspace_snapshot');
  expect(snapshots.map((e) => e.seq < betweenTurns)).toEqual([true, false]);

  // A fork between the turns sees v1, and the restore is named in its first result and its log.
  const early = await fork(source, betweenTurns, 'fork-early');
  expect(early.workspaces).toEqual({ main: { sessionId: source.workflowId, snapshotSeq: 1 } });
  const seenEarly = await bash(h, early.handle, LISTING);
  expect(seenEarly.output).toMatch(
    new RegExp(
      `^${escape(v1)}\\n\\[exit 0\\]\\n\\n\\[workspace restored on host ${HOST} from snapshot 1 of session ${source.workflowId} \\(taken \\d+ s ago, 2 files, 300003 bytes\\)`,
    ),
  );
  expect(seenEarly.output).not.toContain('v2');
  expect(restoredEvents(await events(early.handle))).toEqual([
    expect.objectContaining({
      name: 'main',
      snapshotSeq: 1,
      files: 2,
      sizeBytes: 300_003,
      from: { sessionId: source.workflowId, snapshotSeq: 1 },
    }),
  ]);
  // The fork took the source's snapshot as its own first: no content was copied.
  const [own] = await listSessionSnapshots(api.db!, early.handle.workflowId);
  expect(own).toMatchObject({ seq: 1, files: 2, size_bytes: 300_003, new_chunks: 0, new_bytes: 0 });

  // A fork at the end sees v2; the source still sees v2.
  const late = await fork(source, await lastSeq(source), 'fork-late');
  expect(late.workspaces).toEqual({ main: { sessionId: source.workflowId, snapshotSeq: 2 } });
  // Its run dies before the first call and is woken as a new run: the snapshot to start from is carried over.
  await waitForEvents(late.handle, (ev) => ev.some((e) => e.type === 'session_started' && e.forkedFrom !== undefined));
  await late.handle.terminate('lost before its first call');
  await wakeSession(h.env.client, testArchive(), late.handle.workflowId);
  const seenLate = await bash(h, late.handle, LISTING);
  expect(seenLate.output.startsWith(`${v2}\n[exit 0]\n\n[workspace restored on host ${HOST} from snapshot 2 of`)).toBe(
    true,
  );
  expect((await bash(h, source, LISTING)).output).toBe(`${v2}\n[exit 0]`);

  // The early fork goes on with its own snapshots: v3 on top of v1.
  const v3 = (await bash(h, early.handle, `echo v3 > note.txt && ${LISTING}`)).output.replace(/\n\[exit 0\]$/, '');
  expect(v3.split('\n').slice(0, 2)).toEqual(v1.split('\n').slice(0, 2));
  expect(v3.endsWith('\nv3')).toBe(true);
  expect((await listSessionSnapshots(api.db!, early.handle.workflowId)).map((s) => s.seq)).toEqual([2, 1]);

  // Deleting the source's snapshots (as deleting the session does) leaves the forks that restored whole:
  // a fork of the early fork at its end sees v3 from the early fork's own snapshot.
  await deleteSessionSnapshots(api.db!, source.workflowId);
  const grandchild = await fork(early.handle, await lastSeq(early.handle), 'fork-of-fork');
  expect(grandchild.workspaces).toEqual({ main: { sessionId: early.handle.workflowId, snapshotSeq: 2 } });
  expect((await bash(h, grandchild.handle, LISTING)).output).toMatch(
    new RegExp(`^${escape(v3)}\\n\\[exit 0\\]\\n\\n\\[workspace restored on host ${HOST} from snapshot 2 of session `),
  );

  // A fork of the early fork at its first own event goes back along the chain to the source's snapshot 1, which
  // is gone now: its sandbox is refused with an error naming it, and no sandbox gets the recipe's workspace instead.
  const orphan = await fork(early.handle, betweenTurns + 1, 'fork-orphan');
  expect(orphan.workspaces).toEqual({ main: { sessionId: source.workflowId, snapshotSeq: 1 } });
  const refused = await bash(h, orphan.handle, LISTING);
  expect(refused.isError).toBe(true);
  expect(refused.output).toContain(
    `snapshot 1 of sandbox main of session ${source.workflowId} no longer exists (older snapshots are deleted past SNAPSHOT_RETAIN`,
  );
  // The next call is refused the same way (the workspace volume the failed provision left is not handed out).
  const again = await bash(h, orphan.handle, LISTING);
  expect(again.isError).toBe(true);
  expect(again.output).toContain(`snapshot 1 of sandbox main of session ${source.workflowId} no longer exists`);
  expect(await listSessionSnapshots(api.db!, orphan.handle.workflowId)).toEqual([]);
}, 300_000);

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
