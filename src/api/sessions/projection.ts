// The session log (src/session/events.ts) in the API's event vocabulary: a pure projection, so every recorded
// history still replays and the log keeps what the API has no place for (hand-offs, summaries). A sandbox's
// provisioning and loss have no event in the hosted API; they go out as the platform's own `platform.*` events.
// Event ids are derived from (session id, seq, part), so any API process projects the same ids.
import { createHash } from 'node:crypto';
import type { BetaManagedAgentsSessionEvent } from '@anthropic-ai/sdk/resources/beta/sessions/events';
import type { BetaManagedAgentsSessionAgent } from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import type { SessionEvent, Usage } from '../../session/events';
import { Failure } from '../../session/failure-types';
import { turnEnd } from '../../session/turn-end';
import { evaluatePolicy, policyFor, type ToolPolicy } from '../../session/policy';
import { centsOf, type Money } from '../../session/list-cost';

/**
 * The platform's own events, beside the hosted API's. `platform.` is a namespace the hosted API does not use, so a
 * later hosted event cannot collide with them; the SDK passes an event type it does not know through unchanged.
 */
export interface PlatformSandboxProvisionedEvent {
  type: 'platform.sandbox_provisioned';
  id: string;
  processed_at: string;
  /** The sandbox's name in the agent (`main` for the API's sessions). */
  sandbox_name: string;
  sandbox_id: string;
  /** A stopped sandbox started again, its files intact, rather than a new one. */
  resumed: boolean;
  duration_ms: number;
  /** `runsc` (gVisor) or `runc`; null in logs written before it was recorded. */
  runtime: string | null;
  /** The hardening its recipe turned off, such as `network: bridge`. */
  loosened: string[];
}

export interface PlatformSandboxLostEvent {
  type: 'platform.sandbox_lost';
  id: string;
  processed_at: string;
  sandbox_name: string;
  sandbox_id: string;
  reason: string;
}

/** A sandbox's workspace captured to the API's database after a tool call that changed it. */
export interface PlatformWorkspaceSnapshotEvent {
  type: 'platform.workspace_snapshot';
  id: string;
  processed_at: string;
  sandbox_name: string;
  /** The snapshot's number among the sandbox's, from 1. */
  seq: number;
  files: number;
  /** The sum of the workspace's file sizes. */
  size_bytes: number;
  chunk_count: number;
  /** Chunks (and their bytes) the workspace's store did not hold yet: what this snapshot cost. */
  new_chunks: number;
  new_bytes: number;
}

/** A new workspace (another host, or a sandbox reaped) given the sandbox's latest snapshot before its first call. */
export interface PlatformWorkspaceRestoredEvent {
  type: 'platform.workspace_restored';
  id: string;
  processed_at: string;
  sandbox_name: string;
  sandbox_id: string;
  seq: number;
  /** When the snapshot was taken. */
  taken_at: string;
  files: number;
  size_bytes: number;
  duration_ms: number;
}

/** An idle sandbox paused: its workspace captured (snapshot `snapshot_seq`, 0: never changed) and the sandbox removed. */
export interface PlatformSandboxPausedEvent {
  type: 'platform.sandbox_paused';
  id: string;
  processed_at: string;
  sandbox_name: string;
  sandbox_id: string;
  snapshot_seq: number;
}

export type PlatformEvent =
  | PlatformSandboxProvisionedEvent
  | PlatformSandboxLostEvent
  | PlatformWorkspaceSnapshotEvent
  | PlatformWorkspaceRestoredEvent
  | PlatformSandboxPausedEvent;
export type ApiSessionEvent = BetaManagedAgentsSessionEvent | PlatformEvent;

/** The log events of a sandbox provisioned again: the session stays `rescheduling` through them. */
const RESCHEDULING_EVENTS = new Set<string>(['sandbox_rescheduling', 'sandbox_lost', 'sandbox_provisioned']);

/** The id of part `part` of log event `seq` in `sessionId`'s log. */
export function eventId(sessionId: string, seq: number, part = 0): string {
  return `sevt_${createHash('sha256').update(`${sessionId}\0${seq}\0${part}`).digest('base64url').slice(0, 26)}`;
}

