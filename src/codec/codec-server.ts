// The remote codec endpoint the Temporal Web UI and CLI call (POST /encode, /decode), so people can read
// encrypted histories without the keys ever reaching the Temporal server.
import http from 'node:http';
import { closeServer, httpUrl, listen } from '../http/listen';
import { timingSafeEqual } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { JSONToPayload, payloadToJSON, type JSONPayload } from '@temporalio/common/lib/proto-utils';
import { z } from 'zod';
import { PlatformError } from '../session/platform-error';

/** The Web UI of `temporal server start-dev`. */
export const DEFAULT_UI_ORIGIN = 'http://localhost:8233';
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization';
const MAX_BODY_BYTES = 32 * 1024 * 1024;

// Each payload is proto JSON (every bytes field base64), read and written by the SDK's own proto JSON codec.
const BodySchema = z.object({ payloads: z.array(z.record(z.string(), z.unknown())) });

const OriginSchema = z
  .url()
  .transform((u) => new URL(u).origin)
  .refine((o) => /^https?:\/\//.test(o), 'must be an http(s) origin');

/** Normalises an origin such as `http://localhost:8233/` to `http://localhost:8233`; throws a readable error. */
export function parseOrigin(raw: string): string {
  const r = OriginSchema.safeParse(raw);
  if (!r.success) throw new Error(`invalid origin ${raw}: ${r.error.issues[0].message}`);
  return r.data;
}

class HttpError extends PlatformError {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

function fromJson(p: Record<string, unknown>, index: number): Payload {
  try {
    return JSONToPayload(p as JSONPayload);
  } catch (e) {
    throw new HttpError(400, `invalid body: payloads.${index} is not a proto JSON payload (${(e as Error).message})`);
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Browser origins allowed to call (CORS) and, without a token, to be trusted; default the dev server's Web UI. */
  origins?: string[];
  /** When set, every request needs `Authorization: Bearer <token>` (CODEC_SERVER_TOKEN). */
  token?: string;
  /** X-Namespace values served (an empty or absent header passes); default any. */
  namespaces?: string[];
  log?: (msg: string) => void;
}

export class CodecServer {
  private server?: http.Server;
  private readonly origins: Set<string>;
  url = '';

  constructor(private readonly opts: CodecServerOptions) {
    this.origins = new Set((opts.origins ?? [DEFAULT_UI_ORIGIN]).map(parseOrigin));
  }

  /** Listens on loopback by default: the endpoint hands out plaintext, so it is not for the open network. */
  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    const bound = await listen(server, port, host);
    this.server = server;
    this.url = httpUrl(host, bound);
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await closeServer(server);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const origin = req.headers.origin;
    const originAllowed = origin !== undefined && this.origins.has(origin);
    const cors: Record<string, string> = originAllowed
      ? {
          'Access-Control-Allow-Origin': origin,
          'Access-Control-Allow-Methods': 'POST, OPTIONS',
          'Access-Control-Allow-Headers': ALLOWED_HEADERS,
          'Access-Control-Max-Age': '600',
        }
      : {};
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      const text = body === undefined ? '' : JSON.stringify(body);
      res.writeHead(status, {
        ...cors,
        ...headers,
        Vary: 'Origin',
        'Cache-Control': 'no-store',
        ...(text ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) } : {}),
      });
      res.end(text);
    };
    try {
      const url = new URL(req.url ?? '/', 'http://codec.invalid');
      const op = url.pathname === '/encode' ? 'encode' : url.pathname === '/decode' ? 'decode' : undefined;
      if (!op) throw new HttpError(404, `no such endpoint ${url.pathname}; use POST /encode or /decode`);
      if (req.method === 'OPTIONS') {
        if (!originAllowed) throw new HttpError(403, 'origin not allowed');
        return send(204, undefined);
      }
      if (req.method !== 'POST') throw new HttpError(405, 'use POST', { Allow: 'POST, OPTIONS' });
      this.authorize(req, origin, originAllowed);
      // The Temporal CLI sends an empty X-Namespace, so only a named namespace is checked.
      const namespace = req.headers['x-namespace'];
      if (
        typeof namespace === 'string' &&
        namespace !== '' &&
        this.opts.namespaces &&
        !this.opts.namespaces.includes(namespace)
      ) {
        throw new HttpError(403, `namespace ${namespace} is not served here`);
      }
      if (!/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
        throw new HttpError(415, 'Content-Type must be application/json');
      const body = BodySchema.safeParse(await readJson(req));
      if (!body.success)
        throw new HttpError(
          400,
          `invalid body: ${body.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
        );
      const input = body.data.payloads.map(fromJson);
      let output: Payload[];
      try {
        output = op === 'encode' ? await this.opts.codec.encode(input) : await this.opts.codec.decode(input);
      } catch (e) {
        throw new HttpError(400, `cannot ${op}: ${(e as Error).message}`);
      }
      send(200, { payloads: output.map(payloadToJSON) });
    } catch (e) {
      if (e instanceof HttpError) return send(e.status, { error: e.message }, e.headers);
      this.opts.log?.(`codec server error: ${(e as Error).message}`);
      send(500, { error: 'internal error' });
    }
  }

  // With a token, only the token counts; without one (local development) the browser's Origin does, since the
  // dev server's Web UI has no way to send a secret of ours.
  private authorize(req: http.IncomingMessage, origin: string | undefined, originAllowed: boolean) {
    if (origin !== undefined && !originAllowed) throw new HttpError(403, 'origin not allowed');
    if (this.opts.token) {
      const auth = req.headers.authorization ?? '';
      const match = /^Bearer (.+)$/i.exec(auth);
      if (!match || !sameSecret(match[1], this.opts.token))
        throw new HttpError(401, 'missing or wrong bearer token', { 'WWW-Authenticate': 'Bearer' });
      return;
    }
    if (!originAllowed)
      throw new HttpError(
        401,
        'requests need an allowed Origin (or set CODEC_SERVER_TOKEN and send it as a bearer token)',
      );
  }
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
}
