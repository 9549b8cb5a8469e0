// Every dependency earns its place: some file imports it, or docs/dependencies.md says why it stays.
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const CODE_DIRS = ['src', 'test', 'scripts', 'bench'];
const CONFIG_FILES = ['eslint.config.mjs', 'jest.config.js'];

function codeFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return d.name === 'node_modules' || d.name === 'artifacts' ? [] : codeFiles(p);
    return /\.(ts|tsx|mts|mjs|js)$/.test(d.name) && !d.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The packages named by import specifiers (`@scope/name` or `name`, any subpath dropped). */
function importedPackages(): Set<string> {
  const out = new Set<string>();
  const files = [
    ...CODE_DIRS.flatMap((d) => codeFiles(path.join(ROOT, d))),
    ...CONFIG_FILES.map((f) => path.join(ROOT, f)),
  ];
  const spec = /(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)['"]([^'"./][^'"]*)['"]/g;
  for (const f of files) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(spec)) {
      const parts = m[1].replace(/^node:/, '').split('/');
      out.add(parts[0].startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]);
    }
  }
  return out;
}

function declared(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  return [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})];
}

/** The packages docs/dependencies.md names in its table's first column. */
function explained(): Set<string> {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/dependencies.md'), 'utf8');
  const names = doc
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .flatMap((l) => [...l.split('|')[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]));
  return new Set(names);
}

it('imports every dependency somewhere, or says why it stays', () => {
  const imported = importedPackages();
  const why = explained();
  const typesFor = (d: string) =>
    d.startsWith('@types/') && imported.has(d.slice('@types/'.length).replace(/^(.*)__(.*)$/, '@$1/$2'));
  expect(declared().filter((d) => !imported.has(d) && !why.has(d) && !typesFor(d))).toEqual([]);
});

it('explains only packages that package.json still declares', () => {
  const all = new Set(declared());
  expect([...explained()].filter((d) => !all.has(d))).toEqual([]);
});
