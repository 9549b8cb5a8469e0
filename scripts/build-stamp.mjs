// `node scripts/build-stamp.mjs write` (the end of `npm run build`) records a fingerprint of the build's inputs in
// dist/.build-stamp; `node scripts/build-stamp.mjs build-if-stale` (before `npm start` and `npm test`) runs
// `npm run build` only when the inputs changed since, so a fresh `npm install` (whose prepare builds) is not
// followed by a second identical build.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = path.join(root, 'dist', '.build-stamp');
const INPUT_DIRS = ['src', 'scripts', 'patches'];
const INPUT_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];

function walk(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile()) out.push(p);
  }
}

/** sha256 over every input's path, size and modification time. */
function fingerprint() {
  const files = [];
  for (const d of INPUT_DIRS) walk(path.join(root, d), files);
  for (const f of INPUT_FILES) files.push(path.join(root, f));
  const hash = createHash('sha256');
  for (const f of files.sort()) {
    let st;
    try {
      st = fs.statSync(f);
    } catch {
      hash.update(`${path.relative(root, f)} missing\n`);
      continue;
    }
    hash.update(`${path.relative(root, f)} ${st.size} ${st.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

const command = process.argv[2];
if (command === 'write') {
  fs.mkdirSync(path.dirname(STAMP), { recursive: true });
  fs.writeFileSync(STAMP, `${fingerprint()}\n`);
} else if (command === 'build-if-stale') {
  const recorded = fs.existsSync(STAMP) ? fs.readFileSync(STAMP, 'utf8').trim() : '';
  if (recorded && recorded === fingerprint()) {
    process.stderr.write('build: dist/ matches src/ (dist/.build-stamp); not rebuilding\n');
  } else {
    const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    process.exitCode = r.status ?? 1;
  }
} else {
  process.stderr.write('usage: build-stamp.mjs write | build-if-stale\n');
  process.exitCode = 2;
}
