// The recorded histories in test/histories, each under the id it was recorded with (`recorded-<name>`: a child's
// id derives from its parent's; `sesn_recorded-<name>` for `api-<name>.json`), as the replay test and the workflow_cpu benchmark replay them.
import fs from 'node:fs';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';

const HISTORIES_DIR = path.join(__dirname, '..', 'histories');

/** `api-<name>.json` is an API session's (`sesn_recorded-<name>`), whose workflow reports to the webhook outbox. */
const workflowIdOf = (file: string) => {
  const name = file.replace(/(-run-\d+)?\.json$/, '');
  return name.startsWith('api-') ? `sesn_recorded-${name.slice(4)}` : `recorded-${name}`;
};

export function recordedHistories(): { workflowId: string; history: temporal.api.history.v1.IHistory }[] {
  return fs
    .readdirSync(HISTORIES_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({
      workflowId: workflowIdOf(f),
      history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, f), 'utf8'))),
    }));
}
