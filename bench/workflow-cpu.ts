// What the SDK's per-promise stack recording costs a workflow task: two replay workers in child processes, one with
// BRAIN_WORKFLOW_STACK_TRACES=on (the SDK's default: its promise hook records a source-mapped stack for every
// promise workflow code creates) and one with it off (the brain's default), each replaying every recorded history
// in test/histories, passes interleaved; and a third, the brain's default with BRAIN_REPLAY_WATCHDOG=off (calls that
// replay history without the SDK's per-call timeout, a watchdog thread per call). Replay runs the same workflow
// activations a brain runs live, without the server, so the difference is the workflow thread's own CPU.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { ROOT } from '../test/helpers/env';
import { armStats, interleave, type BenchResult, type Ctx } from './lib';

type Arm = 'stack_traces_on' | 'stack_traces_off' | 'replay_watchdog_off';

class ReplayChild {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: AsyncIterator<string>;
  private stderr = '';
  histories = 0;

  constructor(stackTraces: 'on' | 'off', replayWatchdog: 'on' | 'off' = 'on') {
    this.child = spawn(
      process.execPath,
      [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(__dirname, 'workflow-cpu-child.ts')],
      {
        env: { ...process.env, BRAIN_WORKFLOW_STACK_TRACES: stackTraces, BRAIN_REPLAY_WATCHDOG: replayWatchdog },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.answers = readline.createInterface({ input: this.child.stdout })[Symbol.asyncIterator]();
  }

  /** One pass over every recorded history; its time in ms. */
  async pass(): Promise<number> {
    this.child.stdin.write('go\n');
    const { value, done } = await this.answers.next();
    if (done) throw new Error(`replay child exited: ${this.stderr.trim().split('\n').slice(-3).join(' ')}`);
    const r = JSON.parse(value) as { ms: number; histories: number };
    this.histories = r.histories;
    return r.ms;
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }
}

export async function runWorkflowCpu(ctx: Ctx): Promise<BenchResult[]> {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'workflow-bundle.js')))
    throw new Error('dist/workflow-bundle.js is missing: run `npm run build`');
  const rounds = ctx.quick ? 8 : 20;
  const warmup = 2;
  const children: Record<Arm, ReplayChild> = {
    stack_traces_on: new ReplayChild('on'),
    stack_traces_off: new ReplayChild('off'),
    replay_watchdog_off: new ReplayChild('off', 'off'),
  };
  try {
    const samples = await interleave<Arm>(
      ['stack_traces_on', 'stack_traces_off', 'replay_watchdog_off'],
      rounds,
      warmup,
      (arm) => children[arm].pass(),
      (m) => ctx.log(`  workflow_cpu ${m}`),
    );
    const on = armStats(samples.stack_traces_on);
    const off = armStats(samples.stack_traces_off);
    const watchdog = armStats(samples.replay_watchdog_off);
    const n = children.stack_traces_off.histories;
    return [
      {
        name: 'workflow_task_cpu',
        arms: { stack_traces_on: on, stack_traces_off: off, replay_watchdog_off: watchdog },
        ratioTo: { stack_traces_off: 'stack_traces_on', replay_watchdog_off: 'stack_traces_off' },
        histories: n,
        notes: `Two replay workers in child processes (Worker.runReplayHistories, the prebuilt bundle, one worker each for the whole run), one with BRAIN_WORKFLOW_STACK_TRACES=on (the SDK's promise hook records a source-mapped stack for every promise workflow code creates, for the stack trace query) and one with it off (the brain's default); a sample is one pass over all ${n} recorded histories in test/histories, ${rounds} passes per arm after ${warmup} warm-ups, interleaved. Replay runs the workflow activations a brain runs live, without the server: off / on p50 ${(off.p50Ms / on.p50Ms).toFixed(3)}, ${((1 - off.p50Ms / on.p50Ms) * 100).toFixed(1)}% of the workflow code's time saved. A third, replay_watchdog_off, runs the brain's defaults but BRAIN_REPLAY_WATCHDOG=off: calls that replay history without the SDK's per-call timeout (which Node implements with a watchdog thread per call): it / the brain's default at p50 ${(watchdog.p50Ms / off.p50Ms).toFixed(3)}.`,
      },
    ];
  } finally {
    for (const c of Object.values(children)) c.stop();
  }
}
