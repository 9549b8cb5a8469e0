// Server-Sent Events as the project's servers write them (the API's streams, a worker's stream endpoint, the local
// model server): the response head, one frame's text, comments, and a keepalive comment while the stream is open.
import type http from 'node:http';

export interface SseFrame {
  id?: string;
  event?: string;
  /** Sent as one line of JSON. */
  data: unknown;
}

/** The text of one event: `id:` and `event:` lines when given, then `data:` and the blank line that ends it. */
export function sseFrame({ id, event, data }: SseFrame): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}${event !== undefined ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

/** A comment line: ignored by clients, it keeps proxies and idle timers from closing the connection. */
export function sseComment(text: string): string {
  return `: ${text}\n\n`;
}

export interface SseOptions {
  /** More response headers (a request id, say). */
  headers?: Record<string, string>;
  /** A `: keepalive` comment this often while the stream is open. */
  keepaliveMs?: number;
  /** A comment written first, so a client sees the stream open before any event. */
  greeting?: string;
}

export interface SseStream {
  /** Writes frames' text as one write (one write per batch keeps a fan-out to many connections cheap). */
  write(text: string): void;
  send(frame: SseFrame): void;
  /** Settles when the client goes away; the keepalive stops then. */
  closed: Promise<void>;
}

/** Answers 200 with an event stream on `res`. */
export function openSse(res: http.ServerResponse, options: SseOptions = {}): SseStream {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...options.headers,
  });
  res.flushHeaders();
  if (options.greeting !== undefined) res.write(sseComment(options.greeting));
  const keepalive =
    options.keepaliveMs !== undefined
      ? setInterval(() => res.write(sseComment('keepalive')), options.keepaliveMs)
      : undefined;
  const closed = new Promise<void>((resolve) =>
    res.on('close', () => {
      clearInterval(keepalive);
      resolve();
    }),
  );
  return {
    write: (text) => void res.write(text),
    send: (frame) => void res.write(sseFrame(frame)),
    closed,
  };
}
