// What gVisor costs, and which of its options costs least: provisioning a hardened sandbox, execute() of `true`, a
// bare exec of `true` on the same sandbox, and a small git job, under runc, runsc (systrap, the default) and
// gVisor's file-system variants (RUNSC_VARIANTS: directfs off, no root overlay, a memory-backed root overlay), the
// arms interleaved on the same engine, as ratios.
import type Docker from 'dockerode';
import { randomUUID } from 'node:crypto';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { SandboxRecipeSchema } from '../src/session/agent';
import { configureRuntimeVariants, engineRuntimes, findRunsc, RUNSC_VARIANTS } from '../src/infra/gvisor';
import { uniqueId } from '../test/helpers/env';
import { armStats, interleave, ratio, settle, SETTLE_MS, type ArmStats, type BenchResult, type Ctx } from './lib';

/** Arm name -> the provider's runtime preference and, for a variant, its runtime name. */
const BASE = { runc: { runtime: 'runc' }, runsc: { runtime: 'runsc' } } as const;
const VARIANT_ARMS: Record<string, keyof typeof RUNSC_VARIANTS> = {
  nodirectfs: 'runsc-bench-nodirectfs',
  overlay_none: 'runsc-bench-overlay-none',
  overlay_memory: 'runsc-bench-overlay-memory',
};

const GIT_JOB =
  'git init -q /tmp/g-$$ && cd /tmp/g-$$ && for i in $(seq 20); do echo $i > f$i; done && git add . && git -c user.name=b -c user.email=b@b commit -qm x && ls -la > /dev/null && cd / && rm -rf /tmp/g-$$';

