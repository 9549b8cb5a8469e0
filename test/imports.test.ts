// The floor plan of src/: no import circle, workflow code apart, no file past about 400 lines, failure types named
// in one catalogue.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '../src');
const MAX_LINES = 400;

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return sources(p);
    return d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** Each file's relative imports (type-only ones too: they are still a dependency of the reader), resolved to files. */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const resolve = (from: string, spec: string): string | undefined => {
    const base = path.resolve(path.dirname(from), spec);
    return [`${base}.ts`, path.join(base, 'index.ts')].find((f) => known.has(f));
  };
  return new Map(
    files.map((f) => {
      const info = ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true);
      const deps = info.importedFiles.map((i) => i.fileName).filter((s) => s.startsWith('.'));
      return [f, [...new Set(deps.map((s) => resolve(f, s)).filter((x): x is string => x !== undefined))]];
    }),
  );
}

/** Strongly connected components with more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) {
        on.delete(w);
        scc.push(path.relative(SRC, w));
        if (w === v) break;
      }
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** The relative imports of a file that bring in values (not `import type`), as written. */
function valueImports(file: string): string[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const out: string[] = [];
  for (const st of sf.statements) {
    if ((ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
      const typeOnly = ts.isImportDeclaration(st) ? st.importClause?.isTypeOnly === true : st.isTypeOnly;
      if (!typeOnly && st.moduleSpecifier.text.startsWith('.')) out.push(st.moduleSpecifier.text);
    }
  }
  return out;
}

/** Folders whose code runs in the workflow sandbox: they bring in values only from each other. */
const DETERMINISTIC = ['workflows', 'session', 'tools'];

describe('src/', () => {
  const files = sources(SRC);

  it('keeps workflow code apart: workflows/, session/ and tools/ import values only from each other', () => {
    const reaching = files
      .filter((f) => DETERMINISTIC.includes(path.relative(SRC, f).split(path.sep)[0]))
      .flatMap((f) => valueImports(f).map((spec) => [path.relative(SRC, f), path.relative(SRC, path.resolve(path.dirname(f), spec))] as const))
      .filter(([, to]) => !DETERMINISTIC.includes(to.split(path.sep)[0]));
    expect(reaching).toEqual([]);
  });

  it('keeps the workflow apart: nothing else in src/ imports from workflows/ (the session contract is session/contract.ts)', () => {
    const reaching = files
      .filter((f) => path.relative(SRC, f).split(path.sep)[0] !== 'workflows')
      .flatMap((f) => ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true).importedFiles.map((i) => [path.relative(SRC, f), i.fileName] as const))
      .filter(([from, spec]) => spec.startsWith('.') && path.relative(SRC, path.resolve(path.dirname(path.join(SRC, from)), spec)).split(path.sep)[0] === 'workflows');
    expect(reaching).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles(importGraph(files))).toEqual([]);
  });

  it(`has no file over ${MAX_LINES} lines`, () => {
    const long = files.map((f) => [path.relative(SRC, f), fs.readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > MAX_LINES);
    expect(long).toEqual([]);
  });
});

describe('failure types', () => {
  it('are named in the catalogue (src/session/failure-types.ts), not spelled out where they are raised', () => {
    const literal = /'[A-Z][A-Za-z]+Error\.[A-Za-z]+'/;
    const spelled = sources(SRC)
      .filter((f) => !f.endsWith(path.join('session', 'failure-types.ts')))
      .flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').map((line, i) => [`${path.relative(SRC, f)}:${i + 1}`, line] as const))
      .filter(([, line]) => literal.test(line))
      .map(([at]) => at);
    expect(spelled).toEqual([]);
  });
});
