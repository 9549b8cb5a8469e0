// Brain activities: the model call, context compaction, and the session archive. The worker injects real
// dependencies; tests may inject others.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import type { SessionArchive } from '../archive';
import { readEvents, type CachedSessionLog, type LogTail } from '../log/session-log';
import type { ModelClient, ModelDelta, ModelReply } from '../model/model-client';
import type { Publisher, StreamHub } from '../stream';
import type { StreamPart } from '../stream/hub';
import { toModelFailure } from '../model/model-errors';
import { buildContext, compactionRequest, FULL_WINDOW, type ContextWindow } from '../session/context-builder';
import { ContentBlockSchema, type SessionEvent, type Usage } from '../session/events';
import {
  JUDGE_SYSTEM,
  indeterminate,
  judgeRequestText,
  judgeTranscript,
  parseJudgement,
  type Judgement,
} from '../session/judge';
import {
  GRADER_SYSTEM,
  graderRequestText,
  graderTranscript,
  parseVerdict,
  type Verdict,
} from '../session/outcome-grading';
import { eventsDigest } from '../session/digest';
import type { ToolSpec } from '../tools/kind';
import { expandToolSpecs, UnknownToolRefError, type WireToolSpec } from '../tools/tool-refs';
import { parseSessionEvents, sliceOutcome } from '../tools/session-events';
import { Failure } from '../session/failure-types';

export interface CallModelInput {
  sessionId: string;
  throughSeq: number;
  model: string;
  system?: string;
  tools: ToolSpec[];
  maxTokens: number;
  /** Prompt caching (absent in histories recorded before it existed: off). */
  caching?: boolean;
  /** The context window (absent: the whole log). */
  window?: ContextWindow;
  /** The token budget; past it the reply asks for a compaction instead of calling the model. */
  contextTokens?: number;
  /** Abandon (and retry) a response that sends nothing for this long. */
  streamIdleMs?: number;
  /** The digest of the events since the run's previous model call, which lets a worker holding them skip the read. */
  tail?: LogTail;
  /** A local call's events of the window that its run holds, through throughSeq (the workflow hands them over). */
  events?: SessionEvent[];
}

/** callModel's input with its tool specs as references where the platform has them (src/tools/tool-refs.ts). */
export type CallModelToolRefsInput = Omit<CallModelInput, 'tools'> & { tools: WireToolSpec[] };

/** Either the model's reply, or (with `compact`) a request to compact the window first. */
export type CallModelResult = (ModelReply & { compact?: undefined }) | { compact: { cutSeq: number; tokens: number } };

/** The judge of one tool call under the `auto` policy (src/session/judge.ts). */
export interface JudgeToolUseInput {
  sessionId: string;
  /** The call's tool_use event: the judge reads the conversation through it. */
  throughSeq: number;
  model: string;
  toolUse: { id: string; name: string; input: unknown };
  /** The judge's time limit (absent: the worker's, `ActivityDeps.judgeTimeoutMs`). */
  timeoutMs?: number;
  streamIdleMs?: number;
}

export interface JudgeToolUseResult extends Judgement {
  /** The judge's model usage; absent when no reply came. */
  usage?: Usage;
}

/** One evaluation of an outcome (src/session/outcomes.ts): the grader reads the conversation since it was defined. */
export interface GradeOutcomeInput {
  sessionId: string;
  /** The outcome's outcome_defined event, and the last event of the turn being graded. */
  fromSeq: number;
  throughSeq: number;
  model: string;
  outcome: { description: string; rubric: string };
  streamIdleMs?: number;
}

export interface GradeOutcomeResult {
  verdict: Verdict;
  explanation: string;
  usage: Usage;
}

export interface CompactInput extends CallModelInput {
  window: ContextWindow;
  /** The kept tail starts here; events window.fromSeq .. cutSeq-1 are folded into the summary. */
  cutSeq: number;
}

export interface CompactResult {
  summary: string;
  tokensBefore: number;
  tokensAfter: number;
}

export interface ActivityDeps {
  model: ModelClient;
  log: CachedSessionLog;
  archive: SessionArchive;
  /** Where model tokens are published live for `agents watch`; absent: not streamed. */
  stream?: StreamHub;
  /** How long a judge of the `auto` policy may take when its agent does not say (default 60 s). */
  judgeTimeoutMs?: number;
  /** Resets a session's stickiness when a call is retried (see `unstick`); absent: not reset. */
  resetSticky?: (execution: { namespace: string; workflowId: string; runId: string }) => Promise<unknown>;
}

/**
 * How often a model call heartbeats: four times per heartbeat timeout, so three beats in a row may be late (a busy
 * event loop, a slow server) before the server gives the call up for dead.
 */
export function heartbeatEveryMs(heartbeatTimeoutMs: number | undefined): number {
  return Math.max(50, Math.floor((heartbeatTimeoutMs ?? 4000) / 4));
}

