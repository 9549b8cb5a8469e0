// How the session workflow's code is bundled for brain workers: one set of options for the bundle `npm run build`
// writes beside the compiled code, for a worker that bundles at start (run from source) and for the tests.
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { failureConverterPath } from '../codec';

/** Workflow interceptors every brain runs: a bundle built for a worker must include them. */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('../workflows/run-guard')];

/**
 * Modules evaluated once per worker and shared by every cached session, instead of once per session: zod (through
 * src/session/zod-preload.ts, which the bundler cannot drop), and src/session/shared.ts, whose schemas live in its
 * closure. The SDK deep-freezes what shared modules export, except zod's (patches/@temporalio+worker+*.patch): zod
 * changes its own objects as it runs (a pattern's lastIndex, lazily computed values), only ever as its input
 * decides, so sharing it lets no session see another's state.
 */
export const PRELOADED_MODULES = [require.resolve('../session/zod-preload'), require.resolve('../session/shared')];

export const WORKFLOW_BUNDLE_OPTIONS = {
  workflowsPath: require.resolve('../workflows'),
  workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
  failureConverterPath,
  preloadModules: PRELOADED_MODULES,
} satisfies BundleOptions;

/** Where `npm run build` leaves the bundle: dist/workflow-bundle.js, beside the code it was built from. */
export const PREBUILT_BUNDLE = path.join(__dirname, '..', 'workflow-bundle.js');

/** The bundle a brain worker runs (a few seconds of webpack). */
export function buildWorkflowBundle(logger?: BundleOptions['logger']): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger });
}

/** The directories whose code the bundle holds. */
const BUNDLED_DIRS = ['workflows', 'session', 'tools', 'codec'].map((d) => path.join(__dirname, '..', d));

/**
 * The prebuilt bundle, when this code was built with one and none of the code it holds changed since: a worker
 * then starts without bundling. A compile without the bundle step leaves it older than the code, and unused.
 */
export function prebuiltBundle(): { codePath: string } | undefined {
  let built: number;
  try {
    built = fs.statSync(PREBUILT_BUNDLE).mtimeMs;
  } catch {
    return undefined;
  }
  for (const dir of BUNDLED_DIRS) {
    let files: string[];
    try {
      files = fs.readdirSync(dir);
    } catch {
      continue;
    }
    if (files.some((f) => f.endsWith('.js') && fs.statSync(path.join(dir, f)).mtimeMs > built)) return undefined;
  }
  return { codePath: PREBUILT_BUNDLE };
}

const quiet = {
  info() {},
  warn() {},
  debug() {},
  trace() {},
  log() {},
  error: (m: string) => process.stderr.write(`${m}\n`),
} as unknown as BundleOptions['logger'];

if (require.main === module) {
  buildWorkflowBundle(quiet).then(
    ({ code }) => {
      fs.writeFileSync(PREBUILT_BUNDLE, code);
      process.stdout.write(`workflow bundle: ${PREBUILT_BUNDLE} ${code.length} B\n`);
    },
    (err: unknown) => {
      process.stderr.write(`workflow bundle failed: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
