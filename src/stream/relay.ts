// The API's relay of live previews: for a session somebody watches through `agents api`, the process finds the
// workers streaming it (by the identity they poll with), subscribes to their stream endpoints with the session's
// token, and merges their frames into one stream, so a watcher needs to reach the API only, not every worker.
// One relayed session per API process, however many watch it; nothing is kept once the last watcher leaves.
import type http from 'node:http';
import type { Client } from '@temporalio/client';
import { streamingWorkers } from './discover';
import { openFrameStream } from './frames';
import { addPart, type StreamFrame, type StreamItem, type StreamPart } from './hub';
import { streamToken } from './token';

/** How often a watched session's workers are looked up (a new model call or tool run may start on another one). */
const DISCOVER_MS = 250;
/** A worker whose stream failed is tried again after this long. */
const RETRY_MS = 2000;
/** A worker's stream with nothing in progress is closed after this long unwanted. */
const IDLE_CLOSE_MS = 10_000;

type Listener = (f: StreamFrame) => void;

interface Live {
  item: StreamItem;
  attempt: number;
  worker: string;
  text: string;
  parts: Array<StreamPart & { text: string }>;
}

interface Upstream {
  req: http.ClientRequest;
  keys: Set<string>;
  lastWanted: number;
}

class RelayedSession {
  readonly listeners = new Set<Listener>();
  private readonly live = new Map<string, Live>();
  private readonly upstreams = new Map<string, Upstream>();
  private readonly failed = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly sessionId: string,
    private readonly client: Client,
    private readonly key: Buffer,
  ) {}

  start(): void {
    const tick = async () => {
      await this.discover();
      if (!this.stopped) this.timer = setTimeout(() => void tick(), DISCOVER_MS);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const u of this.upstreams.values()) u.req.destroy();
    this.upstreams.clear();
  }

  /** The previews in progress, as `open` frames holding their text so far. */
  snapshot(): StreamFrame[] {
    return [...this.live].map(([key, s]) => ({
      type: 'open',
      key,
      item: s.item,
      attempt: s.attempt,
      worker: s.worker,
      text: s.text,
      ...(s.parts.length > 0 ? { parts: s.parts.map((p) => ({ ...p })) } : {}),
    }));
  }

  private emit(f: StreamFrame): void {
    for (const fn of this.listeners) fn(f);
  }

  private async discover(): Promise<void> {
    const found = await streamingWorkers(this.client, this.sessionId);
    if (this.stopped || !found) return;
    const now = Date.now();
    for (const url of found.urls) {
      const up = this.upstreams.get(url);
      if (up) up.lastWanted = now;
      else if (now - (this.failed.get(url) ?? 0) > RETRY_MS) this.connect(url);
    }
    for (const [url, up] of this.upstreams) {
      if (up.keys.size === 0 && now - up.lastWanted > IDLE_CLOSE_MS) {
        up.req.destroy();
        this.upstreams.delete(url);
      }
    }
  }

  private connect(url: string): void {
    const target = new URL(`/v1/sessions/${encodeURIComponent(this.sessionId)}/stream`, url);
    const up: Upstream = { req: undefined as unknown as http.ClientRequest, keys: new Set(), lastWanted: Date.now() };
    up.req = openFrameStream(
      target,
      { authorization: `Bearer ${streamToken(this.key, this.sessionId)}` },
      (f) => this.onFrame(url, up, f),
      () => {
        if (this.upstreams.get(url) !== up) return;
        this.upstreams.delete(url);
        this.failed.set(url, Date.now());
        // What that worker was streaming will not go on here; the log still brings its result.
        for (const key of up.keys) this.closeKey(key, url);
      },
    );
    this.upstreams.set(url, up);
  }

  private closeKey(key: string, worker: string): void {
    if (this.live.get(key)?.worker !== worker) return;
    this.live.delete(key);
    this.emit({ type: 'close', key, worker });
  }

  private onFrame(worker: string, up: Upstream, f: StreamFrame): void {
    if (f.type === 'open') {
      const prev = this.live.get(f.key);
      // An older attempt's late frames never replace a newer one's.
      if (prev && prev.attempt > f.attempt) return;
      up.keys.add(f.key);
      this.live.set(f.key, {
        item: f.item,
        attempt: f.attempt,
        worker,
        text: f.text,
        parts: (f.parts ?? []).map((p) => ({ ...p })),
      });
      this.emit({ ...f, worker });
    } else if (f.type === 'delta') {
      const s = this.live.get(f.key);
      if (!s || s.worker !== worker) return;
      s.text += f.text;
      if (f.part) addPart(s.parts, f.part, f.text);
      this.emit({ type: 'delta', key: f.key, text: f.text, worker, ...(f.part ? { part: f.part } : {}) });
    } else {
      up.keys.delete(f.key);
      this.closeKey(f.key, worker);
    }
  }
}

export class StreamRelay {
  private readonly sessions = new Map<string, RelayedSession>();

  /** `key`: the codec key the workers' stream tokens derive from. */
  constructor(
    private readonly client: Client,
    private readonly key: Buffer,
  ) {}

  /** Calls `fn` with the session's previews in progress, then with every frame after them; returns the unsubscribe. */
  subscribe(sessionId: string, fn: Listener): () => void {
    let s = this.sessions.get(sessionId);
    if (!s) {
      s = new RelayedSession(sessionId, this.client, this.key);
      this.sessions.set(sessionId, s);
      s.start();
    }
    for (const f of s.snapshot()) fn(f);
    s.listeners.add(fn);
    const session = s;
    return () => {
      session.listeners.delete(fn);
      if (session.listeners.size > 0 || this.sessions.get(sessionId) !== session) return;
      session.stop();
      this.sessions.delete(sessionId);
    };
  }

  close(): void {
    for (const s of this.sessions.values()) s.stop();
    this.sessions.clear();
  }
}