/**
 * The parts of an `assistant_message`: 0 `span.model_request_start`, 1 `agent.message`, 2 `span.model_request_end`,
 * 3 `session.status_idle`, 5 `session.usage`, and 10 + k the `agent.thinking` of its k-th thinking block. The parts
 * are fixed, not counted, so an id never changes when a later version projects more of the same event.
 */
export const MESSAGE_PART = 1;
const USAGE_PART = 5;
export const thinkingPart = (k: number) => 10 + k;

const MCP_NAME = /^mcp__(.+?)__(.+)$/;

/** `environment`: a toolset call a self-hosted environment's worker answers with `user.tool_result`. */
type ToolKind =
  { kind: 'tool' } | { kind: 'environment' } | { kind: 'custom' } | { kind: 'mcp'; server: string; tool: string };

type SessionErrorObject = Extract<ApiSessionEvent, { type: 'session.error' }>['error'];
type ToolUseApiEvent = Extract<ApiSessionEvent, { type: 'agent.tool_use' }>;
type Permission = Pick<ToolUseApiEvent, 'evaluated_permission' | 'evaluation'>;

/** A call under the `auto` policy, held until its judgement (tool_judged) says what permission it has. */
interface HeldUse {
  seq: number;
  name: string;
  input: Record<string, unknown>;
  kind: ToolKind;
}

/** A logged error as the API's: the log records errors once retries are spent, so each is `exhausted`. */
function errorObject(kind: string, message: string): SessionErrorObject {
  const retry_status = { type: 'exhausted' as const };
  if (kind === 'model') return { type: 'model_request_failed_error', message, retry_status };
  if (kind === 'limit') return { type: 'tool_use_limit_reached_error', message, retry_status };
  // An MCP error's server is in its message only; the API's mcp_* errors need it as a field.
  return { type: 'unknown_error', message, retry_status };
}

/** A transient model failure that is being retried, by the API's error type for it. */
function retryingError(failureType: string, message: string): SessionErrorObject {
  const retry_status = { type: 'retrying' as const };
  if (failureType === Failure.Model.RateLimited) return { type: 'model_rate_limited_error', message, retry_status };
  if (failureType === Failure.Model.Overloaded) return { type: 'model_overloaded_error', message, retry_status };
  return { type: 'model_request_failed_error', message, retry_status };
}

/**
 * Folds log events, in seq order from 0, into API events. Feed it pages as they arrive (`push`); it keeps what
 * later events need: which tool each call was, which calls wait on the user, and whether a turn is running.
 */
export class SessionProjector {
  private customTools = new Set<string>();
  private environmentTools = new Set<string>();
  private policies: Record<string, ToolPolicy> = {};
  private readonly uses = new Map<string, { eventId: string; kind: ToolKind }>();
  private readonly byEventId = new Map<string, string>();
  private readonly waiting = new Set<string>();
  /** Thread calls cross-posted and still waiting: the API event id of each copy, by the thread's tool_use id. */
  private readonly crossPosted = new Map<string, string>();
  /** Calls under `auto` not shown yet: their `agent.*_tool_use` goes out with their judgement. */
  private readonly held = new Map<string, HeldUse>();
  private running = false;
  /** A sandbox of the running turn is being provisioned again (`session.status_rescheduled` was shown). */
  private rescheduling = false;
  /** An outcome is being worked on: the agent's turns end without going idle until it is over. */
  private outcomeActive = false;
  /** The `span.outcome_evaluation_start` id of each outcome's evaluation in progress. */
  private readonly evaluationStarts = new Map<string, string>();
  private nextSeq = 0;
  /** The session's usage so far, as `sessions.retrieve` reports it: every model request's, its children's included. */
  private readonly usage = { input: 0, output: 0, cacheRead: 0, cacheCreation: 0, cacheCreation1h: 0 };
  /** The list cost so far in nano-USD, once the log counts one; the budget as of the event being projected. */
  private costNanoUsd: number | undefined;
  private budget: Money | null = null;
  /** A coordinator's threads as its log tells them, by `sthr_` id (threads.list reads them). */
  readonly threads = new Map<string, ThreadRecord>();

  constructor(readonly sessionId: string) {}

  /** The model's `toolu_…` id behind an `agent.*_use` event id, for confirmations and custom tool results. */
  toolUseIdOf(apiEventId: string): string | undefined {
    return this.byEventId.get(apiEventId);
  }

  /** The next seq this projector expects. */
  get seq(): number {
    return this.nextSeq;
  }

