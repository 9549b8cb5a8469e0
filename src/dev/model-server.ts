// A local server that speaks the Anthropic Messages API over HTTP: plain and SSE replies, count_tokens,
// per-session scripts keyed by metadata.user_id (set in-process or by POST /_mock/script), and fault injection.
// Judge calls of the `auto` policy are answered by their own script (`judge:<session id>`) or the built-in judge.
// The conversation checks are in request-checks.ts, the built-in replies in model-replies.ts.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { closeServer, httpUrl, listen } from '../http/listen';
import { openSse } from '../http/sse';
import { errorTypeOf, estimateTokens, InvalidRequest, validateRequest, type Msg } from './request-checks';
import {
  compactionReply,
  defaultReply,
  isCompactionRequest,
  isJudgeRequest,
  judgeReply,
  judgeScriptKey,
  graderReply,
  graderScriptKey,
  isGraderRequest,
} from './model-replies';
import {
  completeReply,
  MockScripts,
  type MockBlock,
  type MockSessionScript,
  type MockStep,
  type MockUsage,
} from './model-script';
import { PromptCache } from './prompt-cache';

export interface RecordedRequest {
  /** Its place among the requests this server received, from 1: `requests()` keeps only the latest ones. */
  n: number;
  sessionId: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  at: number;
  /** When the server wrote the first byte of its response (headers included), after any first-byte delay. */
  firstByteAt?: number;
  /** When the response was written to its end (ms since the epoch). */
  doneAt?: number;
  /** When each streamed text delta was written (ms since the epoch, sub-millisecond), in order. */
  textDeltaAt?: number[];
  /** The caller's address: which worker (or container) made the request. */
  from?: string;
}

/**
 * A scripted delay. It does not keep the process alive on its own: a response held back for minutes (a stalled
 * model) must not outlive the server's stop, while the listening server keeps the process up as long as it runs.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

/** How many requests the server remembers by default: the latest, so a server left running keeps bounded memory. */
export const DEFAULT_MAX_RECORDED = 10_000;

export class MockModelServer {
  private server?: http.Server;
  private readonly scripts = new MockScripts();
  private log: RecordedRequest[] = [];
  private received = 0;
  /** How many requests `requests()` keeps (the latest ones). */
  readonly maxRecorded: number;
  private readonly cache = new PromptCache();
  private inFlightCount = 0;
  url = '';

