// What gVisor costs: provisioning a hardened sandbox and execute() round trips under runsc against runc,
// the two arms interleaved on the same engine, as ratios.
import { randomUUID } from 'node:crypto';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { SandboxRecipeSchema } from '../src/session/agent';
import { uniqueId } from '../test/helpers/env';
import { armStats, interleave, ratio, type BenchResult, type Ctx } from './lib';

type Arm = 'runc' | 'runsc';
const ARMS: Arm[] = ['runc', 'runsc'];

export async function runRuntime(ctx: Ctx): Promise<BenchResult[]> {
  const dockerHost = await resolveDockerHost();
  if (!dockerHost) throw new Error('no Docker engine');
  const providers: Record<Arm, DockerSandboxProvider> = {
    runc: new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage(), runtime: 'runc' }),
    runsc: new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage(), runtime: 'runsc' }),
  };
  const recipe = SandboxRecipeSchema.parse({});
  const provisionRounds = ctx.quick ? 10 : 20;
  const execRounds = ctx.quick ? 20 : 40;
  const created: { arm: Arm; id: string }[] = [];
  try {
    // Provision: a fresh session each time, so a container and its two volumes are created and started.
    const provision = await interleave(
      ARMS,
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
        if (r.runtime !== arm) throw new Error(`asked for ${arm}, got ${r.runtime}`);
        await providers[arm].destroy(r.sandboxId);
        return ms;
      },
      (m) => ctx.log(`  runtime provision ${m}`),
    );
    // execute(): one running sandbox per runtime, the same commands.
    const sandboxes: Record<Arm, string> = { runc: '', runsc: '' };
    for (const arm of ARMS) {
      const r = await providers[arm].provision({
        sessionId: uniqueId(`bench-rt-exec-${arm}`),
        name: 'main',
        recipe,
        hostId: ctx.stack.hostId,
      });
      sandboxes[arm] = r.sandboxId;
      created.push({ arm, id: r.sandboxId });
    }
    const commands = {
      true: 'true',
      work: 'git init -q /tmp/g-$$ && cd /tmp/g-$$ && for i in $(seq 20); do echo $i > f$i; done && git add . && git -c user.name=b -c user.email=b@b commit -qm x && ls -la > /dev/null && cd / && rm -rf /tmp/g-$$',
    } as const;
    const exec: Record<string, Record<Arm, number[]>> = {};
    for (const [label, script] of Object.entries(commands)) {
      exec[label] = await interleave(
        ARMS,
        execRounds,
        3,
        async (arm) => {
          const t0 = performance.now();
          const r = await providers[arm].execute(sandboxes[arm], {
            key: randomUUID(),
            script,
            timeoutSeconds: 60,
            maxOutputBytes: 32 * 1024,
          });
          if (r.exitCode !== 0) throw new Error(`${arm} ${label} exited ${r.exitCode}: ${r.output.slice(0, 200)}`);
          return performance.now() - t0;
        },
        (m) => ctx.log(`  runtime execute ${label} ${m}`),
      );
    }
    const arms = {
      provision_runc: armStats(provision.runc),
      provision_runsc: armStats(provision.runsc),
      execute_runc: armStats(exec.true.runc),
      execute_runsc: armStats(exec.true.runsc),
      execute_git_runc: armStats(exec.work.runc),
      execute_git_runsc: armStats(exec.work.runsc),
    };
    const ratios = {
      provision_runsc_over_runc: ratio(arms.provision_runsc, arms.provision_runc),
      execute_runsc_over_runc: ratio(arms.execute_runsc, arms.execute_runc),
      execute_git_runsc_over_runc: ratio(arms.execute_git_runsc, arms.execute_git_runc),
    };
    const notes = [
      'DockerSandboxProvider with SANDBOX_RUNTIME runc against runsc (runsc-nonet: gVisor on its default systrap platform, no network stack), the arms interleaved (A B, B A, ...) on the same engine.',
      `provision: ${provisionRounds} samples per arm after 2 warm-ups, each a new session's sandbox (volumes, create, start; no repo, no setup), destroyed after.`,
      `execute: ${execRounds} samples per arm after 3 warm-ups on one running sandbox per runtime, for \`true\` and for a small git job (init, 20 files, add, commit, ls -la).`,
      `Ratios runsc/runc p50: provision ${ratios.provision_runsc_over_runc.p50}, execute ${ratios.execute_runsc_over_runc.p50}, execute git ${ratios.execute_git_runsc_over_runc.p50}.`,
    ].join(' ');
    return [
      {
        name: 'sandbox_runtime',
        arms,
        notes,
        ratios,
        ratioTo: {
          provision_runsc: 'provision_runc',
          execute_runsc: 'execute_runc',
          execute_git_runsc: 'execute_git_runc',
        },
      },
    ];
  } finally {
    for (const c of created) await providers[c.arm].destroy(c.id).catch(() => undefined);
  }
}
