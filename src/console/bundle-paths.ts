// Where the web console's sources are and where its bundle goes: the same paths from src/ (ts-jest) and dist/.
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The browser code: TSX over Preact, bundled by build.ts. */
export const CONSOLE_SOURCE = path.join(ROOT, 'src/console/app');
/** The bundle `agents api` serves at /console: index.html, app.js, app.css. */
export const CONSOLE_STATIC = path.join(ROOT, 'dist/console/static');
