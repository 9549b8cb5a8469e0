// The state of one run of a session: its slice of the log, the inbox marks, usage and the context window, and
// the only mapping from and to the Carry that one run hands the next.
import { ApplicationFailure, CancellationScope, workflowInfo } from '@temporalio/workflow';
import { FULL_WINDOW, type ContextWindow } from '../session/context-builder';
import type { Agent } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import { logEvent } from './visibility';
import { MAX_CARRIED_MESSAGE_IDS, type Carry, type EventsPage, type EventsQueryArgs, type ParentRef, type SessionState, type UserMessage } from '../session/contract';
import { Failure } from '../session/failure-types';

/** An events query answers with at most about this many bytes of events, to stay well under payload limits. */
const QUERY_PAGE_BYTES = 1024 * 1024;

const zeroUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });

/** What the other parts of a run add to the Carry: sandboxes, MCP tools, the round in progress, children. */
export type CarryParts = Omit<Carry, 'nextSeq' | 'run' | 'window' | 'usage' | 'recentMessageIds' | 'lastUserSeq' | 'handledThrough' | 'parent'>;

export class RunState {
  /** This run's events; event `seq` is events[seq - baseSeq]. */
  readonly events: SessionEvent[] = [];
  /** The seq of this run's first event; earlier events are sealed in the session archive. */
  readonly baseSeq: number;
  readonly run: number;
  /** Set in a child session: the spawn_agent call it answers. */
  readonly parentRef: ParentRef | undefined;
  readonly usage: Usage;
  private readonly seenMessageIds: Map<string, number>;
  state: SessionState = 'waiting_for_user';
  lastUserSeq: number;
  handledThrough: number;
  endReason: string | undefined;
  /** The turn in progress, which an interrupt or the end cancels. */
  turn: { scope: CancellationScope; interruptReason?: string } | undefined;
  /** The context window the model sees; moves forward with each compaction. */
  window: ContextWindow;
  /** The last seq sealed into the archive. */
  sealedThrough: number;
  /** The tool round the current turn is in. */
  currentRound = 0;
  /** Set while this run hands over in the middle of a turn; an interrupt then lands here. */
  handover: { interruptReason?: string } | undefined;
  /** Model calls made by this run, for the activity summaries the Web UI shows. */
  modelCalls = 0;
  /** After a failed handover (the archive could not seal), the next try waits for this many more events. */
  handoverRetryAtSeq = -1;
  /** The seq of this run's last `interrupted` event (-1 before one). */
  lastInterruptedSeq = -1;

  constructor(
    readonly sessionId: string,
    private readonly limits: Agent['limits'],
    carried: Carry | undefined,
    parent: ParentRef | undefined,
  ) {
    this.baseSeq = carried?.nextSeq ?? 0;
    this.run = carried?.run ?? 1;
    this.parentRef = parent ?? carried?.parent;
    this.seenMessageIds = new Map<string, number>(carried?.recentMessageIds ?? []);
    this.usage = carried ? { ...carried.usage } : zeroUsage();
    this.lastUserSeq = carried?.lastUserSeq ?? -1;
    this.handledThrough = carried?.handledThrough ?? -1;
    this.window = carried?.window ?? FULL_WINDOW;
    this.sealedThrough = this.baseSeq - 1;
  }

  nextSeq(): number {
    return this.baseSeq + this.events.length;
  }

  append(e: NewEvent): SessionEvent {
    const event = { seq: this.nextSeq(), ...e, time: new Date().toISOString() } as SessionEvent;
    this.events.push(event);
    if (event.type === 'interrupted') this.lastInterruptedSeq = event.seq;
    logEvent(event);
    return event;
  }

  /** Appends a user message once per messageId; returns its seq (the first one's, for a repeat). */
  acceptUserMessage(msg: UserMessage): number {
    if (msg.messageId !== undefined) {
      const existing = this.seenMessageIds.get(msg.messageId);
      if (existing !== undefined) return existing;
    }
    const event = this.append({ type: 'user_message', text: msg.text, ...(msg.messageId ? { messageId: msg.messageId } : {}) });
    if (msg.messageId !== undefined) this.seenMessageIds.set(msg.messageId, event.seq);
    this.lastUserSeq = event.seq;
    return event.seq;
  }

  addUsage(u: Usage): void {
    this.usage.inputTokens += u.inputTokens;
    this.usage.outputTokens += u.outputTokens;
    this.usage.cacheReadInputTokens += u.cacheReadInputTokens;
    this.usage.cacheCreationInputTokens += u.cacheCreationInputTokens;
    // State only (the status query's usage): no command depends on it, so replay is unchanged.
    if (u.cacheCreation1hInputTokens) this.usage.cacheCreation1hInputTokens = (this.usage.cacheCreation1hInputTokens ?? 0) + u.cacheCreation1hInputTokens;
  }

  assertOpen(): void {
    if (this.endReason !== undefined) throw ApplicationFailure.nonRetryable('session has ended', Failure.Session.Ended);
  }

  /** True once session_ended is in the log: nothing more may be appended. */
  closed(): boolean {
    return this.state === 'ended';
  }

  /** Gives every listed tool_use an error result, so the conversation stays valid. */
  closeToolUses(ids: readonly string[], message: string): void {
    for (const id of ids) this.append({ type: 'tool_result', toolUseId: id, output: message, isError: true, error: { kind: 'tool', message } });
  }

  /** Whether the run should continue as new before going on: its history is long or large. */
  shouldHandOver(): boolean {
    if (this.nextSeq() < this.handoverRetryAtSeq) return false;
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= this.limits.historyEvents || info.historySize >= this.limits.historyBytes;
  }

  /** A page of this run's events from `args.from`, at most `args.limit` of them and about QUERY_PAGE_BYTES. */
  eventsPage(args: Required<EventsQueryArgs>): EventsPage {
    if (args.from < this.baseSeq) return { events: [], nextSeq: args.from, firstSeq: this.baseSeq };
    const slice: SessionEvent[] = [];
    let bytes = 0;
    for (let i = Math.max(0, args.from - this.baseSeq); i < this.events.length && slice.length < args.limit; i++) {
      bytes += JSON.stringify(this.events[i]).length;
      if (slice.length > 0 && bytes > QUERY_PAGE_BYTES) break;
      slice.push(this.events[i]);
    }
    return { events: slice, nextSeq: args.from + slice.length, firstSeq: this.baseSeq };
  }

  /** What the next run starts from, with what the other parts of this run add. */
  toCarry(parts: CarryParts): Carry {
    const { inTurn, sandboxes, lastHost, mcpTools, openToolUses, ...children } = parts;
    return {
      nextSeq: this.nextSeq(),
      run: this.run + 1,
      window: this.window,
      usage: { ...this.usage },
      recentMessageIds: [...this.seenMessageIds].slice(-MAX_CARRIED_MESSAGE_IDS),
      lastUserSeq: this.lastUserSeq,
      handledThrough: this.handledThrough,
      ...(inTurn ? { inTurn } : {}),
      sandboxes,
      lastHost,
      ...(mcpTools ? { mcpTools } : {}),
      openToolUses,
      ...(this.parentRef ? { parent: this.parentRef } : {}),
      ...children,
    };
  }
}