  push(events: readonly SessionEvent[]): ApiSessionEvent[] {
    const out: ApiSessionEvent[] = [];
    for (const e of events) {
      if (e.seq !== this.nextSeq)
        throw new Error(`projection of ${this.sessionId} expected seq ${this.nextSeq}, got ${e.seq}`);
      this.nextSeq++;
      if (this.rescheduling && !RESCHEDULING_EVENTS.has(e.type)) {
        // The provision ended without a sandbox (its call's error result follows): the turn runs on.
        this.rescheduling = false;
        if (this.running)
          out.push({ type: 'session.status_running', id: eventId(this.sessionId, e.seq, 90), processed_at: e.time });
      }
      out.push(...this.one(e));
    }
    return out;
  }

  private kindOf(name: string): ToolKind {
    if (this.environmentTools.has(name)) return { kind: 'environment' };
    if (this.customTools.has(name)) return { kind: 'custom' };
    const m = MCP_NAME.exec(name);
    return m ? { kind: 'mcp', server: m[1], tool: m[2] } : { kind: 'tool' };
  }

  private startTurn(e: SessionEvent, part: number, out: ApiSessionEvent[]): void {
    if (this.running) return;
    this.running = true;
    out.push({ type: 'session.status_running', id: eventId(this.sessionId, e.seq, part), processed_at: e.time });
  }

  private idle(
    e: SessionEvent,
    part: number,
    stop: 'end_turn' | 'retries_exhausted' | 'budget_reached' | 'requires_action',
    out: ApiSessionEvent[],
  ): void {
    const id = eventId(this.sessionId, e.seq, part);
    if (stop === 'requires_action') {
      out.push({
        type: 'session.status_idle',
        id,
        processed_at: e.time,
        stop_reason: { type: 'requires_action', event_ids: [...this.waiting] },
        stop_details: null,
      });
      return;
    }
    this.running = false;
    out.push({
      type: 'session.status_idle',
      id,
      processed_at: e.time,
      stop_reason: { type: stop },
      stop_details: null,
    });
  }

  private wait(useEventId: string, e: SessionEvent, out: ApiSessionEvent[]): void {
    this.waiting.add(useEventId);
    this.idle(e, 1, 'requires_action', out);
  }

  /** A call that waited was settled: with nothing else waiting, the turn runs again. */
  private settle(useEventId: string | undefined, e: SessionEvent, part: number, out: ApiSessionEvent[]): void {
    if (!useEventId || !this.waiting.delete(useEventId)) return;
    if (this.waiting.size > 0) this.idle(e, part, 'requires_action', out);
    else out.push({ type: 'session.status_running', id: eventId(this.sessionId, e.seq, part), processed_at: e.time });
  }

  private addCost(nanoUsd: number | undefined): void {
    if (nanoUsd !== undefined) this.costNanoUsd = (this.costNanoUsd ?? 0) + nanoUsd;
  }

  private addUsage(u: Usage): void {
    this.usage.input += u.inputTokens;
    this.usage.output += u.outputTokens;
    this.usage.cacheRead += u.cacheReadInputTokens;
    this.usage.cacheCreation += u.cacheCreationInputTokens;
    this.usage.cacheCreation1h += u.cacheCreation1hInputTokens ?? 0;
  }

  /** The cumulative snapshot after a model request, in the fields `sessions.retrieve` reports. */
  private usageEvent(id: string, at: string): ApiSessionEvent {
    const u = this.usage;
    return {
      type: 'session.usage',
      id,
      processed_at: at,
      usage: {
        input_tokens: u.input,
        output_tokens: u.output,
        cache_read_input_tokens: u.cacheRead,
        cache_creation: {
          ephemeral_5m_input_tokens: u.cacheCreation - u.cacheCreation1h,
          ephemeral_1h_input_tokens: u.cacheCreation1h,
        },
        ...(this.costNanoUsd !== undefined
          ? { list_cost: { amount: String(centsOf(this.costNanoUsd)), currency: 'USD' as const } }
          : {}),
      },
      budget: budgetLimit(this.budget),
    };
  }

