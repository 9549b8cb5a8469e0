// The stream clients of bench/api-stream.ts, in a process of their own so the API process's event loop is not
// theirs: raw HTTP Server-Sent Events connections to GET /v1/sessions/{id}/events/stream, parsed as the SDK
// parses them. Reads one JSON line on stdin ({ url, key, beta, sessions: [{ id, streams }] }); writes
// `ready` once every stream is open, `idle <session index>` for each session.status_idle on each stream, and, on
// `report` from stdin, one JSON line of delivery latencies (received minus the event's processed_at, ms) and, for
// each session's first stream, every event's processed_at and arrival.
import http from 'node:http';
import readline from 'node:readline';

interface Config {
  url: string;
  key: string;
  beta: string;
  sessions: { id: string; streams: number }[];
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const latencies: number[] = [];
const byType: Record<string, number[]> = {};
const sockets: http.ClientRequest[] = [];
/** [session index, processed_at ms, arrival ms] of every event on each session's first stream. */
const records: [number, number, number][] = [];
const primary = new Set<number>();
let events = 0;

function open(cfg: Config, index: number, id: string): Promise<void> {
  const first = !primary.has(index);
  primary.add(index);
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${cfg.url}/v1/sessions/${id}/events/stream`,
      { headers: { 'x-api-key': cfg.key, 'anthropic-beta': cfg.beta, accept: 'text/event-stream' }, agent: false },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream of ${id}: HTTP ${res.statusCode}`));
        res.setEncoding('utf8');
        let buf = '';
        let opened = false;
        res.on('data', (chunk: string) => {
          const at = Date.now();
          buf += chunk;
          let cut: number;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            if (!opened && frame.startsWith(':')) {
              opened = true;
              resolve();
              continue;
            }
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            const type = /^event: (.*)$/m.exec(frame)?.[1];
            if (!data || !type || type === 'ping') continue;
            const e = JSON.parse(data) as { type: string; processed_at?: string };
            if (e.processed_at) {
              const ms = at - Date.parse(e.processed_at);
              if (first) records.push([index, Date.parse(e.processed_at), at]);
              latencies.push(ms);
              (byType[e.type] ??= []).push(ms);
            }
            events++;
            if (e.type === 'session.status_idle') out(`idle ${index}`);
          }
        });
      },
    );
    req.on('error', reject);
    sockets.push(req);
  });
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin });
  const lines = rl[Symbol.asyncIterator]();
  const cfg = JSON.parse((await lines.next()).value as string) as Config;
  // Opened a few dozen at a time, as clients arriving would.
  const todo = cfg.sessions.flatMap((s, i) => Array.from({ length: s.streams }, () => [i, s.id] as const));
  for (let i = 0; i < todo.length; i += 50)
    await Promise.all(todo.slice(i, i + 50).map(([idx, id]) => open(cfg, idx, id)));
  out('ready');
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    const line = next.value as string;
    if (line === 'reset') {
      latencies.length = 0;
      records.length = 0;
      for (const k of Object.keys(byType)) delete byType[k];
      events = 0;
    } else if (line === 'report') out(JSON.stringify({ latencies, byType, events, records }));
    else if (line === 'exit') break;
  }
  for (const s of sockets) s.destroy();
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`api-stream-clients: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
