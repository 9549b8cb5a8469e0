// Workspace snapshots on the real Docker engine and PostgreSQL: capture after a change (and none
// without one), content-addressed chunks sealed at rest in PostgreSQL, restore into a sandbox with a new workspace byte for byte
// (modes, links, nested and multi-chunk files), the limits refusing with nothing stored, deletion with the session;
// and the home directory a pause keeps, put back into a new sandbox.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { openDb, type Db } from '../src/storage/db';
import { createWorkspaceSnapshots, SnapshotRefusedError, type SnapshotLimits } from '../src/hands/workspace-snapshots';
import { createSandboxHomes } from '../src/hands/sandbox-home';
import { deleteSessionSnapshots, listSessionSnapshots } from '../src/storage/repos/workspace-snapshots-repo';
import { testDataConverter } from './helpers/test-keys';
import { freshPostgresDatabase } from './helpers/api';
import { WORKSPACE_LISTING } from './helpers/hands-hosts';
import type { SandboxRecipe } from '../src/session/agent';

const HOST = `test-snapshots-${process.pid}`;
let n = 0;
const unique = (p: string) => `${p}_${process.pid}_${++n}`;
let provider: DockerSandboxProvider;
let db: Db;
let dataDir: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let recipe: SandboxRecipe;
const sandboxes: string[] = [];
const LIMITS: SnapshotLimits = { maxBytes: 64 * 1024 * 1024, retain: 3, workspaceMaxBytes: 256 * 1024 * 1024 };

