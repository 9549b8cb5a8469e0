// The worker's stream endpoint: only a holder of the codec key gets a session's live deltas, a late subscriber
// gets the text so far, and a preview never grows past its cap.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import {
  MAX_PREVIEW_CHARS,
  StreamHub,
  identityWithStream,
  streamToken,
  streamUrlOf,
  type StreamFrame,
} from '../src/stream';
import { StreamServer } from '../src/worker-endpoint';
import { printable } from '../src/cli/session-watch';

const oldKey = randomBytes(32);
const newKey = randomBytes(32);
let hub: StreamHub;
let server: StreamServer;
beforeAll(async () => {
  hub = new StreamHub();
  server = new StreamServer({ hub, keys: [newKey, oldKey], listen: '127.0.0.1:0' });
  hub.worker = await server.start();
});
afterAll(async () => {
  await server.stop();
});

function get(
  sessionId: string,
  token?: string,
): Promise<{ status: number; frames: StreamFrame[]; res: http.IncomingMessage; req: http.ClientRequest }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${server.url}/v1/sessions/${sessionId}/stream`,
      { headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        const frames: StreamFrame[] = [];
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          for (let at = buf.indexOf('\n\n'); at >= 0; at = buf.indexOf('\n\n')) {
            const block = buf.slice(0, at);
            buf = buf.slice(at + 2);
            if (block.startsWith('data: ')) frames.push(JSON.parse(block.slice(6)) as StreamFrame);
          }
        });
        resolve({ status: res.statusCode ?? 0, frames, res, req });
      },
    );
    req.on('error', reject);
  });
}

const until = async (pred: () => boolean) => {
  for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(pred()).toBe(true);
};

describe('stream endpoint', () => {
  it('refuses a request without the session’s token, or with another session’s', async () => {
    const none = await get('ses-a');
    expect(none.status).toBe(401);
    const other = await get('ses-a', streamToken(newKey, 'ses-b'));
    expect(other.status).toBe(401);
    const wrongKey = await get('ses-a', streamToken(randomBytes(32), 'ses-a'));
    expect(wrongKey.status).toBe(401);
  });

  it('sends a late subscriber the text so far, then each delta and the close, under any key of a rotation', async () => {
    const live = hub.open('ses-c', { kind: 'model', throughSeq: 4 }, 2);
    live.write('Hello ');
    live.write('wor');
    const sub = await get('ses-c', streamToken(oldKey, 'ses-c'));
    expect(sub.status).toBe(200);
    await until(() => sub.frames.length === 1);
    expect(sub.frames[0]).toEqual({
      type: 'open',
      key: 'model:4',
      item: { kind: 'model', throughSeq: 4 },
      attempt: 2,
      worker: server.url,
      text: 'Hello wor',
    });
    live.write('ld');
    live.close();
    await until(() => sub.frames.length === 3);
    expect(sub.frames.slice(1)).toEqual([
      { type: 'delta', key: 'model:4', text: 'ld' },
      { type: 'close', key: 'model:4' },
    ]);
    // Another session's streams never reach this subscriber.
    hub.open('ses-d', { kind: 'tool', toolUseId: 'toolu_1', tool: 'bash' }, 1).write('secret');
    await new Promise((r) => setTimeout(r, 100));
    expect(sub.frames).toHaveLength(3);
    sub.req.destroy();
  });

  it('caps a preview and says where the rest is', () => {
    const frames: StreamFrame[] = [];
    const unsubscribe = hub.subscribe('ses-big', (f) => frames.push(f));
    const live = hub.open('ses-big', { kind: 'tool', toolUseId: 'toolu_big', tool: 'bash' }, 1);
    const chunk = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 8; i++) live.write(chunk);
    const text = frames
      .filter((f) => f.type === 'delta')
      .map((f) => (f.type === 'delta' ? f.text : ''))
      .join('');
    expect(text.length).toBeLessThan(MAX_PREVIEW_CHARS + 200);
    expect(text).toMatch(/live preview truncated; the whole result arrives in the log/);
    live.close();
    unsubscribe();
  });

  it('names the endpoint in the worker identity, and shows control characters from untrusted output harmlessly', () => {
    expect(streamUrlOf(identityWithStream('42@host', 'http://brain-1:7400'))).toBe('http://brain-1:7400');
    expect(streamUrlOf('42@host')).toBeUndefined();
    expect(printable('ok\x1b[2J\x07\r\nnext\tcol\x9b')).toBe('ok\uFFFD[2J\uFFFD\nnext\tcol\uFFFD');
  });
});