  /** The `agent.tool_use` or `agent.mcp_tool_use` of a call, with the permission the gate applied to it. */
  private useEvent(
    seq: number,
    at: string,
    name: string,
    input: Record<string, unknown>,
    kind: ToolKind,
    permission: Permission,
    /** A copy of a thread's call: the thread's session, whose event it is, and the thread's id. */
    from?: { sessionId: string; threadId: string },
  ): ApiSessionEvent {
    const id = eventId(from?.sessionId ?? this.sessionId, seq);
    const thread = from ? { session_thread_id: from.threadId } : {};
    if (kind.kind === 'mcp')
      return {
        type: 'agent.mcp_tool_use',
        id,
        processed_at: at,
        mcp_server_name: kind.server,
        name: kind.tool,
        input,
        ...permission,
        ...thread,
      };
    return { type: 'agent.tool_use', id, processed_at: at, name, input, ...permission, ...thread };
  }

  /**
   * A thread's call that waits for the client, cross-posted: a copy of the thread's own `agent.*_tool_use` event
   * (same id, so the answer is routed to the thread by it) with `session_thread_id`, and the primary thread idles
   * with `requires_action` naming it until the thread's wait is over.
   */
  private threadCall(e: Extract<SessionEvent, { type: 'thread_tool_call' }>, at: string, out: ApiSessionEvent[]): void {
    if (e.state === 'settled') {
      this.settle(this.crossPosted.get(e.toolUseId), e, 1, out);
      this.crossPosted.delete(e.toolUseId);
      return;
    }
    if (e.useSeq === undefined || e.name === undefined) return;
    const from = { sessionId: e.sessionId, threadId: e.threadId };
    const useId = eventId(e.sessionId, e.useSeq);
    const input = (typeof e.input === 'object' && e.input !== null && !Array.isArray(e.input) ? e.input : {}) as Record<
      string,
      unknown
    >;
    if (e.waitsFor === 'result')
      out.push({
        type: 'agent.custom_tool_use',
        id: useId,
        processed_at: at,
        name: e.name,
        input,
        session_thread_id: e.threadId,
      });
    else {
      const m = MCP_NAME.exec(e.name);
      const kind: ToolKind = m ? { kind: 'mcp', server: m[1], tool: m[2] } : { kind: 'tool' };
      // The rule that asked, as the thread's gate named it: `<tool>: always_ask`, or `<tool>: auto (<reason code>)`.
      const auto = /: auto \((.+)\)$/.exec(e.policy ?? '');
      const evaluation: Permission['evaluation'] = auto
        ? { type: 'auto', evaluated_permission: { type: 'ask', reason_code: auto[1] } }
        : e.policy?.endsWith(': always_ask')
          ? { type: 'always_ask' }
          : undefined;
      out.push(
        this.useEvent(
          e.useSeq,
          at,
          e.name,
          input,
          kind,
          { evaluated_permission: 'ask', ...(evaluation ? { evaluation } : {}) },
          from,
        ),
      );
    }
    this.crossPosted.set(e.toolUseId, useId);
    this.wait(useId, e, out);
  }

  /** A held call shown before its judgement came (it was closed first, as by an interrupt): no permission applied. */
  private release(toolUseId: string, at: string, out: ApiSessionEvent[]): void {
    const h = this.held.get(toolUseId);
    if (!h) return;
    this.held.delete(toolUseId);
    out.push(this.useEvent(h.seq, at, h.name, h.input, h.kind, {}));
  }

