// `agents watch`: follows a session's log and, for the item in progress, the live deltas of the worker doing
// it. The log is the truth: a delta is shown only until the event that finishes its item is printed, so a
// watcher that starts late or reconnects catches up from the log with no gaps.
import type http from 'node:http';
import type { Client } from '@temporalio/client';
import { MANAGED_AGENTS_BETA } from '../api/beta';
import type { SessionLog } from '../log/session-log';
import type { SessionEvent } from '../session/events';
import { formatEvent } from '../session/format';
import { streamingWorkers } from '../stream/discover';
import { openFrameStream } from '../stream/frames';
import type { StreamFrame, StreamItem } from '../stream/hub';
import { streamToken } from '../stream/token';
import { endsTurn } from '../session/turn-end';

export type WatchMode = 'json' | 'tty' | 'plain';

export interface WatchOptions {
  client: Client;
  log: SessionLog;
  sessionId: string;
  from: number;
  mode: WatchMode;
  /** The codec key the stream tokens derive from; absent (and no `relay`): follow the log only. */
  streamKey?: Buffer;
  /**
   * Take the previews from the API's relay (`GET /v1/sessions/<id>/stream` of `agents api`, with an API key of
   * the session's workspace) instead of from each worker directly: for a watcher that cannot reach the workers.
   */
  relay?: { url: string; apiKey: string };
  out: (text: string) => void;
  /** One-line notes (a stream that cannot be reached, a sandbox being provisioned) for stderr. */
  note: (text: string) => void;
  /** Dims preview text on a colour terminal. */
  dim?: (s: string) => string;
  columns?: () => number;
  rows?: () => number;
  pollMs?: number;
  /** Stop after this event, e.g. to follow one turn. */
  until?: (e: SessionEvent) => boolean;
}

interface Live {
  item: StreamItem;
  attempt: number;
  /** The stream endpoint it came from. */
  worker: string;
  text: string;
  /** Characters of `text` already written. -1: not announced yet. */
  shown: number;
  shownAttempt: number;
  closed: boolean;
}

interface Subscription {
  url: string;
  /** The API's relay: its frames name the worker each came from. */
  relayed: boolean;
  req: http.ClientRequest;
  keys: Set<string>;
  lastWanted: number;
}

/**
 * Model and tool output is untrusted: on a terminal, an escape sequence in it could rewrite the screen or worse.
 * Control characters other than newline and tab are shown as U+FFFD.
 */
export function printable(text: string): string {
  let out = '';
  for (const ch of text.replace(/\r\n/g, '\n')) {
    const c = ch.charCodeAt(0);
    out += (c < 32 && c !== 10 && c !== 9) || (c >= 127 && c < 160) ? '\uFFFD' : ch;
  }
  return out;
}

const RETRY_MS = 2000;
const FAST_POLL_MS = 75;
const IDLE_CLOSE_MS = 10_000;

export class SessionWatcher {
  private next: number;
  private lastAssistantSeq = -1;
  private readonly toolUses = new Set<string>();
  private readonly toolResults = new Set<string>();
  private readonly streams = new Map<string, Live>();
  private readonly subs = new Map<string, Subscription>();
  private readonly failed = new Map<string, number>();
  private readonly noted = new Set<string>();
  private wakeUp?: () => void;
  /** Text written since the last event, which a terminal erases when the event that replaces it arrives. */
  private region = '';
  private atLineStart = true;
  private provisioningNoted = false;
  /** A turn is in progress (user input or a tool result is waiting for the model). */
  private turnOpen = false;
  private stopped = false;

  constructor(private readonly o: WatchOptions) {
    this.next = o.from;
  }