beforeAll(async () => {
  // runc: what is under test is the capture and the restore, not the runtime; it starts sooner.
  provider = new DockerSandboxProvider({
    dockerHost: (await resolveDockerHost())!,
    defaultImage: sandboxImage(),
    runtime: 'runc',
  });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snapshots-db-'));
  pg = await freshPostgresDatabase();
  db = await openDb({ databaseUrl: pg.url, dataDir });
  const { AgentSchema } = await import('../src/session/agent');
  recipe = AgentSchema.parse({ name: 't', model: 'm', sandboxes: { main: {} } }).sandboxes.main;
});
afterAll(async () => {
  for (const id of sandboxes) await provider.destroy(id).catch(() => undefined);
  await db?.close();
  await pg?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function sandbox(sessionId: string): Promise<string> {
  const p = await provider.provision({ sessionId, name: 'main', recipe, hostId: HOST });
  sandboxes.push(p.sandboxId);
  return p.sandboxId;
}

async function sh(sandboxId: string, script: string): Promise<string> {
  const r = await provider.execute(sandboxId, {
    key: unique('k'),
    script,
    timeoutSeconds: 60,
    maxOutputBytes: 1 << 20,
  });
  expect(r.exitCode).toBe(0);
  return r.output;
}

const snapshots = (limits: SnapshotLimits = LIMITS) =>
  createWorkspaceSnapshots({ provider, db: () => db, dataConverter: testDataConverter(), limits });

it('captures what changed, nothing twice, and restores it byte for byte into a new workspace', async () => {
  const sessionId = unique('ses');
  const a = await sandbox(sessionId);
  const snaps = snapshots();
  snaps.track(a, sessionId, 'main', recipe.workdir);
  await sh(
    a,
    [
      'mkdir -p src/deep/er notes',
      'printf "secret-free plain text\\n" > notes/a.md',
      'head -c 2500000 /dev/urandom > src/big.bin',
      'printf "#!/bin/sh\\necho hi\\n" > src/run.sh && chmod 750 src/run.sh',
      'for i in $(seq 1 40); do echo "file $i" > src/deep/er/f$i.txt; done',
      'ln -s ../notes/a.md src/link.md',
      'printf "" > empty',
    ].join(' && '),
  );
  const before = await sh(a, WORKSPACE_LISTING);

  const first = await snaps.capture(a);
  expect(first.snapshot).toMatchObject({ seq: 1, files: 45, newChunks: expect.any(Number) });
  // big.bin is three chunks; the forty small files share none.
  expect(first.snapshot!.chunkCount).toBe(1 + 3 + 1 + 40);

  // Nothing changed: no snapshot, nothing stored.
  expect((await snaps.capture(a)).snapshot).toBeUndefined();
  expect(await listSessionSnapshots(db, sessionId)).toHaveLength(1);

  // One file changed: one new chunk.
  await sh(a, 'echo "file 7, again" > src/deep/er/f7.txt');
  const second = await snaps.capture(a);
  expect(second.snapshot).toMatchObject({ seq: 2, newChunks: 1 });
  expect(second.snapshot!.newBytes).toBe('file 7, again\n'.length);
  const after = await sh(a, WORKSPACE_LISTING);

  // The chunks are sealed: no plain content in the database.
  const [plain] = await db.query<{ n: number }>(
    `select count(*)::int as n from snapshot_chunks where position(convert_to('file 7, again', 'UTF8') in data) > 0`,
  );
  expect(plain.n).toBe(0);

  // A new workspace (another session's sandbox stands in for another host's) gets snapshot 2 exactly.
  const b = await sandbox(unique('ses'));
  await sh(b, 'echo from-the-recipe > recipe-file');
  const other = snapshots();
  other.track(b, sessionId, 'main', recipe.workdir);
  const restored = await other.restore(b);
  expect(restored).toMatchObject({ seq: 2, files: 45 });
  expect(await sh(b, WORKSPACE_LISTING)).toBe(after);
  expect(after).not.toBe(before);
  // The restored workspace is what was captured: the next capture finds nothing new.
  expect((await other.capture(b)).snapshot).toBeUndefined();

  // Deleting the session deletes its snapshots and the chunks only they used.
  expect(await deleteSessionSnapshots(db, sessionId)).toBe(2);
  expect(await listSessionSnapshots(db, sessionId)).toEqual([]);
  const [left] = await db.query<{ n: number }>(`select count(*)::int as n from snapshot_chunks`);
  expect(left.n).toBe(0);
}, 120_000);

it('refuses a workspace over a limit with a clear error, storing nothing; retention keeps the newest', async () => {
  const sessionId = unique('ses');
  const a = await sandbox(sessionId);
  const small = snapshots({ maxBytes: 100_000, retain: 2, workspaceMaxBytes: 1 << 30 });
  small.track(a, sessionId, 'main', recipe.workdir);
  // An empty workspace needs no snapshot.
  expect((await small.capture(a)).snapshot).toBeUndefined();
  await sh(a, 'echo one > a.txt');
  expect((await small.capture(a)).snapshot?.seq).toBe(1);
  await sh(a, 'head -c 200000 /dev/urandom > big.bin');
  await expect(small.capture(a)).rejects.toThrow(SnapshotRefusedError);
  await expect(small.capture(a)).rejects.toThrow(/over SNAPSHOT_MAX_BYTES .*nothing was truncated.*seq 1/);
  expect((await listSessionSnapshots(db, sessionId)).map((s) => s.seq)).toEqual([1]);
  const [chunks] = await db.query<{ n: number }>(`select count(*)::int as n from snapshot_chunks`);
  expect(chunks.n).toBe(1);

  await sh(a, 'rm big.bin');
  for (const v of ['two', 'three', 'four']) {
    await sh(a, `echo ${v} > a.txt`);
    await small.capture(a);
  }
  expect((await listSessionSnapshots(db, sessionId)).map((s) => s.seq)).toEqual([4, 3]);
  // Only the chunks of the kept snapshots remain.
  const [kept] = await db.query<{ n: number }>(`select count(*)::int as n from snapshot_chunks`);
  expect(kept.n).toBe(2);
  await deleteSessionSnapshots(db, sessionId);
}, 120_000);

it('`agents status` counts the snapshots the log records per sandbox, with the latest and the restores', async () => {
  const { workspaceSnapshotsOf } = await import('../src/observability/session-stats');
  const snap = (seq: number, snapshotSeq: number, newBytes: number) => ({
    seq,
    time: `2026-01-01T00:00:0${seq}.000Z`,
    type: 'workspace_snapshot' as const,
    name: 'main',
    snapshotSeq,
    files: 3,
    sizeBytes: 300 + snapshotSeq,
    chunkCount: 3,
    newChunks: 1,
    newBytes,
  });
  expect(
    workspaceSnapshotsOf([
      snap(1, 1, 300),
      snap(2, 2, 10),
      {
        seq: 3,
        time: '2026-01-01T00:00:03.000Z',
        type: 'workspace_restored',
        name: 'main',
        sandboxId: 'c2',
        host: 'h2',
        snapshotSeq: 2,
        takenAt: '2026-01-01T00:00:02.000Z',
        files: 3,
        sizeBytes: 302,
        ms: 40,
      },
    ]),
  ).toEqual([
    {
      name: 'main',
      taken: 2,
      storedBytes: 310,
      restores: 1,
      latest: { seq: 2, at: '2026-01-01T00:00:02.000Z', files: 3, sizeBytes: 302 },
    },
  ]);
});

it('keeps a home directory for the next sandbox, without ~/.cache, sealed, and none over the limit', async () => {
  const sessionId = unique('ses');
  const ref = { sessionId, name: 'main' };
  const a = await sandbox(sessionId);
  const made = await sh(
    a,
    'mkdir -p ~/.local/bin ~/.cache/pip && head -c 2500000 /dev/urandom > ~/.local/big.bin && printf "#!/bin/sh\\necho hi\\n" > ~/.local/bin/t && chmod 700 ~/.local/bin/t && echo c > ~/.cache/pip/x && sha256sum ~/.local/big.bin',
  );
  const homes = (maxBytes: number) =>
    createSandboxHomes({ provider, db: () => db, dataConverter: testDataConverter(), maxBytes });
  const kept = await homes(64 * 1024 * 1024).keep(a, ref);
  expect(kept).toEqual({ kept: true, sizeBytes: expect.any(Number) });
  expect(kept.kept && kept.sizeBytes).toBeGreaterThan(2_500_000);
  const chunks = await db.query<{ n: number; data: string }>(
    "select n, encode(data, 'escape') as data from sandbox_home_chunks where session_id = $1 order by n",
    [sessionId],
  );
  expect(chunks.map((c) => c.n)).toEqual([0, 1, 2]);
  expect(chunks.map((c) => c.data).join('')).not.toContain('echo hi');

  // A new sandbox of the session (new volumes) gets it back.
  await provider.destroy(a);
  const b = await sandbox(sessionId);
  expect(b).not.toBe(a);
  expect(await homes(64 * 1024 * 1024).restore(b, ref)).toEqual({
    sizeBytes: kept.kept ? kept.sizeBytes : 0,
    keptAt: expect.any(Date),
  });
  expect(
    await sh(b, 'sha256sum ~/.local/big.bin && ~/.local/bin/t && stat -c "%u %a" ~/.local/bin/t && ls -A ~ | sort'),
  ).toBe(`${made}hi\n1000 700\n.bash_logout\n.bashrc\n.local\n.profile\n`);

  // A kept home that lost a chunk is refused whole (the resume says it could not be put back).
  await homes(64 * 1024 * 1024).keep(b, ref);
  await db.query('delete from sandbox_home_chunks where session_id = $1 and n = 1', [sessionId]);
  await expect(homes(64 * 1024 * 1024).restore(b, ref)).rejects.toThrow(
    'the kept home of sandbox main lost its chunk 1',
  );

  // Over the limit: nothing kept, and the older home is dropped, so a resume starts from the image's.
  expect(await homes(1000).keep(b, ref)).toEqual({
    kept: false,
    reason: 'its home directory holds over 1000 bytes (SNAPSHOT_MAX_BYTES)',
  });
  expect(await homes(64 * 1024 * 1024).restore(b, ref)).toBeUndefined();
  expect(await db.query('select 1 from sandbox_home_chunks where session_id = $1', [sessionId])).toEqual([]);
}, 120_000);
