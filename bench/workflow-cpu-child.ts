// One arm of bench/workflow-cpu.ts: a replay worker that replays every recorded history in test/histories once per
// line on stdin and answers with the pass's time in ms. BRAIN_WORKFLOW_STACK_TRACES in its environment decides
// whether the SDK's promise hook runs (patches/@temporalio+worker+1.24.0.patch).
import path from 'node:path';
import readline from 'node:readline';
import { Worker } from '@temporalio/worker';
import { createDataConverter } from '../src/codec';
import { FIXTURE_CODEC_KEY } from '../test/helpers/test-keys';
import { recordedHistories } from '../test/helpers/histories';

/** The bundle `npm run build` writes (`npm run bench` builds first). */
const BUNDLE = path.join(__dirname, '..', 'dist', 'workflow-bundle.js');

async function main() {
  const histories = recordedHistories();
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  let passStart = 0;
  let left = 0;
  async function* feed() {
    for (;;) {
      const { done } = await lines.next();
      if (done) return;
      passStart = performance.now();
      left = histories.length;
      yield* histories;
    }
  }
  for await (const r of Worker.runReplayHistories(
    { workflowBundle: { codePath: BUNDLE }, dataConverter: createDataConverter(FIXTURE_CODEC_KEY) },
    feed(),
  )) {
    if (r.error) throw new Error(`${r.workflowId}: ${r.error.message}`);
    if (--left === 0)
      process.stdout.write(`${JSON.stringify({ ms: performance.now() - passStart, histories: histories.length })}\n`);
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
