// The worker's stream endpoint: `GET /v1/sessions/<id>/stream` answers Server-Sent Events, one JSON
// StreamFrame per event, starting with the session's streams in progress; `GET /v1/sessions/<id>/log`, on a brain
// worker, each workflow task's new events (src/log/log-push-hub.ts). `GET /healthz` answers ok.
import http from 'node:http';
import { closeServer, httpUrl, listen } from './http/listen';
import { openSse } from './http/sse';
import os from 'node:os';
import type { StreamHub } from './stream/hub';
import type { LogPushHub } from './log/log-push-hub';
import { tokenMatches } from './stream/token';
import { PEER_STREAM_PATH, PEER_TOKEN_SCOPE, type InflightActivities } from './brain/peer-liveness';

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
  /** A brain worker's running activities, for its peers (src/brain/peer-liveness.ts); served once set. */
  activities?: InflightActivities;

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
    if (req.method === 'GET' && url.pathname === PEER_STREAM_PATH && this.activities) {
      return this.serve(req, res, PEER_TOKEN_SCOPE, (send) => this.activities!.subscribe(send));
    }
    const m = SESSION_PATH.exec(url.pathname);
    if (req.method !== 'GET' || !m || (m[2] === 'log' && !this.log)) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return void res.end('not found\n');
    }
    const sessionId = m[1];
    this.serve(req, res, sessionId, (send) =>
      m[2] === 'log' ? this.log!.subscribe(sessionId, send) : this.opts.hub.subscribe(sessionId, send),
    );
  }

  /** Answers Server-Sent Events from `subscribe` to a request bearing the token for `scope`. */
  private serve(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    scope: string,
    subscribe: (send: (frame: unknown) => void) => () => void,
  ): void {
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !tokenMatches(this.opts.keys, scope, token)) {
      res.writeHead(401, { 'content-type': 'text/plain' });
      return void res.end(
        scope === PEER_TOKEN_SCOPE ? 'a peer token is required\n' : 'a stream token for this session is required\n',
      );
    }
    const sse = openSse(res, { keepaliveMs: KEEPALIVE_MS });
    const unsubscribe = subscribe((frame) => sse.send({ data: frame }));
    void sse.closed.then(unsubscribe);
  }
}