/** Renders a model delta as preview text: tool calls as `[tool_use NAME] {input...}`. */
export function previewOf(delta: ModelDelta, first: boolean): string {
  if (delta.type === 'text') return delta.text;
  if (delta.type === 'thinking') return '';
  if (delta.type === 'tool_use') return `${first ? '' : '\n'}[tool_use ${delta.name}] `;
  return delta.json;
}

/** Which block of the reply a delta belongs to, when the stream said. */
function partOf(delta: ModelDelta): StreamPart | undefined {
  if (delta.index === undefined) return undefined;
  return { kind: delta.type === 'text' ? 'text' : delta.type === 'thinking' ? 'thinking' : 'tool', block: delta.index };
}

const ReplyContentSchema = z.array(ContentBlockSchema);
/** How much transcript a compaction call is given, at most. */
const MAX_TRANSCRIPT_CHARS = 400_000;
const DEFAULT_STREAM_IDLE_MS = 120_000;
export const DEFAULT_JUDGE_TIMEOUT_MS = 60_000;
/** How many events before the call a judge reads, at most. */
const JUDGE_CONTEXT_EVENTS = 40;
/** How many events of the work a grader reads, at most (the latest ones). */
const GRADER_CONTEXT_EVENTS = 400;

export function createActivities(deps: ActivityDeps) {
  /**
   * A retried call may be the one a dead worker was running, and that worker's sticky queue still holds the session:
   * the workflow task that takes this result would wait there until the sticky timeout sends it on. Resetting the
   * session's stickiness sends that task straight to a live worker. On a retry for another reason, the price is one
   * replay of the run by whichever worker takes the task. A failed reset only costs that wait.
   */
  const unstick = async (ctx: Context) => {
    const { attempt, workflowNamespace: namespace, workflowExecution } = ctx.info;
    // A local call is retried by the worker holding the run, inside its workflow task.
    if (attempt <= 1 || ctx.info.isLocal || !deps.resetSticky || !namespace || !workflowExecution) return;
    await deps.resetSticky({ namespace, ...workflowExecution }).catch(() => undefined);
  };

  /** Streams one request, heartbeating on a timer (a slow first byte is not a dead worker). */
  const stream = async (
    req: Parameters<ModelClient['createMessage']>[0],
    idleMs = DEFAULT_STREAM_IDLE_MS,
    live?: Publisher,
    /** Abandons the request when it aborts (the caller tells that failure from the others). */
    deadline?: AbortSignal,
  ): Promise<ModelReply> => {
    const ctx = Context.current();
    let first = true;
    // The timer alone heartbeats: a stream that stalls is the idle timer's business, a dead worker the server's.
    // The first beat is a quarter of the heartbeat timeout in, not at the start: the server times a silent attempt
    // from its start anyway, and a call answered sooner then costs no heartbeat (an RPC the server records in the
    // run's state).
    // A local call has no heartbeat: its worker's death times out the workflow task that runs it.
    const beating = !ctx.info.isLocal;
    const beat = beating
      ? setInterval(() => ctx.heartbeat(), heartbeatEveryMs(ctx.info.heartbeatTimeoutMs))
      : undefined;
    // A response that stalls (no first byte, or no next event) is abandoned, so the retry policy can try again.
    const abort = new AbortController();
    const onCancel = () => abort.abort(ctx.cancellationSignal.reason);
    ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
    const onDeadline = () => abort.abort(deadline?.reason);
    deadline?.addEventListener('abort', onDeadline, { once: true });
    let idle: NodeJS.Timeout | undefined;
    let stalled = false;
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        stalled = true;
        abort.abort(new Error('stalled'));
      }, idleMs);
    };
    armIdle();
    try {
      const reply = await deps.model.createMessage(req, {
        signal: abort.signal,
        onProgress: (delta) => {
          armIdle();
          if (delta && live) {
            const text = previewOf(delta, first);
            live.write(text, partOf(delta));
            if (text !== '') first = false;
          }
        },
      });
      const content = ReplyContentSchema.safeParse(reply.content);
      if (!content.success) {
        throw ApplicationFailure.create({
          message: `model returned malformed content: ${content.error.message}`,
          type: Failure.Model.InvalidOutput,
        });
      }
      return reply;
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
      if (stalled)
        throw ApplicationFailure.create({
          message: `the model sent nothing for ${idleMs} ms`,
          type: Failure.Model.Timeout,
        });
      throw toModelFailure(err);
    } finally {
      clearInterval(beat);
      clearTimeout(idle);
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
      deadline?.removeEventListener('abort', onDeadline);
      live?.close();
    }
  };

  /** A local call's window: the events its workflow handed over, after any part from before the run (in the archive). */
  const handedOver = async (
    input: CallModelInput & { events: SessionEvent[] },
    window: ContextWindow,
  ): Promise<SessionEvent[]> => {
    const first = input.events[0]?.seq ?? input.throughSeq + 1;
    const before =
      first > window.fromSeq
        ? await readEvents(deps.log.inner, input.sessionId, window.fromSeq, first - window.fromSeq)
        : [];
    const events = [...before, ...input.events];
    if (
      events.length !== input.throughSeq + 1 - window.fromSeq ||
      events.some((e, i) => e.seq !== window.fromSeq + i)
    ) {
      throw ApplicationFailure.create({
        message: `a local model call got events other than ${window.fromSeq}..${input.throughSeq} of session ${input.sessionId}`,
        type: Failure.Archive.Incomplete,
      });
    }
    return events;
  };

  const contextOf = async (input: CallModelInput, window: ContextWindow) => {
    // Before the read: a read that misses the cache queries the run, and a query sent to a dead worker's sticky
    // queue waits there for the sticky timeout.
    await unstick(Context.current());
    const events = input.events
      ? await handedOver({ ...input, events: input.events }, window)
      : await deps.log.readRange(input.sessionId, window.fromSeq, input.throughSeq, input.tail);
    return {
      events,
      built: buildContext({
        events,
        window,
        system: input.system,
        tools: input.tools,
        budgetTokens: input.contextTokens ?? Infinity,
      }),
    };
  };

  /** One model call over the session's context window; asks for a compaction first when the window is over budget. */
  const callModel = async (input: CallModelInput): Promise<CallModelResult> => {
    const { built } = await contextOf(input, input.window ?? FULL_WINDOW);
    if (built.overBudget && built.cutSeq !== undefined)
      return { compact: { cutSeq: built.cutSeq, tokens: built.tokens } };
    // Keyed by the event the reply follows: the watcher shows it until the log has that reply.
    const live = deps.stream?.open(
      input.sessionId,
      { kind: 'model', throughSeq: input.throughSeq },
      Context.current().info.attempt,
    );
    return stream(
      {
        sessionId: input.sessionId,
        model: input.model,
        system: built.system,
        messages: built.messages,
        tools: input.tools,
        maxTokens: input.maxTokens,
        cache: input.caching === true,
      },
      input.streamIdleMs,
      live,
    );
  };

  return {
    callModel,
    /**
     * callModel for a run that sends its tool specs by reference (src/tools/tool-refs.ts), expanded here from this
     * worker's registry. A worker that predates references has no activity of this name: a call it is given fails
     * and is tried again elsewhere, rather than reaching the model with specs it cannot read.
     */
    async callModelToolRefs(input: CallModelToolRefsInput): Promise<CallModelResult> {
      let tools: ToolSpec[];
      try {
        tools = expandToolSpecs(input.tools);
      } catch (err) {
        if (!(err instanceof UnknownToolRefError)) throw err;
        throw ApplicationFailure.create({ message: err.message, type: Failure.Model.UnknownToolRef });
      }
      return callModel({ ...input, tools });
    },

    /**
     * Judges one tool call under the `auto` policy with a model call of its own: allow, or ask a person. A judge
     * that answers out of format, or not within its time limit, escalates (`indeterminate`) instead of failing;
     * a model error fails the attempt, and the workflow escalates once the attempts are spent. Never allows on a
     * failure.
     */
    async judgeToolUse(input: JudgeToolUseInput): Promise<JudgeToolUseResult> {
      const timeoutMs = input.timeoutMs ?? deps.judgeTimeoutMs ?? DEFAULT_JUDGE_TIMEOUT_MS;
      const from = Math.max(0, input.throughSeq + 1 - JUDGE_CONTEXT_EVENTS);
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new Error('judge timeout')), timeoutMs);
      try {
        await unstick(Context.current());
        const events = await readEvents(deps.log.inner, input.sessionId, from, input.throughSeq + 1 - from);
        const transcript = judgeTranscript(events.filter((e) => !(e.type === 'tool_use' && e.id === input.toolUse.id)));
        if (deadline.signal.aborted) throw deadline.signal.reason;
        const reply = await stream(
          {
            sessionId: input.sessionId,
            model: input.model,
            system: [JUDGE_SYSTEM],
            messages: [
              { role: 'user', content: [{ type: 'text', text: judgeRequestText(transcript, input.toolUse) }] },
            ],
            tools: [],
            maxTokens: 300,
            cache: false,
          },
          input.streamIdleMs,
          undefined,
          deadline.signal,
        );
        const text = reply.content
          .filter((b) => b.type === 'text')
          .map((b) => String(b.text))
          .join('\n');
        const judgement = parseJudgement(text);
        return {
          ...(judgement ?? indeterminate(`the judge answered out of format: ${JSON.stringify(text.slice(0, 200))}`)),
          usage: reply.usage,
        };
      } catch (err) {
        if (deadline.signal.aborted && !Context.current().cancellationSignal.aborted)
          return indeterminate(`the judge did not answer within ${Math.round(timeoutMs / 100) / 10} s`);
        throw err;
      } finally {
        clearTimeout(timer);
      }
    },

    /**
     * Grades an outcome's work against its rubric with a model call of its own. An answer out of format is the
     * verdict `failed` (with the usage it cost); a model error fails the attempt, and the workflow records `failed`
     * once the attempts are spent.
     */
    async gradeOutcome(input: GradeOutcomeInput): Promise<GradeOutcomeResult> {
      await unstick(Context.current());
      const from = Math.max(input.fromSeq, input.throughSeq + 1 - GRADER_CONTEXT_EVENTS);
      const events = await readEvents(deps.log.inner, input.sessionId, from, input.throughSeq + 1 - from);
      const reply = await stream(
        {
          sessionId: input.sessionId,
          model: input.model,
          system: [GRADER_SYSTEM],
          messages: [
            {
              role: 'user',
              content: [{ type: 'text', text: graderRequestText(input.outcome, graderTranscript(events)) }],
            },
          ],
          tools: [],
          maxTokens: 2000,
          cache: false,
        },
        input.streamIdleMs,
      );
      const text = reply.content
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join('\n');
      const parsed = parseVerdict(text);
      return parsed
        ? { ...parsed, usage: reply.usage }
        : {
            verdict: 'failed',
            explanation: `the grader answered out of format: ${JSON.stringify(text.slice(0, 200))}`,
            usage: reply.usage,
          };
    },

    /** Summarises events window.fromSeq .. cutSeq-1 (and the previous summary) with one model call. */
    async compactContext(input: CompactInput): Promise<CompactResult> {
      const { events, built: before } = await contextOf(input, input.window);
      const folded = events.filter((e) => e.seq < input.cutSeq);
      const req = compactionRequest(input.window.summary, folded, MAX_TRANSCRIPT_CHARS);
      const reply = await stream(
        {
          sessionId: input.sessionId,
          model: input.model,
          system: [req.system],
          messages: [{ role: 'user', content: [{ type: 'text', text: req.text }] }],
          tools: [],
          maxTokens: Math.min(input.maxTokens, 8192),
          cache: false,
        },
        input.streamIdleMs,
      );
      const summary = reply.content
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join('\n')
        .trim();
      if (!summary)
        throw ApplicationFailure.create({
          message: 'the compaction reply had no text',
          type: Failure.Model.InvalidOutput,
        });
      const after = buildContext({
        events: events.filter((e) => e.seq >= input.cutSeq),
        window: { fromSeq: input.cutSeq, summary },
        system: input.system,
        tools: input.tools,
        budgetTokens: Infinity,
      });
      return { summary, tokensBefore: before.tokens, tokensAfter: after.tokens };
    },

    /**
     * Seals events [fromSeq, throughSeq] of the session's current run into the archive, read by query. Idempotent.
     * A query can be answered from a worker's state that ran ahead of history (a worker that built the run for a
     * query applied events no completed task had processed), so the events must match the digest the workflow
     * computed when it scheduled the seal; otherwise the seal fails and is retried until the query answers with
     * the committed events. Histories recorded before the digest pass none.
     */
    async sealEvents(input: {
      sessionId: string;
      fromSeq: number;
      throughSeq: number;
      digest?: string;
    }): Promise<{ sealed: number }> {
      if (input.throughSeq < input.fromSeq) return { sealed: 0 };
      const events = await readEvents(
        deps.log.inner,
        input.sessionId,
        input.fromSeq,
        input.throughSeq + 1 - input.fromSeq,
      );
      if (events.length !== input.throughSeq + 1 - input.fromSeq) {
        throw ApplicationFailure.create({
          message: `read ${events.length} events of ${input.fromSeq}..${input.throughSeq} to seal`,
          type: Failure.Archive.Incomplete,
        });
      }
      if (input.digest !== undefined && eventsDigest(events) !== input.digest) {
        throw ApplicationFailure.create({
          message: `the live run answered events ${input.fromSeq}..${input.throughSeq} other than the ones its history committed`,
          type: Failure.Archive.Stale,
        });
      }
      await deps.archive.seal(input.sessionId, events);
      return { sealed: events.length };
    },

    /** The session_events tool for slices that start before the current run: read through the archive. */
    async readSessionEvents(input: {
      sessionId: string;
      input: unknown;
    }): Promise<{ output: string; isError: boolean }> {
      const p = parseSessionEvents('session_events', input.input);
      if (!p.ok) return p.outcome;
      const { output, isError } = sliceOutcome(
        p.slice.from,
        await readEvents(deps.log.inner, input.sessionId, p.slice.from, p.slice.limit),
      );
      return { output, isError };
    },
  };
}
