// History growth over a long session: history bytes and events per turn, continue-as-new handovers, and the
// time to replay a run's history against the number of turns in it.
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { testAgent, testDataConverter, uniqueId, workflowBundle } from '../test/helpers/env';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { sendMessageUpdate, statusQuery } from '../src/session/contract';
import { armStats, endSession, waitLive, type BenchResult, type Ctx } from './lib';

interface Checkpoint {
  turns: number;
  run: number;
  runEvents: number;
  runBytes: number;
  history: temporal.api.history.v1.IHistory;
  replayP50Ms?: number;
}

/**
 * Replays `histories` in order on one replay worker (Worker.runReplayHistories: same bundle and codec) and
 * returns each replay's time, from handing the history to the worker to its result; the first one also pays
 * for creating the worker. A replay that fails (nondeterminism) fails the benchmark.
 */
async function replayTimes(histories: temporal.api.history.v1.IHistory[], workflowId: string): Promise<number[]> {
  let t0 = 0;
  function* feed() {
    for (const history of histories) {
      t0 = performance.now();
      yield { history, workflowId };
    }
  }
  const times: number[] = [];
  for await (const r of Worker.runReplayHistories(
    { workflowBundle: await workflowBundle(), dataConverter: testDataConverter() },
    feed(),
  )) {
    times.push(performance.now() - t0);
    if (r.error) throw r.error;
  }
  return times;
}

export async function runHistory(ctx: Ctx): Promise<BenchResult[]> {
  const { stack } = ctx;
  const turns = ctx.quick ? 100 : 1000;
  const every = ctx.quick ? 20 : 100;
  const worker = await stack.worker({ role: 'brain' });
  const id = uniqueId('bench-history');
  // History does not depend on the model's latency: the model answers at once here.
  stack.mock.script(id, { firstByteDelayMs: 0 });
  let handle: WorkflowHandle | undefined;
  const checkpoints: Checkpoint[] = [];
  try {
    handle = await stack.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: id,
      args: [{ agent: testAgent() }],
    });
    const started = Date.now();
    for (let t = 1; t <= turns; t++) {
      const { seq } = await handle.executeUpdate(sendMessageUpdate, {
        args: [{ text: `turn ${t}: a short message of about this length` }],
      });
      // From the turn's own seq: after a handover the current run holds only the events from its first seq on.
      await waitLive(handle, (ev) => ev.some((e) => e.seq > seq && e.type === 'assistant_message'), 60_000, 5, seq);
      if (t % every === 0) {
        const h = stack.client.workflow.getHandle(id);
        const status = await h.query(statusQuery);
        const history = await h.fetchHistory();
        checkpoints.push({
          turns: t,
          run: status.run ?? 1,
          runEvents: history.events?.length ?? 0,
          runBytes: temporal.api.history.v1.History.encode(history).finish().length,
          history,
        });
        ctx.log(
          `  history: ${t} turns, run ${status.run ?? 1}, ${history.events?.length} events, ${checkpoints[checkpoints.length - 1].runBytes} bytes (${((Date.now() - started) / t).toFixed(0)} ms/turn)`,
        );
      }
    }
  } finally {
    if (handle) await endSession(stack.client.workflow.getHandle(id));
    await worker.shutdown().catch(() => undefined);
  }
  // One replay worker: a warm-up replay, every checkpoint once for the curve, then the first and the last checkpoint
  // 20 times each, interleaved (first last, last first, ...), as the arms.
  const first = checkpoints[0];
  const last = checkpoints.reduce((a, b) => (b.run === last0(checkpoints).run && b.turns > a.turns ? b : a), first);
  const ARM_ROUNDS = 20;
  const armOrder = Array.from({ length: ARM_ROUNDS }, (_, i) => (i % 2 === 0 ? [first, last] : [last, first])).flat();
  const times = await replayTimes(
    [first.history, ...checkpoints.map((c) => c.history), ...armOrder.map((c) => c.history)],
    id,
  );
  const series: { x: number; y: number; series: string }[] = [];
  checkpoints.forEach((c, i) => {
    c.replayP50Ms = Math.round(times[1 + i] * 10) / 10;
    series.push({ x: c.turns, y: c.replayP50Ms, series: 'replay ms' });
    series.push({ x: c.turns, y: c.runBytes / 1024, series: 'run history KiB' });
  });
  const armTimes = times.slice(1 + checkpoints.length);
  const samples = {
    first: armTimes.filter((_, i) => armOrder[i] === first),
    last: armTimes.filter((_, i) => armOrder[i] === last),
  };
  const sameRun = checkpoints.filter((c) => c.run === 1);
  const a = sameRun[0];
  const b = sameRun[sameRun.length - 1];
  const bytesPerTurn = b && b !== a ? (b.runBytes - a.runBytes) / (b.turns - a.turns) : b.runBytes / b.turns;
  const eventsPerTurn = b && b !== a ? (b.runEvents - a.runEvents) / (b.turns - a.turns) : b.runEvents / b.turns;
  const runs = checkpoints[checkpoints.length - 1].run;
  const arms = {
    [`replay_turns_${first.turns}`]: armStats(samples.first),
    [`replay_turns_${last.turns}_run${last.run}`]: armStats(samples.last),
  };
  const notes = [
    `One session of ${turns} plain-text turns (model answers at once; history does not depend on its latency), checkpoints every ${every} turns.`,
    `In run 1: ${bytesPerTurn.toFixed(0)} history bytes and ${eventsPerTurn.toFixed(1)} history events per turn, constant (linear growth: no activity input carries the transcript).`,
    `The session handed over (continue-as-new) ${runs - 1} time(s) by turn ${turns}; each run's history stays under limits.historyEvents (5,000) / historyBytes (4 MB).`,
    `Replay on one replay worker (Worker.runReplayHistories, same bundle and codec; a warm-up replay first, so worker creation is not counted) grows with the run's history, not with the session: arms are ${ARM_ROUNDS} interleaved replays of the run history at the first checkpoint and at the longest checkpoint of the last run.`,
    `Checkpoints: ${checkpoints.map((c) => `${c.turns} turns: run ${c.run}, ${c.runEvents} events, ${c.runBytes} B, replay ${c.replayP50Ms} ms`).join('; ')}.`,
  ].join(' ');
  return [
    {
      name: 'history_growth',
      arms,
      notes,
      bytesPerTurn: Math.round(bytesPerTurn),
      eventsPerTurn: Math.round(eventsPerTurn * 10) / 10,
      handovers: runs - 1,
      ratioTo: { [Object.keys(arms)[1]]: Object.keys(arms)[0] },
      checkpoints: checkpoints.map(({ history: _h, ...c }) => c),
      series,
      chart: {
        title: 'history_growth',
        subtitle: 'per run: history KiB and replay ms against session turns',
        x: 'session turns',
        y: 'KiB / ms',
      },
    },
  ];
}

function last0<T>(xs: T[]): T {
  return xs[xs.length - 1];
}