  constructor(opts: { maxRecorded?: number } = {}) {
    this.maxRecorded = Math.max(1, opts.maxRecorded ?? DEFAULT_MAX_RECORDED);
  }
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
    this.scripts.set(sessionId, script);
  }

  /** Lets every response held at `gate` go on, and any later one pass straight through. */
  release(gate: string): void {
    this.scripts.release(gate);
  }

  /** The requests received, of one session or all, in order: the latest ones (between half of `maxRecorded` and all of it). */
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
    this.sendJson(res, status, { type: 'error', error: { type: errorTypeOf(status), message } }, headers);
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
    const record: RecordedRequest = {
      n: ++this.received,
      sessionId,
      path: url.pathname,
      body,
      status: 0,
      at: Date.now(),
      from: req.socket.remoteAddress,
    };
    this.log.push(record);
    res.once('finish', () => (record.doneAt = Date.now()));
    // Dropped in halves, not one by one: a full log costs one copy per maxRecorded / 2 requests.
    if (this.log.length > this.maxRecorded) this.log = this.log.slice(-Math.ceil(this.maxRecorded / 2));
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
    // Judge calls of the `auto` policy take their own script's steps, else the built-in judge answers.
    const judge = !compaction && isJudgeRequest(body);
    // So do an outcome's grader calls (`grader:<session id>`, else the built-in grader).
    const grader = !compaction && !judge && isGraderRequest(body);
    const step: MockStep = compaction
      ? {}
      : this.scripts.next(judge ? judgeScriptKey(sessionId) : grader ? graderScriptKey(sessionId) : sessionId);
    this.inFlightCount++;
    try {
      const delay = step.firstByteDelayMs ?? script?.firstByteDelayMs ?? 0;
      if (delay > 0) await sleep(delay);
      if (step.gate !== undefined) await this.scripts.opened(step.gate);
      if (step.status !== undefined && step.status >= 400) {
        record.status = step.status;
        record.firstByteAt = Date.now();
        const headers: Record<string, string> =
          step.retryAfter !== undefined ? { 'retry-after': String(step.retryAfter) } : {};
        return this.sendError(res, step.status, step.message ?? `injected ${step.status}`, headers);
      }
      if (step.rawSse !== undefined) {
        record.status = 200;
        openSse(res, { headers: { 'request-id': `req_mock_${Date.now()}` } });
        return void res.end(step.rawSse);
      }
      const reply =
        step.reply ??
        (compaction
          ? compactionReply(body)
          : judge
            ? judgeReply(body)
            : grader
              ? graderReply(body)
              : defaultReply(body, { reissueLostTools: this.reissueLostTools }));
      record.status = 200;
      await this.sendMessage(
        res,
        body,
        reply,
        sessionId,
        step.dropMidStream === true,
        record,
        step.chunkDelayMs ?? script?.chunkDelayMs ?? 0,
        step.errorMidStream,
        step.midGate,
      );
    } finally {
      this.inFlightCount--;
    }
  }

  private async sendMessage(
    res: http.ServerResponse,
    body: Record<string, unknown>,
    reply: { content: MockBlock[]; stopReason?: string; usage?: MockUsage },
    sessionId: string,
    drop: boolean,
    record?: RecordedRequest,
    chunkDelayMs = 0,
    errorMidStream?: number,
    midGate?: string,
  ): Promise<void> {
    const messages = body.messages as Msg[];
    const idBase = createHash('sha256').update(sessionId).digest('hex').slice(0, 8);
    const { content, stopReason } = completeReply(reply, messages.length);
    const { output_tokens: scriptedOutput, ...scriptedInput } = reply.usage ?? {};
    const usage = { ...this.cache.account(body), ...scriptedInput };
    const outputTokens = scriptedOutput ?? Math.max(1, Math.ceil(JSON.stringify(content).length / 4));
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
    const sse = openSse(res, { headers: { 'request-id': `req_mock_${Date.now()}` } });
    const send = (event: string, data: unknown) => sse.send({ event, data });
    send('message_start', {
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } },
    });
    send('ping', { type: 'ping' });
    for (const [index, block] of content.entries()) {
      if (block.type === 'text') {
        send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        const words = block.text.match(/\S+\s*|\s+/g) ?? [block.text];
        for (const [k, w] of words.entries()) {
          if (midGate !== undefined && k === Math.floor(words.length / 2)) await this.scripts.opened(midGate);
          send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: w } });
          if (record) (record.textDeltaAt ??= []).push(performance.timeOrigin + performance.now());
          if (chunkDelayMs > 0) await sleep(chunkDelayMs);
          if (drop && k === 0) {
            await sleep(20);
            return void res.socket?.destroy();
          }
          if (errorMidStream !== undefined && k === 0) {
            const type = errorTypeOf(errorMidStream);
            send('error', { type: 'error', error: { type, message: `injected ${type} mid-stream` } });
            return void res.end();
          }
        }
      } else if (block.type === 'thinking') {
        send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        });
        send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'thinking_delta', thinking: block.thinking },
        });
        send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'signature_delta', signature: block.signature },
        });
        if (chunkDelayMs > 0) await sleep(chunkDelayMs);
      } else {
        send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        });
        const json = JSON.stringify(block.input);
        const half = Math.ceil(json.length / 2);
        send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: json.slice(0, half) },
        });
        if (drop) {
          await sleep(20);
          return void res.socket?.destroy();
        }
        send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: json.slice(half) },
        });
        if (chunkDelayMs > 0) await sleep(chunkDelayMs);
      }
      send('content_block_stop', { type: 'content_block_stop', index });
    }
    send('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    });
    send('message_stop', { type: 'message_stop' });
    res.end();
  }
}
