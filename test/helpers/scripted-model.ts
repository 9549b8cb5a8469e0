// An in-process ModelClient for the fast tier: it answers each session's model calls from a script given per
// session id, records every request it gets, and checks each one as the real Messages API would, so that a
// malformed conversation fails the test instead of passing silently. No HTTP: a worker takes it as `model`.
//
// Steps follow the local server's (src/dev/model-script.ts): consumed in order, one a call, with a reply,
// an API error of a status, or a gate that holds the call until the test releases it. A compaction call is
// answered by the local server's summariser and leaves the script alone, as there; a judge call of the `auto`
// policy takes the steps scripted under `judgeScriptKey(id)`, else the built-in judge answers it.
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import { errorTypeOf, estimateTokens, InvalidRequest, validateRequest, type Msg } from '../../src/dev/request-checks';
import type { ModelCallOptions, ModelClient, ModelReply, ModelRequest } from '../../src/model/model-client';
import {
  compactionReply,
  isCompactionRequest,
  isJudgeRequest,
  judgeReply,
  judgeScriptKey,
  graderReply,
  graderScriptKey,
  isGraderRequest,
} from '../../src/dev/model-replies';
import { completeReply, Gates, type MockBlock, type MockStep } from '../../src/dev/model-script';
import type { ContentBlock, Usage } from '../../src/session/events';

/** One scripted call. An error (`error`, else `status`) takes precedence over `reply`; a step needs one of them. */
export interface ScriptedStep extends Pick<MockStep, 'gate' | 'status' | 'message' | 'retryAfter'> {
  /** Throw this from the call (after any gate), as a model client would. */
  error?: Error;
  reply?: { content: MockBlock[]; stopReason?: string; usage?: Partial<Usage> };
}

export interface ScriptedSession {
  steps: ScriptedStep[];
}

/** How a call ended: with a reply, an error (scripted, or a refused request), or aborted by its caller. */
export type CallOutcome = 'replied' | 'failed' | 'refused' | 'aborted';

export interface ScriptedCall {
  sessionId: string;
  /** The request as the activity passed it. */
  request: ModelRequest;
  /** The request as the Messages API body it stands for (`system` as blocks, no empty `tools`). */
  body: Record<string, unknown>;
  compaction: boolean;
  /** Settles when the call does: resolves with how it ended. */
  settled: Promise<CallOutcome>;
}

/** A request the real API would refuse, or a call the script had no step for: either is a bug the test should see. */
export interface ScriptProblem {
  sessionId: string;
  message: string;
}

/**
 * The conversation rule src/session/context.ts promises on top of the API's: no two turns of one role in a
 * row. The API would merge such turns (validateRequest does too), so only this check sees them.
 */
function alternationProblem(messages: readonly Msg[]): string | undefined {
  const i = messages.findIndex((m, k) => k > 0 && messages[k - 1].role === m.role);
  return i === -1 ? undefined : `messages.${i}: two ${messages[i].role} turns in a row`;
}

function bodyOf(request: ModelRequest): Record<string, unknown> {
  const system = (typeof request.system === 'string' ? [request.system] : (request.system ?? [])).filter(
    (t) => t !== '',
  );
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    ...(system.length ? { system: system.map((text) => ({ type: 'text', text })) } : {}),
    messages: request.messages,
    ...(request.tools.length ? { tools: request.tools } : {}),
    metadata: { user_id: request.sessionId },
  };
}

/** What the SDK throws for an error response of `status`. */
function apiError(step: ScriptedStep, status: number): Error {
  const message = step.message ?? `injected ${status}`;
  const headers = new Headers(step.retryAfter !== undefined ? { 'retry-after': String(step.retryAfter) } : {});
  return Anthropic.APIError.generate(
    status,
    { type: 'error', error: { type: errorTypeOf(status), message } },
    message,
    headers,
  );
}

/** Waits until `gate` is released; rejects as the SDK does for a request its caller aborts, if `signal` aborts first. */
async function held(gates: Gates, gate: string | undefined, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) throw new Anthropic.APIUserAbortError();
  if (gate === undefined) return;
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Anthropic.APIUserAbortError());
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([gates.opened(gate), aborted]);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

export class ScriptedModel implements ModelClient {
  private readonly scripts = new Map<string, ScriptedStep[]>();
  private readonly gates = new Gates();
  private readonly calls: ScriptedCall[] = [];
  private readonly waiters: { sessionId: string; count: number; resolve: (calls: ScriptedCall[]) => void }[] = [];
  /** Every refused request and unscripted call so far; a test ends by expecting none. */
  readonly problems: ScriptProblem[] = [];

  /** Scripts the next calls of one session, replacing what was left of its script. */
  script(sessionId: string, script: ScriptedSession): void {
    this.scripts.set(sessionId, [...script.steps]);
  }

