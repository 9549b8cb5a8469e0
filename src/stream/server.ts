// The worker's stream endpoint: `GET /v1/sessions/<id>/stream` answers Server-Sent Events, one JSON
// StreamFrame per event, starting with the session's streams in progress; `GET /v1/sessions/<id>/log`, on a brain
// worker, each workflow task's new events (src/stream/log-hub.ts). `GET /healthz` answers ok.
import http from 'node:http';
import { closeServer, httpUrl, listen } from '../infra/http';
import os from 'node:os';
import type { StreamHub } from './hub';
import type { LogPushHub } from './log-hub';
import { tokenMatches } from './token';

const SESSION_PATH = /^\/v1\/sessions\/([A-Za-z0-9._-]{1,200})\/(stream|log)$/;
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
  url = '';
  /** A brain worker's pushed log batches, served once set (the hub needs the identity, which needs this server's URL). */
  log?: LogPushHub;

  constructor(private readonly opts: StreamServerOptions) {}

  async start(): Promise<string> {
    const at = this.opts.listen.lastIndexOf(':');
    const host = this.opts.listen.slice(0, at);
    const port = Number(this.opts.listen.slice(at + 1));
    this.server = http.createServer((req, res) => this.handle(req, res));
    const bound = await listen(this.server, port, host);
    // The worker's own connections keep its process alive; this endpoint never should on its own.
    this.server.unref();
    const shown = host === '0.0.0.0' || host === '::' ? os.hostname() : host;
    this.url = this.opts.advertise ?? httpUrl(shown, bound);
    return this.url;
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://stream');
    if (req.method === 'GET' && url.pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end('ok\n');
    }
    const m = SESSION_PATH.exec(url.pathname);
    if (req.method !== 'GET' || !m || (m[2] === 'log' && !this.log)) {
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
    const send = (frame: unknown) => res.write(`data: ${JSON.stringify(frame)}\n\n`);
    const unsubscribe = m[2] === 'log' ? this.log!.subscribe(sessionId, send) : this.opts.hub.subscribe(sessionId, send);
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
    res.on('close', () => {
      clearInterval(keepalive);
      unsubscribe();
    });
  }
}
