// A local server that speaks the Anthropic Messages API: plain and SSE replies, count_tokens,
// per-session scripts keyed by metadata.user_id, fault injection, and the API's conversation checks.
import http from 'node:http';
import { closeServer, httpUrl, listen } from '../infra/http';
import { createHash } from 'node:crypto';
import { COMPACTION_MARKER } from '../session/context-builder';

export interface MockBlockText {
  type: 'text';
  text: string;
}
export interface MockBlockToolUse {
  type: 'tool_use';
  id?: string;
  name: string;
  input: Record<string, unknown>;
}
export type MockBlock = MockBlockText | MockBlockToolUse;

/** One scripted response. Faults take precedence over `reply`; with neither, the built-in brain answers. */
export interface MockStep {
  /** Respond with this HTTP error status (e.g. 429, 500, 529, 400). */
  status?: number;
  /** Seconds for the `retry-after` header of an error response. */
  retryAfter?: number;
  /** Error message for an error response. */
  message?: string;
  /** Wait this long before the first byte. */
  firstByteDelayMs?: number;
  /** Hold the response (before its first byte) until `release(gate)` is called. */
  gate?: string;
  /** Stream the first half of each text block, then hold the rest until `release(midGate)` is called. */
  midGate?: string;
  /** Start the reply, then drop the connection mid-stream. */
  dropMidStream?: boolean;
  /** Start the reply, then send an SSE `error` event of this status's type (as the API does when it overloads mid-stream). */
  errorMidStream?: number;
  /** Wait this long after each streamed content delta. */
  chunkDelayMs?: number;
  reply?: { content: MockBlock[]; stopReason?: string };
  /** Answer 200 with this body as the event stream, verbatim: malformed SSE, arbitrary content blocks. */
  rawSse?: string;
}

export interface MockSessionScript {
  steps?: MockStep[];
  /** Applied to every response of the session that has no delay of its own. */
  firstByteDelayMs?: number;
  /** Applied to every streamed response of the session that has no chunk delay of its own. */
  chunkDelayMs?: number;
  /** This session's model allows prefill (default: the server's `allowPrefill`). */
  allowPrefill?: boolean;
}

export interface RecordedRequest {
  sessionId: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  at: number;
  /** When the server wrote the first byte of its response (headers included), after any first-byte delay. */
  firstByteAt?: number;
  /** When each streamed text delta was written (ms since the epoch, sub-millisecond), in order. */
  textDeltaAt?: number[];
}

class InvalidRequest extends Error {}

type Msg = { role: string; content: string | Array<Record<string, unknown>> };

function blocksOf(m: Msg): Array<Record<string, unknown>> {
  return typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
}

/** What the real API answers a conversation ending on an assistant turn, for models without prefill. */
export const PREFILL_REFUSAL = 'This model does not support assistant message prefill. The conversation must end with a user message.';

/** Consecutive turns of one role combined into one, as the real API does before it checks a conversation. */
export function combineTurns(messages: readonly Msg[]): Msg[] {
  const out: Msg[] = [];
  for (const m of messages) {
    const previous = out[out.length - 1];
    if (previous && previous.role === m.role) out[out.length - 1] = { role: m.role, content: [...blocksOf(previous), ...blocksOf(m)] };
    else out.push(m);
  }
  return out;
}

export interface ValidateOptions {
  /** A count_tokens request: no max_tokens, and a trailing assistant turn is allowed. */
  countTokens?: boolean;
  /** The model continues a trailing assistant turn (prefill) instead of refusing it, as older models do. */
  allowPrefill?: boolean;
}

/**
 * The conversation rules the real API enforces with 400 invalid_request_error. Consecutive turns of one role
 * are combined first, as the real API does; a conversation ending on an assistant turn is refused unless the
 * model allows prefill (current models do not).
 */
