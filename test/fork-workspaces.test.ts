// Which snapshot each sandbox of a fork starts from (`agents fork --sandboxes`), read from the log up to the fork
// point: the latest at or before it, owned by the session whose part of the log holds it (forks of forks).
import { forkWorkspaces } from '../src/session-ops';
import type { SessionEvent } from '../src/session/events';

const time = '2026-01-01T00:00:00.000Z';
const started = (seq: number, forkedFrom?: { sessionId: string; seq: number }): SessionEvent => ({
  seq,
  time,
  type: 'session_started',
  agent: {},
  ...(forkedFrom ? { forkedFrom } : {}),
});
const snapshot = (seq: number, name: string, snapshotSeq: number): SessionEvent => ({
  seq,
  time,
  type: 'workspace_snapshot',
  name,
  snapshotSeq,
  files: 1,
  sizeBytes: 1,
  chunkCount: 1,
  newChunks: 1,
  newBytes: 1,
});
const restored = (
  seq: number,
  name: string,
  snapshotSeq: number,
  from?: { sessionId: string; snapshotSeq: number },
): SessionEvent => ({
  seq,
  time,
  type: 'workspace_restored',
  name,
  sandboxId: 'c',
  host: 'h',
  snapshotSeq,
  takenAt: time,
  files: 1,
  sizeBytes: 1,
  ms: 1,
  ...(from ? { from } : {}),
});
const message = (seq: number): SessionEvent => ({ seq, time, type: 'user_message', text: 'x' });

it('takes the latest snapshot of each sandbox at or before the fork point; a sandbox without one has none', () => {
  const log = [started(0), message(1), snapshot(2, 'main', 1), snapshot(3, 'main', 2), snapshot(4, 'aux', 1)];
  expect(forkWorkspaces(log, 'S', ['main', 'aux', 'other'])).toEqual({
    main: { sessionId: 'S', snapshotSeq: 2 },
    aux: { sessionId: 'S', snapshotSeq: 1 },
  });
  expect(forkWorkspaces(log.slice(0, 3), 'S', ['main', 'aux'])).toEqual({ main: { sessionId: 'S', snapshotSeq: 1 } });
  expect(forkWorkspaces(log.slice(0, 2), 'S', ['main'])).toEqual({});
  // A restore of the session's own latest snapshot (a lost host) is no new snapshot.
  expect(forkWorkspaces([...log.slice(0, 3), restored(3, 'main', 1)], 'S', ['main'])).toEqual({
    main: { sessionId: 'S', snapshotSeq: 1 },
  });
});

it('goes back along a chain of forks to the session whose part of the log holds the snapshot', () => {
  // S's events 0..3; F forked S at 3 (its session_started at 4), restored S's snapshot 1 as its own 1, then took 2.
  const s = [started(0), message(1), snapshot(2, 'main', 1), message(3)];
  const f = [
    ...s,
    started(4, { sessionId: 'S', seq: 3 }),
    message(5),
    restored(6, 'main', 1, { sessionId: 'S', snapshotSeq: 1 }),
    snapshot(7, 'main', 2),
  ];
  expect(forkWorkspaces(f, 'F', ['main'])).toEqual({ main: { sessionId: 'F', snapshotSeq: 2 } });
  expect(forkWorkspaces(f.slice(0, 7), 'F', ['main'])).toEqual({ main: { sessionId: 'F', snapshotSeq: 1 } });
  // Before F restored anything, F's workspace is S's snapshot 1.
  expect(forkWorkspaces(f.slice(0, 6), 'F', ['main'])).toEqual({ main: { sessionId: 'S', snapshotSeq: 1 } });
  // G forked F at 7; a fork of G before G's own snapshots goes back through F.
  const g = [...f.slice(0, 8), started(8, { sessionId: 'F', seq: 7 }), message(9)];
  expect(forkWorkspaces(g, 'G', ['main'])).toEqual({ main: { sessionId: 'F', snapshotSeq: 2 } });
});
