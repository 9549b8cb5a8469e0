// Evaluates zod once per brain worker, before any session's code runs, so that every session the worker holds
// shares one copy of the library instead of evaluating its own (src/brain/workflow-bundle.ts, PRELOADED_MODULES).
// Listing the package itself does not do it: zod declares itself free of side effects, so the bundler drops a
// bare require of it whose value nobody reads. This module reads it, and builds one schema: zod sets its default
// locale and memoizer on its global config when the first schema is built, and that config is frozen with the
// worker's other globals once the preloaded modules have run.
import { z } from 'zod';

export const zodLoaded: boolean = z.object({ a: z.string() }).safeParse({ a: '' }).success;