export function validateRequest(body: Record<string, unknown>, opts: ValidateOptions = {}): void {
  const countTokens = opts.countTokens === true;
  if (typeof body.model !== 'string' || body.model === '') throw new InvalidRequest('model: Field required');
  if (!countTokens && (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1))
    throw new InvalidRequest('max_tokens: Field required and must be a positive integer');
  const sent = body.messages as Msg[] | undefined;
  if (!Array.isArray(sent) || sent.length === 0) throw new InvalidRequest('messages: at least one message is required');
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw new InvalidRequest('tools: Input should be a valid list');
    for (const [i, t] of (body.tools as Record<string, unknown>[]).entries()) {
      if (typeof t?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) throw new InvalidRequest(`tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      if (typeof t.input_schema !== 'object' || t.input_schema === null) throw new InvalidRequest(`tools.${i}.input_schema: Field required`);
    }
  }
  sent.forEach((m, i) => {
    if (m?.role !== 'user' && m?.role !== 'assistant') throw new InvalidRequest(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof m.content !== 'string' && (!Array.isArray(m.content) || m.content.length === 0))
      throw new InvalidRequest(`messages.${i}.content: must be a string or a non-empty list of content blocks`);
  });
  const messages = combineTurns(sent);
  if (messages[0].role !== 'user') throw new InvalidRequest('messages: first message must use the "user" role');
  let pendingToolUses: string[] = [];
  messages.forEach((m, i) => {
    const blocks = blocksOf(m);
    for (const [j, b] of blocks.entries()) {
      if (b.type === 'text' && (typeof b.text !== 'string' || b.text === '')) throw new InvalidRequest(`messages.${i}.content.${j}.text: text content blocks must be non-empty`);
    }
    if (m.role === 'user') {
      const results = blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id as string);
      const missing = pendingToolUses.filter((id) => !results.includes(id));
      if (missing.length)
        throw new InvalidRequest(`messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      const unexpected = results.filter((id) => !pendingToolUses.includes(id));
      if (unexpected.length) throw new InvalidRequest(`messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(', ')}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
      const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
      if (firstOther !== -1 && blocks.slice(firstOther).some((b) => b.type === 'tool_result'))
        throw new InvalidRequest(`messages.${i}: tool_result blocks must come first in the content array`);
      pendingToolUses = [];
    } else {
      pendingToolUses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
      if (pendingToolUses.some((id) => typeof id !== 'string' || id === '')) throw new InvalidRequest(`messages.${i}: tool_use blocks need an id`);
      for (const [j, b] of blocks.entries()) {
        if (b.type === 'tool_use' && (typeof b.input !== 'object' || b.input === null || Array.isArray(b.input)))
          throw new InvalidRequest(`messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`);
      }
    }
  });
  if (pendingToolUses.length && messages[messages.length - 1].role === 'assistant')
    throw new InvalidRequest(`messages: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${pendingToolUses.join(', ')}`);
  if (!countTokens && !opts.allowPrefill && messages[messages.length - 1].role === 'assistant') throw new InvalidRequest(PREFILL_REFUSAL);
}

export function estimateTokens(body: Record<string, unknown>): number {
  return Math.max(1, Math.ceil(JSON.stringify([body.system ?? '', body.messages, body.tools ?? []]).length / 4));
}

function systemText(body: Record<string, unknown>): string {
  const system = body.system;
  if (typeof system === 'string') return system;
  if (Array.isArray(system)) return (system as { text?: string }[]).map((b) => b.text ?? '').join('\n');
  return '';
}

export function isCompactionRequest(body: Record<string, unknown>): boolean {
  return systemText(body).includes(COMPACTION_MARKER);
}

/** The built-in summariser: lists the user requests and counts the tool calls of the transcript, citing event numbers. */
export function compactionReply(body: Record<string, unknown>): { content: MockBlock[]; stopReason: string } {
  const text = blocksOf((body.messages as Msg[])[0])
    .map((b) => String(b.text ?? ''))
    .join('\n');
  const previous = /<summary>\n([\s\S]*?)\n<\/summary>/.exec(text)?.[1];
  const range = /^Events (\d+) to (\d+):/m.exec(text);
  const asks = [...text.matchAll(/^\[(\d+)\] user: (.*)$/gm)].map((m) => `[${m[1]}] ${m[2].slice(0, 80)}`);
  const calls = [...text.matchAll(/^\[(\d+)\] tool call (\S+)/gm)];
  const lines = [
    ...(previous ? [previous] : []),
    `Events ${range?.[1] ?? '?'} to ${range?.[2] ?? '?'}: the user asked ${asks.length ? asks.slice(-20).join('; ') : 'nothing new'}; ${calls.length} tool call(s)${calls.length ? ` (${[...new Set(calls.map((c) => c[2]))].join(', ')})` : ''}.`,
  ];
  return { content: [{ type: 'text', text: lines.join('\n').slice(-4000) }], stopReason: 'end_turn' };
}

/**
 * The built-in brain: deterministic in the conversation. A user text that asks about the log, events or
 * history gets a `session_events` call, and one with a `backticked command` gets a `bash` call (when those
 * tools are offered); with `reissueLostTools`, a tool call whose sandbox was lost is made again; other tool
 * results get a short summary; anything else is echoed.
 */
export function defaultReply(body: Record<string, unknown>, opts: { reissueLostTools?: boolean } = {}): { content: MockBlock[]; stopReason: string } {
  const messages = combineTurns(body.messages as Msg[]);
  const last = messages[messages.length - 1];
  const blocks = blocksOf(last);
  const texts = blocks.filter((b) => b.type === 'text').map((b) => b.text as string);
  const results = blocks.filter((b) => b.type === 'tool_result');
  const tools = ((body.tools as { name: string }[] | undefined) ?? []).map((t) => t.name);
  const lastText = texts[texts.length - 1];
  if (lastText !== undefined && /\b(log|events|history)\b/i.test(lastText) && tools.includes('session_events')) {
    return {
      content: [
        { type: 'text', text: 'Let me read the session log.' },
        { type: 'tool_use', name: 'session_events', input: { from: 0, limit: 20 } },
      ],
      stopReason: 'tool_use',
    };
  }
  const command = lastText === undefined ? undefined : /`([^`]+)`/.exec(lastText)?.[1];
  if (command !== undefined && tools.includes('bash')) {
    return {
      content: [
        { type: 'text', text: 'I will run that in my sandbox.' },
        { type: 'tool_use', name: 'bash', input: { command } },
      ],
      stopReason: 'tool_use',
    };
  }
  if (lastText !== undefined) return { content: [{ type: 'text', text: `You said: ${lastText}` }], stopReason: 'end_turn' };
  // A tool call lost to broken infrastructure (not a failing command) is made again, as a careful model would.
  const lost = results.filter((r) => r.is_error === true && /was lost while running this tool|could not be provisioned/.test(JSON.stringify(r.content))).map((r) => r.tool_use_id);
  const previous = messages.length >= 2 ? blocksOf(messages[messages.length - 2]) : [];
  const again = opts.reissueLostTools ? previous.filter((b) => b.type === 'tool_use' && lost.includes(b.id)) : [];
  if (again.length) {
    return {
      content: [{ type: 'text', text: 'The sandbox failed; running that again.' }, ...again.map((b) => ({ type: 'tool_use' as const, name: String(b.name), input: b.input as Record<string, unknown> }))],
      stopReason: 'tool_use',
    };
  }
  const summary = results
    .map((r) => {
      const c = r.content;
      const text = typeof c === 'string' ? c : JSON.stringify(c);
      let count = '';
      try {
        const parsed = JSON.parse(text) as { events?: unknown[] };
        if (Array.isArray(parsed.events)) count = ` (${parsed.events.length} events)`;
      } catch {
        // not JSON: summarised by length only
      }
      const gist = count ? '' : `: ${text.split('\n').slice(0, 3).join(' | ').slice(0, 200)}`;
      return `${r.is_error ? 'an error' : 'a result'} of ${text.length} characters${count}${gist}`;
    })
    .join(', ');
  return { content: [{ type: 'text', text: `The tool returned ${summary}.` }], stopReason: 'end_turn' };
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Minimum cacheable prefix (Sonnet and Opus models), how far back a breakpoint looks, and the cache's life. */
export const CACHE_MIN_TOKENS = 1024;
const CACHE_LOOKBACK_BLOCKS = 20;
const CACHE_TTL_MS = 5 * 60_000;

export interface CacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/**
 * Prompt-cache accounting as Anthropic documents it: the request is a sequence of blocks (tools, system,
 * messages); a `cache_control` breakpoint caches the prefix up to it when that prefix is long enough; a later
 * request reads the longest cached prefix found at one of its breakpoints or up to 20 blocks before one.
 */
export class PromptCache {
  private readonly entries = new Map<string, number>();

  account(body: Record<string, unknown>, now = Date.now()): CacheUsage {
    const blocks = flattenForCache(body);
    const hashes: string[] = [];
    const totals: number[] = [];
    let h = createHash('sha256').update(String(body.model)).digest('hex');
    let total = 0;
    for (const b of blocks) {
      h = createHash('sha256').update(h).update(b.json).digest('hex');
      total += Math.max(1, Math.ceil(b.json.length / 4));
      hashes.push(h);
      totals.push(total);
    }
    const live = (key: string) => (this.entries.get(key) ?? 0) > now;
    let read = 0;
    blocks.forEach((b, i) => {
      if (!b.breakpoint) return;
      for (let j = i; j >= Math.max(0, i - CACHE_LOOKBACK_BLOCKS); j--) {
        if (live(hashes[j])) {
          read = Math.max(read, totals[j]);
          this.entries.set(hashes[j], now + CACHE_TTL_MS);
          break;
        }
      }
    });
    let written = read;
    blocks.forEach((b, i) => {
      if (!b.breakpoint || totals[i] < CACHE_MIN_TOKENS) return;
      if (!live(hashes[i])) written = Math.max(written, totals[i]);
      this.entries.set(hashes[i], now + CACHE_TTL_MS);
    });
    const creation = written - read;
    return { input_tokens: total - read - creation, cache_read_input_tokens: read, cache_creation_input_tokens: creation };
  }
}

function flattenForCache(body: Record<string, unknown>): { json: string; breakpoint: boolean }[] {
  const out: { json: string; breakpoint: boolean }[] = [];
  const push = (prefix: string, block: Record<string, unknown>) => {
    const { cache_control, ...rest } = block;
    out.push({ json: `${prefix}${JSON.stringify(rest)}`, breakpoint: cache_control !== undefined });
  };
  for (const t of (body.tools as Record<string, unknown>[] | undefined) ?? []) push('tool:', t);
  const system = body.system;
  if (typeof system === 'string') push('system:', { type: 'text', text: system });
  else if (Array.isArray(system)) for (const b of system as Record<string, unknown>[]) push('system:', b);
  for (const m of (body.messages as Msg[] | undefined) ?? []) for (const b of blocksOf(m)) push(`${m.role}:`, b);
  return out;
}

export class MockModelServer {
  private server?: http.Server;
  private readonly scripts = new Map<string, MockSessionScript>();
  private readonly log: RecordedRequest[] = [];
  private readonly cache = new PromptCache();
  private inFlightCount = 0;
  private readonly gates = new Map<string, { opened: Promise<void>; open: () => void }>();
  url = '';
  /** The built-in brain makes a tool call again when its sandbox was lost (off: it reports the error). */
  reissueLostTools = false;
  /** Accept a conversation ending on an assistant turn, as models with prefill do (off: refused, as current models do). */
  allowPrefill = false;

  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) this.sendError(res, 500, `mock server error: ${(err as Error).message}`);
        else res.destroy();
      });
    });
    this.url = httpUrl(host, await listen(this.server, port, host));
    return this.url;
  }

  async stop(): Promise<void> {
    await closeServer(this.server);
  }

  /** Scripts the next responses of one session (keyed by `metadata.user_id`). Steps are consumed in order. */
  script(sessionId: string, script: MockSessionScript): void {
    this.scripts.set(sessionId, { ...script, steps: [...(script.steps ?? [])] });
  }

  private gate(name: string) {
    let g = this.gates.get(name);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      g = { opened, open };
      this.gates.set(name, g);
    }
    return g;
  }

  /** Lets every response held at `gate` go on, and any later one pass straight through. */
  release(gate: string): void {
    this.gate(gate).open();
  }

  requests(sessionId?: string): RecordedRequest[] {
    return this.log.filter((r) => sessionId === undefined || r.sessionId === sessionId);
  }

  /** Requests whose response has not finished. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  private async readBody(req: http.IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  private sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_mock_${Date.now()}`, ...headers });
    res.end(JSON.stringify(body));
  }

  private sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}) {
    const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    this.sendJson(res, status, { type: 'error', error: { type, message } }, headers);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://mock');
    const raw = await this.readBody(req);
    if (req.method === 'POST' && url.pathname === '/_mock/script') {
      const { sessionId, ...script } = JSON.parse(raw) as MockSessionScript & { sessionId: string };
      this.script(sessionId, script);
      return this.sendJson(res, 200, { ok: true });
    }
    if (req.method !== 'POST' || (url.pathname !== '/v1/messages' && url.pathname !== '/v1/messages/count_tokens')) {
      return this.sendError(res, 404, `no route for ${req.method} ${url.pathname}`);
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return this.sendError(res, 400, 'request body is not valid JSON');
    }
    const sessionId = String((body.metadata as { user_id?: string } | undefined)?.user_id ?? 'anonymous');
    const record: RecordedRequest = { sessionId, path: url.pathname, body, status: 0, at: Date.now() };
    this.log.push(record);
    const countTokens = url.pathname.endsWith('/count_tokens');
    const script = this.scripts.get(sessionId);
    try {
      validateRequest(body, { countTokens, allowPrefill: script?.allowPrefill ?? this.allowPrefill });
    } catch (err) {
      if (!(err instanceof InvalidRequest)) throw err;
      record.status = 400;
      return this.sendError(res, 400, err.message);
    }
    if (countTokens) {
      record.status = 200;
      return this.sendJson(res, 200, { input_tokens: estimateTokens(body) });
    }

    // Compaction calls are answered by the built-in summariser and leave a session's script alone.
    const compaction = isCompactionRequest(body);
    const step: MockStep = (compaction ? undefined : script?.steps?.shift()) ?? {};
    this.inFlightCount++;
    try {
      const delay = step.firstByteDelayMs ?? script?.firstByteDelayMs ?? 0;
      if (delay > 0) await sleep(delay);
      if (step.gate !== undefined) await this.gate(step.gate).opened;
      if (step.status !== undefined && step.status >= 400) {
        record.status = step.status;
        record.firstByteAt = Date.now();
        const headers: Record<string, string> = step.retryAfter !== undefined ? { 'retry-after': String(step.retryAfter) } : {};
        return this.sendError(res, step.status, step.message ?? `injected ${step.status}`, headers);
      }
      if (step.rawSse !== undefined) {
        record.status = 200;
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_mock_${Date.now()}` });
        return void res.end(step.rawSse);
      }
      const reply = step.reply ?? (compaction ? compactionReply(body) : defaultReply(body, { reissueLostTools: this.reissueLostTools }));
      record.status = 200;
      await this.sendMessage(res, body, reply, sessionId, step.dropMidStream === true, record, step.chunkDelayMs ?? script?.chunkDelayMs ?? 0, step.errorMidStream, step.midGate);
    } finally {
      this.inFlightCount--;
    }
  }

  private async sendMessage(
    res: http.ServerResponse,
    body: Record<string, unknown>,
    reply: { content: MockBlock[]; stopReason?: string },
    sessionId: string,
    drop: boolean,
    record?: RecordedRequest,
    chunkDelayMs = 0,
    errorMidStream?: number,
    midGate?: string,
  ): Promise<void> {
    const messages = body.messages as Msg[];
    const idBase = createHash('sha256').update(sessionId).digest('hex').slice(0, 8);
    const content = reply.content.map((b, i) =>
      b.type === 'tool_use' ? { ...b, id: b.id ?? `toolu_mock_${messages.length}_${i}` } : b,
    );
    const stopReason = reply.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    const usage = this.cache.account(body);
    const outputTokens = Math.max(1, Math.ceil(JSON.stringify(content).length / 4));
    const message = {
      id: `msg_mock_${idBase}_${messages.length}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { ...usage, output_tokens: outputTokens },
    };
    if (body.stream !== true) {
      if (drop) return void res.socket?.destroy();
      if (record) record.firstByteAt = Date.now();
      return this.sendJson(res, 200, message);
    }
    if (record) record.firstByteAt = Date.now();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_mock_${Date.now()}` });
    const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send('message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
    send('ping', { type: 'ping' });
    for (const [index, block] of content.entries()) {
      if (block.type === 'text') {
        send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        const words = block.text.match(/\S+\s*|\s+/g) ?? [block.text];
        for (const [k, w] of words.entries()) {
          if (midGate !== undefined && k === Math.floor(words.length / 2)) await this.gate(midGate).opened;
          send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: w } });
          if (record) (record.textDeltaAt ??= []).push(performance.timeOrigin + performance.now());
          if (chunkDelayMs > 0) await sleep(chunkDelayMs);
          if (drop && k === 0) {
            await sleep(20);
            return void res.socket?.destroy();
          }
          if (errorMidStream !== undefined && k === 0) {
            const type = ERROR_TYPES[errorMidStream] ?? (errorMidStream >= 500 ? 'api_error' : 'invalid_request_error');
            send('error', { type: 'error', error: { type, message: `injected ${type} mid-stream` } });
            return void res.end();
          }
        }
      } else {
        send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
        const json = JSON.stringify(block.input);
        const half = Math.ceil(json.length / 2);
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(0, half) } });
        if (drop) {
          await sleep(20);
          return void res.socket?.destroy();
        }
        send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(half) } });
        if (chunkDelayMs > 0) await sleep(chunkDelayMs);
      }
      send('content_block_stop', { type: 'content_block_stop', index });
    }
    send('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } });
    send('message_stop', { type: 'message_stop' });
    res.end();
  }
}