  /** Lets every call held at `gate` go on, and any later one pass straight through. */
  release(gate: string): void {
    this.gates.release(gate);
  }

  /** The calls received, oldest first: all, or one session's. */
  requests(sessionId?: string): ScriptedCall[] {
    return this.calls.filter((c) => sessionId === undefined || c.sessionId === sessionId);
  }

  /** Resolves with the session's calls once it has made `count` of them. */
  whenRequests(sessionId: string, count: number): Promise<ScriptedCall[]> {
    return new Promise((resolve) => {
      this.waiters.push({ sessionId, count, resolve });
      this.notify();
    });
  }

  private notify(): void {
    for (const w of [...this.waiters]) {
      const calls = this.requests(w.sessionId);
      if (calls.length < w.count) continue;
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve(calls);
    }
  }

  async createMessage(request: ModelRequest, opts: ModelCallOptions): Promise<ModelReply> {
    const body = bodyOf(request);
    let settle!: (outcome: CallOutcome) => void;
    const call: ScriptedCall = {
      sessionId: request.sessionId,
      request,
      body,
      compaction: isCompactionRequest(body),
      settled: new Promise((r) => (settle = r)),
    };
    this.calls.push(call);
    this.notify();
    let step: ScriptedStep;
    try {
      step = this.stepFor(call);
    } catch (err) {
      settle('refused');
      throw err;
    }
    try {
      await held(this.gates, step.gate, opts.signal);
    } catch (err) {
      settle('aborted');
      throw err;
    }
    if (step.error !== undefined || step.status !== undefined) {
      settle('failed');
      throw step.error ?? apiError(step, step.status!);
    }
    const reply = this.replyOf(step.reply!, call, opts);
    settle('replied');
    return reply;
  }

  /** The step that answers `call`, after the checks the real API makes; a refusal is recorded as a problem and thrown. */
  private stepFor(call: ScriptedCall): ScriptedStep {
    const refuse = (message: string, err = apiError({ message }, 400)) => {
      this.problems.push({ sessionId: call.sessionId, message });
      return err;
    };
    try {
      validateRequest(call.body);
    } catch (err) {
      if (err instanceof InvalidRequest) throw refuse(err.message);
      throw err;
    }
    const alternation = alternationProblem(call.request.messages as Msg[]);
    if (alternation) throw refuse(alternation);
    if (call.compaction) return { reply: compactionReply(call.body) };
    // A judge call of the `auto` policy: its own script's step (`judgeScriptKey`), else the built-in judge.
    if (isJudgeRequest(call.body)) {
      const judged = this.scripts.get(judgeScriptKey(call.sessionId))?.shift();
      return judged && (judged.reply || judged.error || judged.status !== undefined || judged.gate !== undefined)
        ? { reply: judgeReply(call.body), ...judged }
        : { reply: judgeReply(call.body) };
    }
    // A grader call of an outcome: likewise, its own script (`graderScriptKey`), else the built-in grader.
    if (isGraderRequest(call.body)) {
      const graded = this.scripts.get(graderScriptKey(call.sessionId))?.shift();
      return graded && (graded.reply || graded.error || graded.status !== undefined || graded.gate !== undefined)
        ? { reply: graderReply(call.body), ...graded }
        : { reply: graderReply(call.body) };
    }
    const step = this.scripts.get(call.sessionId)?.shift();
    if (step && (step.reply || step.error || step.status !== undefined)) return step;
    const message = `no scripted ${step ? 'reply or error' : 'step'} for call ${this.requests(call.sessionId).length} of session ${call.sessionId}`;
    throw refuse(message, ApplicationFailure.create({ message, type: 'ScriptedModel.Unscripted', nonRetryable: true }));
  }

  /** The reply, streamed to `onProgress` block by block as the SDK client reports a stream. */
  private replyOf(
    scripted: NonNullable<ScriptedStep['reply']>,
    call: ScriptedCall,
    opts: ModelCallOptions,
  ): ModelReply {
    const { content, stopReason } = completeReply(scripted, call.request.messages.length);
    opts.onProgress?.();
    for (const [index, b] of content.entries()) {
      if (b.type === 'text') opts.onProgress?.({ type: 'text', text: b.text, index });
      else if (b.type === 'thinking') opts.onProgress?.({ type: 'thinking', index });
      else {
        opts.onProgress?.({ type: 'tool_use', name: b.name, index });
        opts.onProgress?.({ type: 'tool_input', json: JSON.stringify(b.input), index });
      }
    }
    return {
      content: content as unknown as ContentBlock[],
      stopReason,
      usage: {
        inputTokens: estimateTokens(call.body),
        outputTokens: Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
        ...scripted.usage,
      },
    };
  }
}
