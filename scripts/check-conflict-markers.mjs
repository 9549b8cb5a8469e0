#!/usr/bin/env node
// Fails when any tracked file holds a merge-conflict marker line, so an unresolved merge never passes lint.
import { spawnSync } from 'node:child_process';

// The markers git writes: `<<<<<<< ours`, `=======`, `>>>>>>> theirs` (the bare middle one included).
const MARKER = '^(<<<<<<<|=======|>>>>>>>)( |$)';

const r = spawnSync('git', ['grep', '-n', '-I', '-E', MARKER], { encoding: 'utf8' });
if (r.status === 1) process.exit(0); // git grep: no match
if (r.status === 0) {
  process.stderr.write(`merge-conflict markers in tracked files (resolve them):\n${r.stdout}`);
  process.exit(1);
}
process.stderr.write(`check-conflict-markers: git grep failed (${r.status}): ${r.stderr}`);
process.exit(2);
