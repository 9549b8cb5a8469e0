// execute() round trip against a raw dockerode exec and the `docker exec` CLI, on one running sandbox, for
// `true` and for a command that writes 1 MB.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { SandboxRecipeSchema } from '../src/session/agent';
import { docker } from '../test/helpers/hands';
import { uniqueId } from '../test/helpers/env';
import { armStats, interleave, ratio, settle, SETTLE_MS, type BenchResult, type Ctx } from './lib';

const run = promisify(execFile);
type Arm = 'execute' | 'dockerode' | 'docker_cli';
const ARMS: Arm[] = ['execute', 'dockerode', 'docker_cli'];
const ONE_MB = 1024 * 1024;
const COMMANDS = { true: 'true', '1mb': `head -c ${ONE_MB} /dev/zero | tr '\\0' a` } as const;

export async function runExecute(ctx: Ctx): Promise<BenchResult[]> {
  const dockerHost = await resolveDockerHost();
  if (!dockerHost) throw new Error('no Docker engine');
  const provider = new DockerSandboxProvider({ dockerHost, defaultImage: sandboxImage() });
  const d = await docker();
  const { sandboxId } = await provider.provision({
    sessionId: uniqueId('bench-exec'),
    name: 'main',
    recipe: SandboxRecipeSchema.parse({}),
    hostId: ctx.stack.hostId,
  });
  const container = d.getContainer(sandboxId);
  const rounds = ctx.quick ? 20 : 40;
  const results: BenchResult[] = [];
  try {
    const byCommand: Record<string, Record<Arm, number[]>> = {};
    for (const [label, script] of Object.entries(COMMANDS)) {
      const expected = label === 'true' ? 0 : ONE_MB;
      byCommand[label] = await interleave(
        ARMS,
        rounds,
        3,
        async (arm) => {
          await settle();
          const t0 = performance.now();
          let bytes: number;
          if (arm === 'execute') {
            const r = await provider.execute(sandboxId, {
              key: randomUUID(),
              script,
              timeoutSeconds: 60,
              maxOutputBytes: 32 * 1024,
            });
            if (r.exitCode !== 0) throw new Error(`execute exited ${r.exitCode}: ${r.output.slice(0, 200)}`);
            bytes = r.outputBytes;
          } else if (arm === 'dockerode') {
            const exec = await container.exec({
              Cmd: ['bash', '-c', script],
              AttachStdout: true,
              AttachStderr: true,
              User: '1000',
            });
            const stream = await exec.start({ hijack: true, stdin: false });
            const chunks: Buffer[] = [];
            await new Promise<void>((resolve, reject) => {
              stream.on('data', (c: Buffer) => chunks.push(c));
              stream.on('end', resolve);
              stream.on('error', reject);
            });
            const info = await exec.inspect();
            if (info.ExitCode !== 0) throw new Error(`dockerode exec exited ${info.ExitCode}`);
            // Multiplexed frames: an 8-byte header per frame.
            bytes = demuxedLength(Buffer.concat(chunks));
          } else {
            const r = await run('docker', ['-H', dockerHost, 'exec', '-u', '1000', sandboxId, 'bash', '-c', script], {
              maxBuffer: 4 * ONE_MB,
              encoding: 'buffer',
            });
            bytes = r.stdout.length;
          }
          if (bytes !== expected) throw new Error(`${arm} ${label}: ${bytes} bytes of output, expected ${expected}`);
          return performance.now() - t0;
        },
        (m) => ctx.log(`  execute ${label} ${m}`),
      );
    }
    // A call right after another: the next warm unit may still be starting, and the call may start its own command.
    const burst: number[] = [];
    const call = () =>
      provider.execute(sandboxId, { key: randomUUID(), script: 'true', timeoutSeconds: 60, maxOutputBytes: 32 * 1024 });
    for (let i = 0; i < rounds + 3; i++) {
      await settle();
      await call();
      const t0 = performance.now();
      const r = await call();
      if (r.exitCode !== 0) throw new Error(`execute exited ${r.exitCode}`);
      if (i >= 3) burst.push(performance.now() - t0);
    }
    const t = byCommand.true;
    const m = byCommand['1mb'];
    const arms = {
      execute: armStats(t.execute),
      execute_back_to_back: armStats(burst),
      dockerode: armStats(t.dockerode),
      docker_cli: armStats(t.docker_cli),
      execute_1mb: armStats(m.execute),
      dockerode_1mb: armStats(m.dockerode),
      docker_cli_1mb: armStats(m.docker_cli),
    };
    const ratios = {
      execute_over_dockerode: ratio(arms.execute, arms.dockerode),
      execute_back_to_back_over_dockerode: ratio(arms.execute_back_to_back, arms.dockerode),
      execute_over_docker_cli: ratio(arms.execute, arms.docker_cli),
      execute_over_dockerode_1mb: ratio(arms.execute_1mb, arms.dockerode_1mb),
      execute_over_docker_cli_1mb: ratio(arms.execute_1mb, arms.docker_cli_1mb),
    };
    const notes = [
      `${rounds} samples per arm and command after 3 warm-ups, arms interleaved, on one running hardened sandbox, each after a pause of ${SETTLE_MS} ms (tool calls are a model turn apart).`,
      '`execute` is DockerSandboxProvider.execute: one exec of the wrapper script, which hands the command to a warm unit (a supervisor and a bash started after the previous call, waiting on a FIFO), records output and exit code under /tmp/.ma-exec for idempotency and caps the output inside the sandbox; `dockerode` is one bare exec of `bash -c` with attached streams plus an exec inspect for the exit code; `docker_cli` spawns `docker exec`.',
      `execute_back_to_back: an execute() of \`true\` started as the one before it returns, with no pause: the next warm unit may not be ready, and the call then starts its command itself (p50 ${ratios.execute_back_to_back_over_dockerode.p50} of dockerode).`,
      `For 1 MB, execute returns only the first and last 16 KB (the cap), while the other two carry the whole megabyte to the caller.`,
      `Ratios execute/dockerode p50 ${ratios.execute_over_dockerode.p50} (1 MB: ${ratios.execute_over_dockerode_1mb.p50}), execute/docker_cli p50 ${ratios.execute_over_docker_cli.p50} (1 MB: ${ratios.execute_over_docker_cli_1mb.p50}).`,
      `execute's extra over a bare exec is the wrapper's work in the sandbox: the request and the record written and read back with builtins, and three processes (the wrapper, the command's bash, its supervisor) handing over through two FIFOs (goal: execute <= 1.5x dockerode).`,
    ].join(' ');
    results.push({
      name: 'execute_roundtrip',
      arms,
      notes,
      ratios,
      ratioTo: {
        dockerode: 'execute',
        docker_cli: 'execute',
        execute_back_to_back: 'dockerode',
        dockerode_1mb: 'execute_1mb',
        docker_cli_1mb: 'execute_1mb',
      },
    });
  } finally {
    await provider.destroy(sandboxId).catch(() => undefined);
  }
  return results;
}

function demuxedLength(buf: Buffer): number {
  let n = 0;
  for (let i = 0; i + 8 <= buf.length;) {
    const size = buf.readUInt32BE(i + 4);
    n += size;
    i += 8 + size;
  }
  return n;
}
