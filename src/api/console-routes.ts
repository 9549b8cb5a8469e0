// Serves the web console at /console: the few files of its bundle (build.ts), read once at start and answered
// with ETags, and index.html for each of the console's own pages, so a reload or a shared link opens the page it
// names. The console itself talks only to the public /v1 routes, with the key in a header.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiApp } from './route-context';
import { DEFAULT_PRICES, type PriceTable } from '../observability/pricing';
import { CONSOLE_STATIC } from '../console/bundle-paths';

export const CONSOLE_PATH = '/console';

/** Only this origin, for scripts, styles and requests alike; no frames. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The bundle's files by name; none when it is not built. */
function loadBundle(dir: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  if (!fs.existsSync(path.join(dir, 'index.html'))) return files;
  for (const name of fs.readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const body = fs.readFileSync(path.join(dir, name));
    files.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return files;
}

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}

function send(req: FastifyRequest, reply: FastifyReply, asset: Asset, cache: string): FastifyReply {
  secure(reply).header('etag', asset.etag).header('cache-control', cache);
  if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

/** Registers /console on `app`; `prices` turn usage into cost on the sessions list. */
export function consoleRoutes(app: ApiApp, opts: { prices?: PriceTable; dir?: string } = {}): void {
  const bundle = loadBundle(opts.dir ?? CONSOLE_STATIC);
  const prices = opts.prices ?? DEFAULT_PRICES;
  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    const index = bundle.get('index.html');
    if (!index)
      return secure(reply)
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build`.\n');
    return send(req, reply, index, 'no-cache');
  };
  for (const url of [
    CONSOLE_PATH,
    `${CONSOLE_PATH}/`,
    `${CONSOLE_PATH}/new`,
    `${CONSOLE_PATH}/sessions/:session_id`,
    `${CONSOLE_PATH}/memory_stores`,
    `${CONSOLE_PATH}/memory_stores/:memory_store_id`,
    `${CONSOLE_PATH}/environments`,
    `${CONSOLE_PATH}/environments/:environment_id`,
    `${CONSOLE_PATH}/deployments`,
    `${CONSOLE_PATH}/webhooks`,
  ])
    app.get(url, { schema: { hide: true } }, page);
  // Only the bundle's own names: a request for anything else is the API's 404.
  for (const [name, asset] of bundle) {
    if (name !== 'index.html')
      app.get(`${CONSOLE_PATH}/static/${name}`, { schema: { hide: true } }, async (req, reply) =>
        send(req, reply, asset, 'no-cache'),
      );
  }
  // List prices are no secret; the console needs them to show cost, and they follow MODEL_PRICES.
  app.get(`${CONSOLE_PATH}/prices.json`, { schema: { hide: true } }, async (_req, reply) => secure(reply).send(prices));
}
