// The schemas a brain worker's sessions share (src/session/shared.ts): each built once, under a key no other
// definition uses, and every schema of the code the workflow bundle holds built that way.
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import ts from 'typescript';
import { shared } from '../src/session/shared';
import { threadHeaps } from '../src/brain/thread-heaps';
import { buildWorkflowBundle } from '../src/brain/workflow-bundle';

const SRC = path.resolve(__dirname, '../src');
/** The directories of session code the workflow bundle holds beside src/workflows. */
const SHARED_DIRS = ['session', 'tools'];

const files = SHARED_DIRS.flatMap((d) =>
  fs
    .readdirSync(path.join(SRC, d))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(SRC, d, f)),
);

interface TopLevelSchema {
  file: string;
  name: string;
  /** The key its shared() call gives, or undefined when the schema is built without shared(). */
  key?: string;
}

/** The root of a call chain such as `z.object({...}).strict()` or `OtherSchema.extend({...})`. */
function chainRoot(e: ts.Expression): ts.Expression {
  while (ts.isCallExpression(e) || ts.isPropertyAccessExpression(e)) e = e.expression;
  return e;
}

function topLevelSchemas(file: string): TopLevelSchema[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: TopLevelSchema[] = [];
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    for (const d of st.declarationList.declarations) {
      if (!d.initializer || !ts.isIdentifier(d.name)) continue;
      const init = d.initializer;
      if (ts.isCallExpression(init) && ts.isIdentifier(init.expression) && init.expression.text === 'shared') {
        const [key] = init.arguments;
        out.push({
          file,
          name: d.name.text,
          key: key && ts.isStringLiteral(key) ? key.text : '<not a string literal>',
        });
        continue;
      }
      const root = chainRoot(init);
      const built =
        ts.isCallExpression(init) && ts.isIdentifier(root) && (root.text === 'z' || root.text.endsWith('Schema'));
      if (built) out.push({ file, name: d.name.text });
    }
  }
  return out;
}

const schemas = files.flatMap(topLevelSchemas);

describe('shared schemas', () => {
  it('builds every top-level schema of the bundled session code through shared()', () => {
    expect(schemas.filter((s) => s.key).length).toBeGreaterThan(50);
    expect(schemas.filter((s) => !s.key).map((s) => `${path.relative(SRC, s.file)}: ${s.name}`)).toEqual([]);
  });

  it('keys each definition <module>.<const>, so no two definitions share a key', () => {
    const wrong = schemas.filter((s) => s.key !== `${path.basename(s.file, '.ts')}.${s.name}`);
    expect(wrong.map((s) => `${path.relative(SRC, s.file)}: ${s.name} keyed ${s.key}`)).toEqual([]);
    const keys = schemas.map((s) => s.key);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('builds a key once and hands the first build to every later caller', () => {
    const build = jest.fn(() => ({ built: Symbol('schema') }));
    const first = shared('shared-schemas.test.once', build);
    const second = shared('shared-schemas.test.once', () => ({ built: Symbol('another') }));
    expect(second).toBe(first);
    expect(build).toHaveBeenCalledTimes(1);
  });
});

describe('the workflow bundle', () => {
  it('evaluates zod in its preload, once per worker, not in each session', async () => {
    const { code } = await buildWorkflowBundle();
    // The bundler drops a bare require of zod (it declares itself free of side effects); the preload must reach
    // zod through a module that reads it.
    const preload = /exports\.preloadModules = function preloadModules\(\) \{([\s\S]*?)\n\}/.exec(code)?.[1] ?? '';
    const required = [...preload.matchAll(/__webpack_require__\([^)]*"([^"]+)"\)/g)].map((m) => m[1]);
    const preloadId = required.find((id) => id.endsWith('session/zod-preload.ts'));
    expect(preloadId).toBeDefined();
    const start = code.indexOf(`"${preloadId}"`);
    const body = code.slice(start, code.indexOf('/***/ }', start));
    expect(body).toMatch(/__webpack_require__\([^)]*"[^"]*node_modules\/zod\//);
  }, 120_000);
});

describe('threadHeaps', () => {
  it("reads a worker thread's heap, which process.memoryUsage() does not report", async () => {
    // A thread that holds about 40 MB of objects until it is told to stop.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const held = Array.from({ length: 500000 }, (_, i) => ({ i, s: 'x'.repeat(40) + i }));
       parentPort.postMessage('ready');
       parentPort.on('message', () => { held.length = 0; process.exit(0); });`,
      { eval: true },
    );
    try {
      await new Promise((resolve) => worker.once('message', resolve));
      const heaps = await threadHeaps();
      expect(heaps).toHaveLength(1);
      expect(heaps[0].title).toMatch(/worker/);
      expect(heaps[0].usedBytes).toBeGreaterThan(20 * 2 ** 20);
      expect(heaps[0].totalBytes).toBeGreaterThanOrEqual(heaps[0].usedBytes);
      // The inspector session detached: a second read works the same way.
      expect(await threadHeaps()).toHaveLength(1);
    } finally {
      worker.postMessage('stop');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  });
});