  private one(e: SessionEvent): ApiSessionEvent[] {
    const id = (part = 0) => eventId(this.sessionId, e.seq, part);
    const at = e.time;
    const out: ApiSessionEvent[] = [];
    switch (e.type) {
      case 'session_started': {
        const agent = e.agent as { clientTools?: { name?: unknown; runsIn?: unknown }[]; policies?: unknown };
        const named = (env: boolean) =>
          new Set(
            (agent.clientTools ?? [])
              .filter((t) => (t.runsIn === 'environment') === env)
              .map((t) => t.name)
              .filter((n): n is string => typeof n === 'string'),
          );
        this.customTools = named(false);
        this.environmentTools = named(true);
        this.policies =
          typeof agent.policies === 'object' && agent.policies !== null
            ? (agent.policies as Record<string, ToolPolicy>)
            : {};
        if (e.budget) {
          this.budget = e.budget;
          this.costNanoUsd ??= 0;
        }
        break;
      }
      case 'user_message':
        // The harness's own nudges are not the user's words.
        if (e.source === 'harness') break;
        // In a session thread, the coordinator's message is an agent-to-agent delivery.
        if (e.fromThread)
          out.push({
            type: 'agent.thread_message_received',
            id: id(),
            processed_at: at,
            from_session_thread_id: e.fromThread,
            content: [{ type: 'text', text: e.text }],
          });
        else out.push({ type: 'user.message', id: id(), processed_at: at, content: [{ type: 'text', text: e.text }] });
        this.startTurn(e, 1, out);
        break;
      case 'assistant_message': {
        const start = id(0);
        out.push({ type: 'span.model_request_start', id: start, processed_at: at });
        // One progress signal per thinking block; the thinking itself is not carried, as hosted.
        let thinking = 0;
        for (const b of e.content)
          if (b.type === 'thinking' || b.type === 'redacted_thinking')
            out.push({ type: 'agent.thinking', id: id(thinkingPart(thinking++)), processed_at: at });
        const text = e.content.flatMap((b) =>
          b.type === 'text' && typeof b.text === 'string' && b.text !== ''
            ? [{ type: 'text' as const, text: b.text }]
            : [],
        );
        if (text.length > 0) out.push({ type: 'agent.message', id: id(MESSAGE_PART), processed_at: at, content: text });
        out.push({
          type: 'span.model_request_end',
          id: id(2),
          processed_at: at,
          model_request_start_id: start,
          is_error: false,
          model_usage: {
            input_tokens: e.usage.inputTokens,
            output_tokens: e.usage.outputTokens,
            cache_read_input_tokens: e.usage.cacheReadInputTokens,
            cache_creation_input_tokens: e.usage.cacheCreationInputTokens,
          },
        });
        this.addUsage(e.usage);
        this.addCost(e.costNanoUsd);
        out.push(this.usageEvent(id(USAGE_PART), at));
        if (turnEnd(e) === 'end_turn' && this.waiting.size === 0 && !this.outcomeActive)
          this.idle(e, 3, 'end_turn', out);
        break;
      }
      case 'tool_use': {
        const kind = this.kindOf(e.name);
        const useId = id();
        this.uses.set(e.id, { eventId: useId, kind });
        this.byEventId.set(useId, e.id);
        const input = (
          typeof e.input === 'object' && e.input !== null && !Array.isArray(e.input) ? e.input : {}
        ) as Record<string, unknown>;
        const policy = policyFor(this.policies, e.name);
        if (kind.kind === 'custom') {
          out.push({ type: 'agent.custom_tool_use', id: useId, processed_at: at, name: e.name, input });
          this.wait(useId, e, out);
        } else if (policy === 'auto') {
          // The gate judges the call before it runs, and tool_judged follows in the log: the call goes out then,
          // with that judgement, so no reader (a self-hosted environment's runner among them) sees it without one.
          this.held.set(e.id, { seq: e.seq, name: e.name, input, kind });
        } else if (kind.kind === 'mcp') {
          // An MCP call's permission is its tool's policy, else its server's (the gate's own rule).
          const ask = evaluatePolicy(e.name, policy, e.input).ask;
          out.push(
            this.useEvent(e.seq, at, e.name, input, kind, {
              evaluated_permission: ask ? 'ask' : 'allow',
              ...(typeof policy !== 'object' ? { evaluation: { type: ask ? 'always_ask' : 'always_allow' } } : {}),
            }),
          );
        } else {
          // The session's own gate decides with the same pure function (src/workflows/approvals.ts), so the
          // permission shown is the one applied: a runner holds an `ask` call until its confirmation.
          const ask = evaluatePolicy(e.name, policy, e.input).ask;
          out.push(
            this.useEvent(e.seq, at, e.name, input, kind, {
              evaluated_permission: ask ? 'ask' : 'allow',
              // The API's agents set always_allow or always_ask; an agent file's pattern rules have no API name.
              ...(typeof policy !== 'object' ? { evaluation: { type: ask ? 'always_ask' : 'always_allow' } } : {}),
            }),
          );
        }
        break;
      }
      case 'tool_judged': {
        // The judge's usage counts in the session's, as any model request's.
        if (e.usage) {
          this.addUsage(e.usage);
          out.push(this.usageEvent(id(USAGE_PART), at));
        }
        const h = this.held.get(e.toolUseId);
        if (!h) break;
        this.held.delete(e.toolUseId);
        out.push(
          this.useEvent(h.seq, at, h.name, h.input, h.kind, {
            evaluated_permission: e.permission,
            evaluation: {
              type: 'auto',
              evaluated_permission:
                e.permission === 'allow'
                  ? { type: 'allow' }
                  : { type: 'ask', reason_code: e.reasonCode ?? 'indeterminate' },
            },
          }),
        );
        break;
      }
      case 'approval_requested': {
        this.release(e.toolUseId, at, out);
        const use = this.uses.get(e.toolUseId);
        if (use) this.wait(use.eventId, e, out);
        break;
      }
      case 'approval_resolved': {
        const use = this.uses.get(e.toolUseId);
        if (!use) break;
        out.push({
          type: 'user.tool_confirmation',
          id: id(),
          processed_at: at,
          tool_use_id: use.eventId,
          result: e.allow ? 'allow' : 'deny',
          ...(!e.allow && e.reason ? { deny_message: e.reason } : {}),
        });
        this.settle(use.eventId, e, 1, out);
        break;
      }
      case 'tool_result': {
        this.release(e.toolUseId, at, out);
        const use = this.uses.get(e.toolUseId);
        const content = [{ type: 'text' as const, text: e.output === '' ? '(no output)' : e.output }];
        const useId = use?.eventId ?? eventId(this.sessionId, -1, 0);
        if (use?.kind.kind === 'custom') {
          out.push({
            type: 'user.custom_tool_result',
            id: id(),
            processed_at: at,
            custom_tool_use_id: useId,
            content,
            is_error: e.isError,
          });
          this.settle(useId, e, 1, out);
        } else if (use?.kind.kind === 'environment') {
          // The worker's answer, or the error the session wrote when none came in time: either way the call's result.
          out.push({
            type: 'user.tool_result',
            id: id(),
            processed_at: at,
            tool_use_id: useId,
            content,
            is_error: e.isError,
          });
          this.settle(useId, e, 1, out);
        } else {
          if (use?.kind.kind === 'mcp')
            out.push({
              type: 'agent.mcp_tool_result',
              id: id(),
              processed_at: at,
              mcp_tool_use_id: useId,
              content,
              is_error: e.isError,
            });
          else
            out.push({
              type: 'agent.tool_result',
              id: id(),
              processed_at: at,
              tool_use_id: useId,
              content,
              is_error: e.isError,
            });
          // An interrupt or end closes waiting calls with error results; they wait no longer.
          if (use) this.waiting.delete(use.eventId);
        }
        break;
      }
      case 'context_compacted':
        out.push({ type: 'agent.thread_context_compacted', id: id(), processed_at: at });
        break;
      case 'interrupted':
        out.push({ type: 'user.interrupt', id: id(), processed_at: at });
        this.waiting.clear();
        // An interrupted turn reads as one that ended: the SDK's stop reasons have no interrupt of their own.
        if (this.running && turnEnd(e) === 'interrupted') this.idle(e, 1, 'end_turn', out);
        break;
      case 'error':
        out.push({ type: 'session.error', id: id(), processed_at: at, error: errorObject(e.kind, e.message) });
        if (this.running && turnEnd(e) === 'retries_exhausted') this.idle(e, 1, 'retries_exhausted', out);
        break;
      case 'sandbox_provisioned':
        out.push({
          type: 'platform.sandbox_provisioned',
          id: id(),
          processed_at: at,
          sandbox_name: e.name,
          sandbox_id: e.sandboxId,
          resumed: e.resumed,
          duration_ms: e.ms,
          runtime: e.runtime ?? null,
          loosened: e.loosened,
        });
        if (this.rescheduling) {
          this.rescheduling = false;
          if (this.running) out.push({ type: 'session.status_running', id: id(1), processed_at: at });
        }
        break;
      case 'sandbox_rescheduling':
        // A sandbox of the running turn is provisioned again, its workspace maybe restored from a snapshot.
        if (this.running) {
          this.rescheduling = true;
          out.push({ type: 'session.status_rescheduled', id: id(), processed_at: at });
        }
        break;
      case 'sandbox_paused':
        out.push({
          type: 'platform.sandbox_paused',
          id: id(),
          processed_at: at,
          sandbox_name: e.name,
          sandbox_id: e.sandboxId,
          snapshot_seq: e.snapshotSeq,
        });
        break;
      case 'workspace_snapshot':
        out.push({
          type: 'platform.workspace_snapshot',
          id: id(),
          processed_at: at,
          sandbox_name: e.name,
          seq: e.snapshotSeq,
          files: e.files,
          size_bytes: e.sizeBytes,
          chunk_count: e.chunkCount,
          new_chunks: e.newChunks,
          new_bytes: e.newBytes,
        });
        break;
      case 'workspace_restored':
        out.push({
          type: 'platform.workspace_restored',
          id: id(),
          processed_at: at,
          sandbox_name: e.name,
          sandbox_id: e.sandboxId,
          seq: e.snapshotSeq,
          taken_at: e.takenAt,
          files: e.files,
          size_bytes: e.sizeBytes,
          duration_ms: e.ms,
        });
        break;
      case 'sandbox_lost':
        out.push({
          type: 'platform.sandbox_lost',
          id: id(),
          processed_at: at,
          sandbox_name: e.name,
          sandbox_id: e.sandboxId,
          reason: e.reason,
        });
        break;
      case 'session_updated':
        if (e.budget !== undefined) this.budget = e.budget;
        out.push({
          type: 'session.updated',
          id: id(),
          processed_at: at,
          ...(e.title !== undefined ? { title: e.title } : {}),
          ...(e.metadata !== undefined && Object.keys(e.metadata).length > 0 ? { metadata: e.metadata } : {}),
          ...(e.budget !== undefined ? { budget: budgetLimit(e.budget) } : {}),
          ...(e.agent !== undefined ? { agent: e.agent as unknown as BetaManagedAgentsSessionAgent } : {}),
        });
        break;
      case 'budget_reached':
        // The turn stopped before a model call; a message while the budget is reached stops at once the same way.
        if (this.running) this.idle(e, 0, 'budget_reached', out);
        break;
      case 'model_retry_scheduled':
        // The error with `retrying`, then the status; the exhausted error, if it comes, is the log's `error` event.
        out.push({
          type: 'session.error',
          id: id(),
          processed_at: at,
          error: retryingError(e.error.type, e.error.message),
        });
        out.push({ type: 'session.status_rescheduled', id: id(1), processed_at: at });
        break;
      case 'model_retry_started':
        out.push({ type: 'session.status_running', id: id(), processed_at: at });
        break;
      case 'subagent_finished':
        // A child's usage counts in its parent's, as in `sessions.retrieve`; the next snapshot carries it.
        if (e.usage) this.addUsage(e.usage);
        this.addCost(e.costNanoUsd);
        break;
      case 'outcome_defined':
        // A file rubric is shown resolved to its text, as the hosted API does.
        out.push({
          type: 'user.define_outcome',
          id: id(),
          processed_at: at,
          outcome_id: e.outcomeId,
          description: e.description,
          rubric: { type: 'text', content: e.rubric },
          max_iterations: e.maxIterations,
        });
        this.outcomeActive = true;
        this.startTurn(e, 1, out);
        break;
      case 'outcome_evaluation_started':
        this.evaluationStarts.set(e.outcomeId, id());
        out.push({
          type: 'span.outcome_evaluation_start',
          id: id(),
          processed_at: at,
          outcome_id: e.outcomeId,
          iteration: e.iteration,
        });
        break;
      case 'outcome_evaluation_ongoing':
        out.push({
          type: 'span.outcome_evaluation_ongoing',
          id: id(),
          processed_at: at,
          outcome_id: e.outcomeId,
          iteration: e.iteration,
        });
        break;
      case 'outcome_evaluated': {
        const startId = this.evaluationStarts.get(e.outcomeId);
        this.evaluationStarts.delete(e.outcomeId);
        if (e.evaluated && startId)
          out.push({
            type: 'span.outcome_evaluation_end',
            id: id(),
            processed_at: at,
            outcome_id: e.outcomeId,
            outcome_evaluation_start_id: startId,
            iteration: e.iteration,
            result: e.result,
            explanation: e.explanation,
            usage: {
              input_tokens: e.usage?.inputTokens ?? 0,
              output_tokens: e.usage?.outputTokens ?? 0,
              cache_read_input_tokens: e.usage?.cacheReadInputTokens ?? 0,
              cache_creation_input_tokens: e.usage?.cacheCreationInputTokens ?? 0,
            },
          });
        // The grader's usage counts in the session's, as any model request's.
        if (e.usage) {
          this.addUsage(e.usage);
          this.addCost(e.costNanoUsd);
          out.push(this.usageEvent(id(USAGE_PART), at));
        }
        if (e.result === 'needs_revision') break;
        this.outcomeActive = false;
        // Over: the session goes idle, except after max_iterations_reached (one last turn acknowledges it) and an
        // interrupt (its own event ends the turn).
        if (
          e.result !== 'max_iterations_reached' &&
          e.result !== 'interrupted' &&
          this.running &&
          this.waiting.size === 0
        )
          this.idle(e, 3, 'end_turn', out);
        break;
      }
      case 'thread_created':
      case 'thread_status':
      case 'thread_message':
        noteThread(this.threads, e);
        out.push(threadEvent(e, id(), at));
        break;
      case 'thread_archived':
        noteThread(this.threads, e);
        break;
      case 'thread_tool_call':
        this.threadCall(e, at, out);
        break;
      case 'session_ended':
        this.waiting.clear();
        this.running = false;
        out.push({ type: 'session.status_terminated', id: id(), processed_at: at });
        break;
      default:
        // sandbox_handed_off/_received, subagent_*: the API's sessions have no hand-off or spawn_agent tool.
        break;
    }
    return out;
  }
}

