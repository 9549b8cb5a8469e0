// The soak's environment, set before any helper reads it: payloads are encrypted under the replay fixtures' key
// (so the history of a run that failed replays in test/replay.test.ts), events are archived in a data directory of
// the soak's own, and workers log warnings only (a long run would otherwise fill memory with their stderr).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

process.env.RECORD_HISTORIES = '1';
process.env.LOG_LEVEL ??= 'WARN';

/** Set when the soak made DATA_DIR itself, and removes it when it is done. */
export const OWN_DATA_DIR =
  process.env.DATA_DIR === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'agents-soak-data-')) : undefined;
if (OWN_DATA_DIR) process.env.DATA_DIR = OWN_DATA_DIR;
