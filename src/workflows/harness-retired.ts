// Workarounds retired inside running sessions: `<harness>/<workaround>` -> the patch id that retires it.
//
// A session keeps the harness version it started with, so retiring a workaround for new sessions is only a
// matter of pointing agent files at another version. To stop it in sessions that are already running too, add
// an entry here: histories recorded before the deploy replay with the workaround (patched() is false there),
// and from the deploy on those sessions run without it. Once no open run predates the patch, use
// deprecatePatch and drop the harness version's workaround code; test/histories keeps one fixture per version,
// so the replay test says when code an old history needs is gone.
export const RETIRED_WORKAROUNDS: Readonly<Record<string, string>> = {};
