// The recorded histories in test/histories, each under the id it was recorded with (`recorded-<name>`: a child's
// id derives from its parent's), as the replay test and the workflow_cpu benchmark replay them.
import fs from 'node:fs';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';

const HISTORIES_DIR = path.join(__dirname, '..', 'histories');

export function recordedHistories(): { workflowId: string; history: temporal.api.history.v1.IHistory }[] {
  return fs
    .readdirSync(HISTORIES_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({
      workflowId: `recorded-${f.replace(/(-run-\d+)?\.json$/, '')}`,
      history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, f), 'utf8'))),
    }));
}
