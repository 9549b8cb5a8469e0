// Every recorded history in test/histories replays against the current workflow code without nondeterminism.
// `npm run record-histories` (test/record-histories.ts) records them.
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { createDataConverter } from '../src/codec';
import { FIXTURE_CODEC_KEY } from './helpers/test-keys';
import { workflowBundle } from './helpers/env';

const DIR = path.join(__dirname, 'histories');

describe('recorded histories', () => {
  const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.json'));

  it('has at least one recorded history', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    // A fixture replays under the id it was recorded with (`recorded-<name>`): a child's id derives from its parent's.
    const histories = files.map((f) => ({ workflowId: `recorded-${f.replace(/(-run-\d+)?\.json$/, '')}`, history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(DIR, f), 'utf8'))) }));
    const results = [];
    // Fixtures recorded with encryption use the fixture key; older plain ones pass through the codec.
    const dataConverter = createDataConverter(FIXTURE_CODEC_KEY);
    for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle(), dataConverter }, histories)) results.push(result);
    expect(results).toHaveLength(files.length);
    for (const r of results) expect({ workflowId: r.workflowId, error: r.error?.message }).toEqual({ workflowId: r.workflowId, error: undefined });
  });
});
