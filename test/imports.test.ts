// The floor plan of src/: rooms in a declared order that imports follow one way, no import circle, workflow code
// apart, no two files of one name, failure types named in one catalogue.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '../src');

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
    if (
      (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) &&
      st.moduleSpecifier &&
      ts.isStringLiteral(st.moduleSpecifier)
    ) {
      const typeOnly = ts.isImportDeclaration(st) ? st.importClause?.isTypeOnly === true : st.isTypeOnly;
      if (!typeOnly && st.moduleSpecifier.text.startsWith('.')) out.push(st.moduleSpecifier.text);
    }
  }
  return out;
}

/** Folders whose code runs in the workflow sandbox: they bring in values only from each other. */
const DETERMINISTIC = ['workflows', 'session', 'tools'];

/**
 * The floors of src/, top first. A room is a folder or a file at the top of src/ (named without its extension).
 * A room may import from rooms on its own floor or below, and no two rooms import each other, but session/ and tools/
 * (the deterministic core, whose kinds and schemas name each other). workflows/ sits above the activities it names as
 * types.
 */
const FLOORS: string[][] = [
  ['client', 'setup'],
  ['cli'],
  ['demo', 'doctor'],
  ['dev'],
  ['infra'],
  ['worker'],
  ['worker-endpoint'],
  ['api'],
  ['console'],
  ['session-ops', 'session-purge'],
  ['key-files'],
  ['workflows'],
  ['brain', 'hands', 'mcp', 'webhooks'],
  ['log'],
  ['archive', 'temporal-connection', 'temporal-errors'],
  ['config'],
  ['sandbox', 'vault', 'model', 'codec', 'observability', 'egress', 'stream'],
  ['storage', 'host', 'http'],
  ['session', 'tools'],
];
const floorOf = (room: string) => {
  const i = FLOORS.findIndex((floor) => floor.includes(room));
  return i < 0 ? -1 : FLOORS.length - i;
};
const roomOf = (file: string) => {
  const [first, ...rest] = path.relative(SRC, file).split(path.sep);
  return rest.length > 0 ? first : first.replace(/\.tsx?$/, '');
};

/**
 * File names that repeat outside index.ts: each pair has one file in src/workflows/ or src/hands/ (or is imported by
 * them under that name), which the session rewrite moves.
 */
const SHARED_NAMES: string[] = [];

describe('src/', () => {
  const files = sources(SRC);

  it('keeps workflow code apart: workflows/, session/ and tools/ import values only from each other', () => {
    const reaching = files
      .filter((f) => DETERMINISTIC.includes(path.relative(SRC, f).split(path.sep)[0]))
      .flatMap((f) =>
        valueImports(f).map(
          (spec) => [path.relative(SRC, f), path.relative(SRC, path.resolve(path.dirname(f), spec))] as const,
        ),
      )
      .filter(([, to]) => !DETERMINISTIC.includes(to.split(path.sep)[0]));
    expect(reaching).toEqual([]);
  });

  it('keeps the workflow apart: nothing else in src/ imports from workflows/ (the session contract is session/contract.ts)', () => {
    const reaching = files
      .filter((f) => path.relative(SRC, f).split(path.sep)[0] !== 'workflows')
      .flatMap((f) =>
        ts
          .preProcessFile(fs.readFileSync(f, 'utf8'), true, true)
          .importedFiles.map((i) => [path.relative(SRC, f), i.fileName] as const),
      )
      .filter(
        ([from, spec]) =>
          spec.startsWith('.') &&
          path.relative(SRC, path.resolve(path.dirname(path.join(SRC, from)), spec)).split(path.sep)[0] === 'workflows',
      );
    expect(reaching).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles(importGraph(files))).toEqual([]);
  });

  it('imports only down the floors: a room imports from its own floor or the ones below, never above', () => {
    const upward = files
      .flatMap((f) =>
        ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true).importedFiles.map((i) => [f, i.fileName] as const),
      )
      .filter(([, spec]) => spec.startsWith('.'))
      .map(([f, spec]) => [roomOf(f), roomOf(path.resolve(path.dirname(f), spec))] as const)
      .filter(([from, to]) => from !== to && floorOf(from) < floorOf(to))
      .map(([from, to]) => `${from} -> ${to}`);
    expect([...new Set(upward)]).toEqual([]);
  });

  it('has no two rooms importing each other', () => {
    const edges = new Set(
      files.flatMap((f) =>
        ts
          .preProcessFile(fs.readFileSync(f, 'utf8'), true, true)
          .importedFiles.filter((i) => i.fileName.startsWith('.'))
          .map((i) => `${roomOf(f)} -> ${roomOf(path.resolve(path.dirname(f), i.fileName))}`),
      ),
    );
    const mutual = [...edges].filter((e) => {
      const [from, to] = e.split(' -> ');
      return from < to && edges.has(`${to} -> ${from}`) && !(from === 'session' && to === 'tools');
    });
    expect(mutual).toEqual([]);
  });

  it('has every room, and only those, in the tree of docs/design/layout.md', () => {
    const doc = fs.readFileSync(path.resolve(__dirname, '../docs/design/layout.md'), 'utf8');
    const listed = [...doc.matchAll(/^ {2}([a-z][a-z0-9.-]*?)(\/|\.ts)? /gm)].map((m) => m[1]).sort();
    expect(listed).toEqual([...new Set(files.map(roomOf))].sort());
  });

  it('has every room on a floor', () => {
    const rooms = [...new Set(files.map(roomOf))];
    expect(rooms.filter((r) => floorOf(r) < 0)).toEqual([]);
  });

  it('has no two files of one name, but index.ts', () => {
    const byName = new Map<string, string[]>();
    for (const f of files)
      byName.set(path.basename(f), [...(byName.get(path.basename(f)) ?? []), path.relative(SRC, f)]);
    const repeated = [...byName].filter(
      ([name, at]) => at.length > 1 && name !== 'index.ts' && !SHARED_NAMES.includes(name),
    );
    expect(repeated).toEqual([]);
  });
});

describe('failure types', () => {
  it('are named in the catalogue (src/session/failure-types.ts), not spelled out where they are raised', () => {
    const literal = /'[A-Z][A-Za-z]+Error\.[A-Za-z]+'/;
    const spelled = sources(SRC)
      .filter((f) => !f.endsWith(path.join('session', 'failure-types.ts')))
      .flatMap((f) =>
        fs
          .readFileSync(f, 'utf8')
          .split('\n')
          .map((line, i) => [`${path.relative(SRC, f)}:${i + 1}`, line] as const),
      )
      .filter(([, line]) => literal.test(line))
      .map(([at]) => at);
    expect(spelled).toEqual([]);
  });
});