  async run(): Promise<void> {
    try {
      for (;;) {
        if (await this.readLog()) return;
        if (this.o.relay) this.followRelay();
        if (this.o.streamKey || this.o.relay) await this.discover();
        await new Promise<void>((resolve) => {
          // While a turn is under way and nothing streams yet, look for the worker sooner: its first tokens wait on it.
          const t = setTimeout(
            resolve,
            this.turnOpen && this.streams.size === 0 ? FAST_POLL_MS : (this.o.pollMs ?? 300),
          );
          this.wakeUp = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wakeUp = undefined;
      }
    } finally {
      this.stop();
    }
  }

  stop(): void {
    this.stopped = true;
    for (const s of this.subs.values()) s.req.destroy();
    this.subs.clear();
    if (!this.atLineStart && this.o.mode !== 'json') this.write('\n');
  }

  /** Prints the log from `next`; true once the session has ended (or `until` matched). */
  private async readLog(): Promise<boolean> {
    for (;;) {
      const page = await this.o.log.read(this.o.sessionId, this.next, 1000);
      for (const e of page.events) {
        this.printEvent(e);
        if (e.type === 'session_ended' || this.o.until?.(e)) return true;
      }
      if (page.events.length === 0) break;
    }
    for (const key of [...this.streams.keys()]) this.show(key);
    return false;
  }

  private printEvent(e: SessionEvent): void {
    this.next = e.seq + 1;
    if (e.type === 'assistant_message') this.lastAssistantSeq = e.seq;
    if (e.type === 'tool_use') this.toolUses.add(e.id);
    if (e.type === 'tool_result') this.toolResults.add(e.toolUseId);
    if (e.type === 'user_message' || e.type === 'tool_use') this.turnOpen = true;
    if (endsTurn(e)) this.turnOpen = false;
    if (this.o.mode === 'json') return this.write(`${JSON.stringify(e)}\n`);
    if (this.o.mode === 'tty') this.eraseRegion();
    else if (!this.atLineStart) this.write('\n');
    this.write(`${printable(formatEvent(e))}\n`);
    this.region = '';
    // What this event finished is dropped; on a terminal, what is still in progress is drawn again below it.
    for (const [key, s] of this.streams) {
      if (this.finished(s.item) || s.closed) this.streams.delete(key);
      else if (this.o.mode === 'tty') s.shown = -1;
    }
  }

  private finished(item: StreamItem): boolean {
    return item.kind === 'model' ? this.lastAssistantSeq > item.throughSeq : this.toolResults.has(item.toolUseId);
  }

  /** Shown only once the log has caught up to the item, and until the log finishes it. */
  private current(item: StreamItem): boolean {
    if (this.finished(item)) return false;
    return item.kind === 'model' ? item.throughSeq < this.next : this.toolUses.has(item.toolUseId);
  }

  private show(key: string): void {
    const s = this.streams.get(key);
    if (!s) return;
    if (this.finished(s.item)) {
      this.streams.delete(key);
      return;
    }
    if (!this.current(s.item)) {
      // The log has not caught up with the item yet: read it now rather than at the next poll.
      this.wakeUp?.();
      return;
    }
    if (this.o.mode === 'json') {
      if (s.shown < 0 || s.shownAttempt !== s.attempt) {
        this.write(
          `${JSON.stringify({ type: 'stream', item: s.item, attempt: s.attempt, worker: s.worker, text: s.text })}\n`,
        );
      } else if (s.text.length > s.shown) {
        this.write(`${JSON.stringify({ type: 'delta', item: s.item, text: s.text.slice(s.shown) })}\n`);
      }
    } else {
      let text = '';
      if (s.shown < 0 || s.shownAttempt !== s.attempt) {
        const restart =
          s.shown >= 0 ? ` (attempt ${s.attempt}, started again)` : s.attempt > 1 ? ` (attempt ${s.attempt})` : '';
        text = `${this.atLineStart ? '' : '\n'}… ${s.item.kind === 'model' ? 'model' : `${s.item.tool} output`}${restart}: ${s.item.kind === 'tool' ? '\n' : ''}${s.text}`;
      } else text = s.text.slice(s.shown);
      text = printable(text);
      if (text) this.write(this.o.dim ? this.o.dim(text) : text, text);
    }
    s.shown = s.text.length;
    s.shownAttempt = s.attempt;
  }

  private write(styled: string, plain = styled): void {
    this.o.out(styled);
    if (plain.length === 0) return;
    this.atLineStart = plain.endsWith('\n');
    if (this.o.mode === 'tty') this.region += plain;
  }

  /** Moves the cursor back over the preview text on a terminal and clears it. */
  private eraseRegion(): void {
    if (!this.region) return;
    const cols = Math.max(1, this.o.columns?.() ?? 80);
    const lines = this.region.split('\n');
    const rows = lines.reduce((n, l) => n + Math.max(1, Math.ceil(l.length / cols)), 0);
    // A preview taller than the screen has scrolled out of reach: leave it, below a clean line.
    if (rows > (this.o.rows?.() ?? 24) - 1) {
      if (!this.atLineStart) this.o.out('\n');
    } else this.o.out(`${rows > 1 ? `\x1b[${rows - 1}A` : ''}\r\x1b[J`);
    this.region = '';
    this.atLineStart = true;
  }

  /** Finds the workers running this session's activities (their identity names their stream endpoint). */
  private async discover(): Promise<void> {
    const found = await streamingWorkers(this.o.client, this.o.sessionId);
    if (!found) return;
    const now = Date.now();
    // Through the relay, the API finds the workers; this only says what is going on.
    if (!this.o.relay) {
      for (const url of found.urls) {
        const sub = this.subs.get(url);
        if (sub) sub.lastWanted = now;
        else if (now - (this.failed.get(url) ?? 0) > RETRY_MS) this.subscribe(url, false);
      }
    }
    if (found.provisioning && !this.provisioningNoted) this.o.note('provisioning a sandbox…');
    this.provisioningNoted = found.provisioning;
    for (const [url, sub] of this.subs) {
      if (!sub.relayed && sub.keys.size === 0 && now - sub.lastWanted > IDLE_CLOSE_MS) {
        sub.req.destroy();
        this.subs.delete(url);
      }
    }
  }

  /** Keeps one subscription to the API's relay open, opening it again after a failure. */
  private followRelay(): void {
    const { url } = this.o.relay!;
    if (!this.subs.has(url) && Date.now() - (this.failed.get(url) ?? 0) > RETRY_MS) this.subscribe(url, true);
  }

  private subscribe(url: string, relayed: boolean): void {
    const target = new URL(`/v1/sessions/${encodeURIComponent(this.o.sessionId)}/stream`, url);
    const headers: Record<string, string> = relayed
      ? { 'x-api-key': this.o.relay!.apiKey, 'anthropic-beta': MANAGED_AGENTS_BETA }
      : { authorization: `Bearer ${streamToken(this.o.streamKey!, this.o.sessionId)}` };
    const sub: Subscription = {
      url,
      relayed,
      req: undefined as unknown as http.ClientRequest,
      keys: new Set(),
      lastWanted: Date.now(),
    };
    sub.req = openFrameStream(
      target,
      headers,
      (f) => this.onFrame(f, sub),
      (why) => {
        if (this.subs.get(url) !== sub) return;
        this.subs.delete(url);
        this.failed.set(url, Date.now());
        // Whatever came through this subscription will not go on; the log still brings its result.
        for (const key of sub.keys) {
          const s = this.streams.get(key);
          if (s && (relayed || s.worker === url)) s.closed = true;
        }
        if (!this.stopped && why && !this.noted.has(url)) {
          this.noted.add(url);
          const hint =
            relayed && /HTTP 40[134]/.test(why) ? ': is AGENTS_API_KEY a key of the session’s workspace?' : '';
          this.o.note(
            `live stream ${relayed ? 'through the API at' : 'from'} ${url} unavailable (${why})${hint}; following the log`,
          );
        }
      },
    );
    this.subs.set(url, sub);
  }

  private onFrame(f: StreamFrame, sub: Subscription): void {
    // Directly, the subscription is the worker; through the relay, each frame names its worker.
    const worker = sub.relayed ? (f.worker ?? '') : sub.url;
    if (f.type === 'open') {
      sub.keys.add(f.key);
      const prev = this.streams.get(f.key);
      // An older attempt's late frames never replace a newer one's.
      if (prev && prev.attempt > f.attempt) return;
      // A reconnect's snapshot repeats what was shown; a new attempt starts over under a marker (see show).
      this.streams.set(f.key, {
        item: f.item,
        attempt: f.attempt,
        worker,
        text: f.text,
        shown: prev?.shown ?? -1,
        shownAttempt: prev?.shownAttempt ?? f.attempt,
        closed: false,
      });
    } else {
      const s = this.streams.get(f.key);
      if (!s || s.worker !== worker) return;
      if (f.type === 'delta') s.text += f.text;
      else {
        s.closed = true;
        sub.keys.delete(f.key);
      }
    }
    this.show(f.key);
  }
}
