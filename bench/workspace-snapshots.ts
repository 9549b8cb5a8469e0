// Workspace snapshots, measured on the real Docker engine (SANDBOX_RUNTIME's choice) and PostgreSQL, through the
// hands module itself (src/hands/workspace-snapshots.ts), in a workspace of 400 files (4 KiB each, 1.6 MiB):
// - `snapshot_per_turn`: the capture after a call that changed 1 file, against one after a call that changed nothing
//   (ms each, and bytes stored);
// - `restore`: provisioning a sandbox and restoring the latest snapshot into it, against provisioning alone;
// - `pause_resume`: pausing an idle sandbox (capture, then removal) and resuming it (provision + restore), against
//   stopping it and resuming it on the same host with its volume.
// Run: `npx tsx bench/workspace-snapshots.ts` (after `npm run build`); writes bench/results/workspace-snapshots.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { openDb } from '../src/storage/db';
import { createWorkspaceSnapshots } from '../src/hands/workspace-snapshots';
import { deleteSessionSnapshots } from '../src/storage/repos/workspace-snapshots-repo';
import { AgentSchema } from '../src/session/agent';
import { freshPostgresDatabase } from '../test/helpers/api';
import { testDataConverter } from '../test/helpers/test-keys';

const ROUNDS = Number(process.env.ROUNDS ?? 10);
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: s.length, median: r(q(0.5)), p90: r(q(0.9)), min: r(s[0]), max: r(s[s.length - 1]) };
};

async function main(): Promise<void> {
  const provider = new DockerSandboxProvider({
    dockerHost: (await resolveDockerHost())!,
    defaultImage: sandboxImage(),
  });
  const pg = await freshPostgresDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-snapshots-'));
  const db = await openDb({ databaseUrl: pg.url, dataDir });
  const recipe = AgentSchema.parse({ name: 'b', model: 'm', sandboxes: { main: {} } }).sandboxes.main;
  const snaps = createWorkspaceSnapshots({
    provider,
    db: () => db,
    dataConverter: testDataConverter(),
    limits: { maxBytes: 1 << 30, retain: 3, workspaceMaxBytes: 2 ** 34 },
  });
  const sessionId = `bench_snap_${process.pid}`;
  const made: string[] = [];
  let runtime: string | undefined;
  const provision = async (sid: string) => {
    const p = await provider.provision({ sessionId: sid, name: 'main', recipe, hostId: `bench-${process.pid}` });
    made.push(p.sandboxId);
    runtime = p.runtime;
    return p.sandboxId;
  };
  const sh = async (id: string, script: string) => {
    const r = await provider.execute(id, {
      key: `k${Math.random()}`,
      script,
      timeoutSeconds: 120,
      maxOutputBytes: 4096,
    });
    if (r.exitCode !== 0) throw new Error(r.output);
  };
  try {
    const a = await provision(sessionId);
    snaps.track(a, sessionId, 'main', recipe.workdir);
    await sh(a, 'mkdir -p d && for i in $(seq 1 400); do head -c 4096 /dev/urandom > d/f$i; done');
    const firstT0 = performance.now();
    const first = await snaps.capture(a);
    const firstMs = performance.now() - firstT0;
    const changed: number[] = [];
    const unchanged: number[] = [];
    const changedBytes: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      await sh(a, `head -c 4096 /dev/urandom > d/f${(i % 400) + 1}`);
      let t0 = performance.now();
      const c = await snaps.capture(a);
      changed.push(performance.now() - t0);
      changedBytes.push(c.snapshot?.newBytes ?? 0);
      await sh(a, 'true');
      t0 = performance.now();
      const u = await snaps.capture(a);
      unchanged.push(performance.now() - t0);
      if (u.snapshot) throw new Error('a call that changed nothing made a snapshot');
    }
    const restore: number[] = [];
    const provisionOnly: number[] = [];
    const pause: number[] = [];
    const stop: number[] = [];
    const resumeAfterStop: number[] = [];
    for (let i = 0; i < Math.max(3, Math.floor(ROUNDS / 2)); i++) {
      let t0 = performance.now();
      await provision(`${sessionId}_p${i}`);
      provisionOnly.push(performance.now() - t0);
      // Resuming a paused sandbox: provisioning anew and restoring its latest snapshot.
      t0 = performance.now();
      const b = await provision(`${sessionId}_r${i}`);
      snaps.track(b, sessionId, 'main', recipe.workdir);
      await snaps.restore(b);
      restore.push(performance.now() - t0);
      // Against stopping and resuming on the same host, the workspace volume kept.
      t0 = performance.now();
      await provider.stop(b);
      stop.push(performance.now() - t0);
      t0 = performance.now();
      await provider.provision({
        sessionId: `${sessionId}_r${i}`,
        name: 'main',
        recipe,
        hostId: `bench-${process.pid}`,
        resume: b,
      });
      resumeAfterStop.push(performance.now() - t0);
      // Pausing what an idle sandbox holds (unchanged since its last capture): the capture's scan, then removal.
      t0 = performance.now();
      await snaps.capture(b);
      await provider.destroy(b);
      snaps.forget(b);
      pause.push(performance.now() - t0);
    }
    const result = {
      measured_at: new Date().toISOString(),
      runtime,
      workspace: { files: 400, bytes: 400 * 4096 },
      first_snapshot: { ms: Math.round(firstMs), ...first.snapshot },
      snapshot_per_turn: {
        changed_1_file_ms: stats(changed),
        changed_1_file_new_bytes: stats(changedBytes),
        unchanged_ms: stats(unchanged),
        unchanged_new_bytes: 0,
      },
      restore: { provision_and_restore_ms: stats(restore), provision_only_ms: stats(provisionOnly) },
      pause_resume: {
        pause_ms: stats(pause),
        resume_after_pause_ms: stats(restore),
        stop_ms: stats(stop),
        resume_after_stop_ms: stats(resumeAfterStop),
      },
    };
    const out = path.join(__dirname, 'results', 'workspace-snapshots.json');
    fs.writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const id of made) await provider.destroy(id).catch(() => undefined);
    await deleteSessionSnapshots(db, sessionId).catch(() => undefined);
    await db.close();
    await pg.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
