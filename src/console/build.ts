// Bundles the web console for `npm run build`: src/console/app (TSX over Preact) into one minified script and one
// stylesheet beside index.html in dist/console/static, so `agents api` serves it with no request to another host.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { CONSOLE_SOURCE, CONSOLE_STATIC } from './bundle-paths';

export interface ConsoleBundle {
  /** Bytes of each file written, by name. */
  files: Record<string, number>;
}

export async function buildConsole(outDir = CONSOLE_STATIC): Promise<ConsoleBundle> {
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: { app: path.join(CONSOLE_SOURCE, 'main.tsx') },
    outdir: outDir,
    bundle: true,
    minify: true,
    sourcemap: false,
    format: 'esm',
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
    // Every byte served comes from this bundle: no import may reach for the network at run time.
    external: [],
  });
  fs.copyFileSync(path.join(CONSOLE_SOURCE, 'index.html'), path.join(outDir, 'index.html'));
  fs.copyFileSync(path.join(CONSOLE_SOURCE, 'style.css'), path.join(outDir, 'app.css'));
  const files = Object.fromEntries(fs.readdirSync(outDir).map((f) => [f, fs.statSync(path.join(outDir, f)).size]));
  return { files };
}

if (require.main === module) {
  buildConsole().then(
    ({ files }) =>
      process.stdout.write(
        `console: ${Object.entries(files)
          .map(([f, n]) => `${f} ${n} B`)
          .join(', ')}\n`,
      ),
    (err: unknown) => {
      process.stderr.write(`console build failed: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
