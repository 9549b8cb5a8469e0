// Schemas built once per process and shared by every session a brain worker runs.
//
// A brain worker's workflow thread evaluates the session code's modules once for each session it runs, so that no
// state leaks between sessions: most of a cached session's memory was its own copy of about a thousand zod schema
// objects (the agent file, signals and updates, tool inputs). A schema keeps no session state, so this module, which
// the workflow bundle preloads (src/brain/workflow-bundle.ts), keeps the first copy each schema's module builds and
// hands that one to every later evaluation of the module.
//
// The SDK deep-freezes what a preloaded module exports, and zod cannot run a frozen schema (it completes a schema
// on its first parses, and resets a pattern's lastIndex before each match); the schemas sit in this module's closure,
// which no freeze reaches. Anywhere else (the API, the CLI, a worker's main thread) each module is evaluated once and
// this is only a map lookup.

const built = new Map<string, unknown>();

/**
 * The schema `key` names, built by `build` the first time any session's code asks for it. A key names one
 * definition in the whole code base (`<module>.<const>`; test/shared-schemas.test.ts checks that no two share one),
 * so `build` must give the same schema whichever evaluation of its module runs it: constants, pure functions and other shared schemas only.
 */
export function shared<T>(key: string, build: () => T): T {
  if (built.has(key)) return built.get(key) as T;
  const value = build();
  built.set(key, value);
  return value;
}