/** A coordinator's thread: its child session, roster agent, status and times. */
export interface ThreadRecord {
  threadId: string;
  sessionId: string;
  agent: string;
  status: 'running' | 'idle' | 'terminated';
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
  /** Its whole usage as it last reported it; undefined before its first reply. */
  usage?: Usage;
}

function noteThread(
  threads: Map<string, ThreadRecord>,
  e: Extract<SessionEvent, { type: 'thread_created' | 'thread_status' | 'thread_message' | 'thread_archived' }>,
): void {
  if (e.type === 'thread_created') {
    threads.set(e.threadId, {
      threadId: e.threadId,
      sessionId: e.sessionId,
      agent: e.agent,
      status: 'running',
      createdAt: e.time,
      updatedAt: e.time,
      archivedAt: null,
    });
    return;
  }
  const t = threads.get(e.threadId);
  if (!t) return;
  t.updatedAt = e.time;
  if (e.type === 'thread_status') {
    t.status = e.status;
    if (e.usage) t.usage = e.usage;
  }
  if (e.type === 'thread_archived') t.archivedAt = e.time;
}

/** A session thread's event as the API's (src/workflows/threads.ts writes them). */
function threadEvent(
  e: Extract<SessionEvent, { type: 'thread_created' | 'thread_status' | 'thread_message' }>,
  id: string,
  at: string,
): ApiSessionEvent {
  const content = (text: string) => [{ type: 'text' as const, text: text === '' ? '(no text)' : text }];
  switch (e.type) {
    case 'thread_created':
      return {
        type: 'session.thread_created',
        id,
        processed_at: at,
        agent_name: e.agent,
        session_thread_id: e.threadId,
        workflow_run_id: null,
      };
    case 'thread_message':
      return e.direction === 'sent'
        ? {
            type: 'agent.thread_message_sent',
            id,
            processed_at: at,
            to_session_thread_id: e.threadId,
            content: content(e.text),
            ...(e.agent ? { to_agent_name: e.agent } : {}),
          }
        : {
            type: 'agent.thread_message_received',
            id,
            processed_at: at,
            from_session_thread_id: e.threadId,
            content: content(e.text),
            ...(e.agent ? { from_agent_name: e.agent } : {}),
          };
    case 'thread_status': {
      const common = { id, processed_at: at, agent_name: e.agent, session_thread_id: e.threadId };
      if (e.status === 'idle')
        return {
          type: 'session.thread_status_idle',
          ...common,
          stop_reason: { type: e.stopReason ?? 'end_turn' },
          stop_details: null,
        };
      return { type: `session.thread_status_${e.status}`, ...common };
    }
  }
}

/** A budget as the API's `BetaManagedAgentsBudgetLimit`. */
function budgetLimit(b: Money | null) {
  return b ? { type: 'limit' as const, max_list_cost: { amount: String(b.amount), currency: b.currency } } : null;
}

/** The whole log, projected. */
export function projectLog(sessionId: string, events: readonly SessionEvent[]): ApiSessionEvent[] {
  return new SessionProjector(sessionId).push(events);
}