/** One exec of `bash -c script` with attached streams and an exec inspect for its exit code: the floor. */
async function bareExec(container: Docker.Container, script: string): Promise<number> {
  const exec = await container.exec({
    Cmd: ['bash', '-c', script],
    AttachStdout: true,
    AttachStderr: true,
    User: '1000',
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  await new Promise<void>((resolve, reject) => {
    stream.on('data', () => undefined);
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  return (await exec.inspect()).ExitCode ?? -1;
}

export async function runRuntime(ctx: Ctx): Promise<BenchResult[]> {
  const dockerHost = await resolveDockerHost();
  if (!dockerHost) throw new Error('no Docker engine');
  const runsc = findRunsc();
  const before = await engineRuntimes(dockerHost);
  const added = runsc ? await configureRuntimeVariants(dockerHost, runsc.path, true, ctx.log) : [];
  const variants = Object.entries(VARIANT_ARMS).filter(([, name]) => added.includes(name) || before.includes(name));
  const arms = ['runc', 'runsc', ...variants.map(([arm]) => arm)];
  const providers: Record<string, DockerSandboxProvider> = {};
  for (const arm of arms) {
    const variant = VARIANT_ARMS[arm];
    providers[arm] = new DockerSandboxProvider({
      dockerHost,
      defaultImage: sandboxImage(),
      runtime: variant ? 'runsc' : BASE[arm as keyof typeof BASE].runtime,
      ...(variant ? { runscRuntimeName: variant } : {}),
    });
  }
  const recipe = SandboxRecipeSchema.parse({});
  const provisionRounds = ctx.quick ? 8 : 20;
  const execRounds = ctx.quick ? 20 : 40;
  const created: { arm: string; id: string }[] = [];
  try {
    // Provision: a fresh session each time, so a container and its two volumes are created and started.
    const provision = await interleave(
      arms,
      provisionRounds,
      2,
      async (arm) => {
        const t0 = performance.now();
        const r = await providers[arm].provision({
          sessionId: uniqueId(`bench-rt-${arm}`),
          name: 'main',
          recipe,
          hostId: ctx.stack.hostId,
        });
        const ms = performance.now() - t0;
        await providers[arm].destroy(r.sandboxId);
        if (r.runtime !== (arm === 'runc' ? 'runc' : 'runsc')) throw new Error(`asked for ${arm}, got ${r.runtime}`);
        return ms;
      },
      (m) => ctx.log(`  runtime provision ${m}`),
    );
    // execute() and a bare exec: one running sandbox per arm, the same commands.
    const sandboxes: Record<string, string> = {};
    for (const arm of arms) {
      const r = await providers[arm].provision({
        sessionId: uniqueId(`bench-rt-exec-${arm}`),
        name: 'main',
        recipe,
        hostId: ctx.stack.hostId,
      });
      sandboxes[arm] = r.sandboxId;
      created.push({ arm, id: r.sandboxId });
    }
    const execute = async (arm: string, script: string) => {
      await settle();
      const t0 = performance.now();
      const r = await providers[arm].execute(sandboxes[arm], {
        key: randomUUID(),
        script,
        timeoutSeconds: 60,
        maxOutputBytes: 32 * 1024,
      });
      if (r.exitCode !== 0) throw new Error(`${arm} exited ${r.exitCode}: ${r.output.slice(0, 200)}`);
      return performance.now() - t0;
    };
    // Each sample of the `true` arms is execute() and a bare exec back to back, in alternating order.
    const bare: Record<string, number[]> = Object.fromEntries(arms.map((a) => [a, []]));
    const exec = await interleave(
      arms,
      execRounds,
      3,
      async (arm, round) => {
        const b = async () => {
          await settle();
          const t0 = performance.now();
          const code = await bareExec(providers[arm].docker.getContainer(sandboxes[arm]), 'true');
          if (code !== 0) throw new Error(`${arm} bare exec exited ${code}`);
          return performance.now() - t0;
        };
        let e: number;
        let x: number;
        if (round % 2 === 0) {
          e = await execute(arm, 'true');
          x = await b();
        } else {
          x = await b();
          e = await execute(arm, 'true');
        }
        if (round >= 3) bare[arm].push(x);
        return e;
      },
      (m) => ctx.log(`  runtime execute true ${m}`),
    );
    const git = await interleave(
      arms,
      execRounds,
      3,
      (arm) => execute(arm, GIT_JOB),
      (m) => ctx.log(`  runtime execute git ${m}`),
    );
    const out: Record<string, ArmStats> = {};
    const ratios: Record<string, { p50: number; p95: number }> = {};
    const ratioTo: Record<string, string> = {};
    for (const arm of arms) {
      out[`provision_${arm}`] = armStats(provision[arm]);
      out[`execute_${arm}`] = armStats(exec[arm]);
      out[`bare_exec_${arm}`] = armStats(bare[arm]);
      out[`execute_git_${arm}`] = armStats(git[arm]);
      ratios[`execute_over_bare_${arm}`] = ratio(out[`execute_${arm}`], out[`bare_exec_${arm}`]);
      ratioTo[`bare_exec_${arm}`] = `execute_${arm}`;
    }
    for (const arm of arms.filter((a) => a !== 'runsc')) {
      const base = arm === 'runc' ? 'runc' : 'runsc';
      const [num, den] = arm === 'runc' ? ['runsc', 'runc'] : [arm, 'runsc'];
      for (const m of ['provision', 'execute', 'bare_exec', 'execute_git'])
        ratios[`${m}_${num}_over_${den}`] = ratio(out[`${m}_${num}`], out[`${m}_${den}`]);
      if (base === 'runsc') {
        ratioTo[`provision_${arm}`] = 'provision_runsc';
        ratioTo[`execute_git_${arm}`] = 'execute_git_runsc';
      }
    }
    ratioTo.provision_runsc = 'provision_runc';
    ratioTo.execute_git_runsc = 'execute_git_runc';
    const notes = [
      `DockerSandboxProvider under runc, runsc (runsc-nonet: gVisor's default systrap platform, directfs, root overlay backed by the container's file, no network stack) and ${variants.length} variants of it registered for this run (${variants.map(([a, n]) => `${a}: ${RUNSC_VARIANTS[n].slice(1).join(' ')}`).join('; ') || 'none: no local dockerd to register them with'}), the arms interleaved (A B ..., ... B A) on the same engine. The KVM platform is not an arm: on this machine its sandbox never booted.`,
      `provision: ${provisionRounds} samples per arm after 2 warm-ups, each a new session's sandbox (volumes, create, start; no repo, no setup), destroyed after.`,
      `execute / bare_exec: ${execRounds} samples per arm after 3 warm-ups on one running sandbox per arm; each sample is execute() of \`true\` and a bare dockerode exec of \`bash -c true\` (create, start, stream, inspect), one after the other in alternating order, each after a pause of ${SETTLE_MS} ms. execute_git: a small git job (init, 20 files, add, commit, ls -la) through execute().`,
      `execute / bare exec p50: ${arms.map((a) => `${a} ${ratios[`execute_over_bare_${a}`].p50}`).join(', ')} (goal <= 1.5).`,
      `runsc/runc p50: provision ${ratios.provision_runsc_over_runc.p50}, execute ${ratios.execute_runsc_over_runc.p50}, bare exec ${ratios.bare_exec_runsc_over_runc.p50}, git ${ratios.execute_git_runsc_over_runc.p50}.`,
      ...variants.map(
        ([a]) =>
          `${a}/runsc p50: provision ${ratios[`provision_${a}_over_runsc`].p50}, execute ${ratios[`execute_${a}_over_runsc`].p50}, git ${ratios[`execute_git_${a}_over_runsc`].p50}.`,
      ),
    ].join(' ');
    return [{ name: 'sandbox_runtime', arms: out, notes, ratios, ratioTo }];
  } finally {
    for (const c of created) await providers[c.arm].destroy(c.id).catch(() => undefined);
    // Only what this run added is taken away again.
    const mine = added.filter((n) => !before.includes(n));
    if (runsc && mine.length > 0) await configureRuntimeVariants(dockerHost, runsc.path, false, ctx.log);
  }
}
