// The worker's stream endpoint: `GET /v1/sessions/<id>/stream` answers Server-Sent Events, one JSON
// StreamFrame per event, starting with the session's streams in progress. `GET /healthz` answers ok.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import type { StreamHub } from './hub';
import { tokenMatches } from './token';

const SESSION_PATH = /^\/v1\/sessions\/([A-Za-z0-9._-]{1,200})\/stream$/;
const KEEPALIVE_MS = 15_000;

export interface StreamServerOptions {
  hub: StreamHub;
  /** Codec keys; a request needs the session's token under one of them. */
  keys: Buffer[];
  /** `HOST:PORT` to listen on; port 0 picks a free one. */
  listen: string;
  /** The URL others reach this server at; default: the listen address (the hostname when it is 0.0.0.0). */
  advertise?: string;
}

export class StreamServer {
  private server?: http.Server;
  private readonly sockets = new Set<import('node:net').Socket>();
  url = '';

  constructor(private readonly opts: StreamServerOptions) {}

  async start(): Promise<string> {
    const at = this.opts.listen.lastIndexOf(':');
    const host = this.opts.listen.slice(0, at);
    const port = Number(this.opts.listen.slice(at + 1));
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    // The worker's own connections keep its process alive; this endpoint never should on its own.
    this.server.unref();
    const bound = (this.server.address() as AddressInfo).port;
    const shown = host === '0.0.0.0' || host === '::' ? os.hostname() : host;
    this.url = this.opts.advertise ?? `http://${shown.includes(':') ? `[${shown}]` : shown}:${bound}`;
    return this.url;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://stream');
    if (req.method === 'GET' && url.pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end('ok\n');
    }
    const m = SESSION_PATH.exec(url.pathname);
    if (req.method !== 'GET' || !m) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return void res.end('not found\n');
    }
    const sessionId = m[1];
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !tokenMatches(this.opts.keys, sessionId, token)) {
      res.writeHead(401, { 'content-type': 'text/plain' });
      return void res.end('a stream token for this session is required\n');
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    const unsubscribe = this.opts.hub.subscribe(sessionId, (frame) => res.write(`data: ${JSON.stringify(frame)}\n\n`));
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
    res.on('close', () => {
      clearInterval(keepalive);
      unsubscribe();
    });
  }
}
