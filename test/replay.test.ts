// Every recorded history in test/histories replays against the current workflow code without nondeterminism.
// `npm run record-histories` (test/record-histories.ts) records them.
import { Worker } from '@temporalio/worker';
import { createDataConverter } from '../src/codec';
import { FIXTURE_CODEC_KEY } from './helpers/test-keys';
import { workflowBundle } from './helpers/env';
import { recordedHistories } from './helpers/histories';

describe('recorded histories', () => {
  const histories = recordedHistories();

  it('has at least one recorded history', () => {
    expect(histories.length).toBeGreaterThan(0);
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    const results = [];
    // Fixtures recorded with encryption use the fixture key; older plain ones pass through the codec.
    const dataConverter = createDataConverter(FIXTURE_CODEC_KEY);
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: await workflowBundle(), dataConverter },
      histories,
    ))
      results.push(result);
    expect(results).toHaveLength(histories.length);
    for (const r of results)
      expect({ workflowId: r.workflowId, error: r.error?.message }).toEqual({
        workflowId: r.workflowId,
        error: undefined,
      });
  });
});
