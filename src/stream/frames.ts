// The client side of a stream endpoint (a worker's, or the API's relay): one GET of Server-Sent Events whose
// `data:` lines are JSON frames, StreamFrames unless another parser is given. Frames that do not parse are
// skipped: what comes this way is never the truth on its own.
import http from 'node:http';
import https from 'node:https';
import { StreamFrameSchema, type StreamFrame } from './hub';

/**
 * Opens `target` with `headers` and calls `onFrame` with each frame. `onEnd` is called once, when the stream
 * cannot be opened (with the reason: an HTTP status or the connection error) or ends (with '').
 */
export function openFrameStream<F = StreamFrame>(
  target: URL,
  headers: Record<string, string>,
  onFrame: (f: F) => void,
  onEnd: (why: string) => void,
  parse: (raw: unknown) => F | undefined = (raw) => StreamFrameSchema.safeParse(raw).data as F | undefined,
): http.ClientRequest {
  let ended = false;
  const end = (why: string) => {
    if (ended) return;
    ended = true;
    onEnd(why);
  };
  const get = target.protocol === 'https:' ? https.get : http.get;
  const req = get(target, { headers: { ...headers, accept: 'text/event-stream' } }, (res) => {
    if (res.statusCode !== 200) {
      // The API answers with its error envelope; its message says what to fix.
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body = (body + c).slice(0, 4096)));
      res.on('error', () => end(`HTTP ${res.statusCode}`));
      res.on('end', () => {
        let message: unknown;
        try {
          message = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
        } catch {
          message = undefined;
        }
        end(`HTTP ${res.statusCode}${typeof message === 'string' ? `: ${message.slice(0, 300)}` : ''}`);
      });
      return;
    }
    res.setEncoding('utf8');
    let buf = '';
    res.on('data', (chunk: string) => {
      buf += chunk;
      for (let at = buf.indexOf('\n\n'); at >= 0; at = buf.indexOf('\n\n')) {
        const block = buf.slice(0, at);
        buf = buf.slice(at + 2);
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (!data) continue;
        let parsed: F | undefined;
        try {
          parsed = parse(JSON.parse(data));
        } catch {
          continue;
        }
        if (parsed !== undefined) onFrame(parsed);
      }
    });
    res.on('end', () => end(''));
    res.on('error', () => end(''));
  });
  req.on('error', (e) => end(e.message));
  return req;
}
