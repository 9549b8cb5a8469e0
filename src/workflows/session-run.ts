// SessionRun: the one owner of a run's state. It holds this run's slice of the log, the inbox marks, usage, the
// context window and the Carry mapping, and the decision state the loop reads: whether a turn runs, whether the
// session is ending, where a turn resumes. That state is private; it changes only through the named transitions
// below, and `next()` says what the loop does next as one Step.
import { ApplicationFailure, CancellationScope, condition, workflowInfo } from '@temporalio/workflow';
import { FULL_WINDOW, windowOf, type ContextWindow } from '../session/context-builder';
import type { Agent } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import { logEvent } from './visibility';
import {
  MAX_CARRIED_MESSAGE_IDS,
  type Carry,
  type EventsPage,
  type EventsQueryArgs,
  type ParentRef,
  type SessionState,
  type UserMessage,
} from '../session/contract';
import { Failure } from '../session/failure-types';

/** An events query answers with at most about this many bytes of events, to stay well under payload limits. */
const QUERY_PAGE_BYTES = 1024 * 1024;

const zeroUsage = (): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});

/** What the other parts of a run add to the Carry: sandboxes, MCP tools, the round in progress, children. */
export type CarryParts = Omit<
  Carry,
  'nextSeq' | 'run' | 'window' | 'usage' | 'recentMessageIds' | 'lastUserSeq' | 'handledThrough' | 'parent'
>;

/** What a turn ends with: back to waiting for input, or a handover to a new run that resumes at `round`. */
export type TurnEnd = { kind: 'idle' } | { kind: 'handover'; round: number };

/**
 * What the loop does next:
 * - `wait`: wait for input (stopping idle sandboxes meanwhile);
 * - `turn`: run a turn from `round` (0, or the round a previous run handed over in);
 * - `handover`: seal and continue as new, between turns or (with `inTurn`) in the middle of one;
 * - `end`: the session ends with `reason`.
 */
export type Step =
  | { kind: 'wait' }
  | { kind: 'turn'; round: number }
  | { kind: 'handover'; inTurn?: { round: number } }
  | { kind: 'end'; reason: string };

/**
 * Where the loop stands: at its head; after an idle handover that did not happen (it waits next); after a wait;
 * after a turn that ended to hand over at `round`; after that handover did not happen (the turn goes on).
 */
type Position =
  | { at: 'head' }
  | { at: 'idle-handover' }
  | { at: 'waited' }
  | { at: 'turn-over'; round: number }
  | { at: 'turn-handover'; round: number };

export class SessionRun {
  /** This run's events; event `seq` is events[seq - baseSeq]. */
  readonly events: SessionEvent[] = [];
  /** The seq of this run's first event; earlier events are sealed in the session archive. */
  readonly baseSeq: number;
  readonly run: number;
  /** Set in a child session: the spawn_agent call it answers. */
  readonly parentRef: ParentRef | undefined;
  /** A session thread: a child that stays open after its reply, for the coordinator's next message. */
  staysOpen = false;
  readonly usage: Usage;
  private readonly seenMessageIds: Map<string, number>;
  private _state: SessionState = 'waiting_for_user';
  private _lastUserSeq: number;
  /** The last user message a model call has seen (or an interrupt has passed over). */
  private handledThrough: number;
  private _endReason: string | undefined;
  /** The turn in progress, which an interrupt or the end cancels. */
  private turn: { scope: CancellationScope; interruptReason?: string } | undefined;
  /** Set while this run hands over in the middle of a turn; an interrupt then lands here. */
  private handover: { interruptReason?: string } | undefined;
  /** The context window the model sees; moves forward with each compaction. */
  private _window: ContextWindow;
  private _sealedThrough: number;
  private _currentRound = 0;
  private _modelCalls = 0;
  /** After a failed handover (the archive could not seal), the next try waits for this many more events. */
  private handoverRetryAtSeq = -1;
  /** The seq of this run's last `interrupted` event (-1 before one). */
  private lastInterruptedSeq = -1;
  /** The round a turn resumes at: a run that took over mid-turn goes straight on with that turn. */
  private resumeRound: number | undefined;
  private position: Position = { at: 'head' };
  /** The agent the next run starts with, once an update replaced its tools; the loop hands over for it while idle. */
  nextAgent: Agent | undefined;

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
    this._lastUserSeq = carried?.lastUserSeq ?? -1;
    this.handledThrough = carried?.handledThrough ?? -1;
    this._window = carried?.window ?? FULL_WINDOW;
    this._sealedThrough = this.baseSeq - 1;
    this.resumeRound = carried?.inTurn?.round;
  }

  get state(): SessionState {
    return this._state;
  }
  /** Why the session ends, once something asked it to (undefined while it goes on). */
  get endReason(): string | undefined {
    return this._endReason;
  }
  get lastUserSeq(): number {
    return this._lastUserSeq;
  }
  get window(): ContextWindow {
    return this._window;
  }
  /** The last seq sealed into the archive. */
  get sealedThrough(): number {
    return this._sealedThrough;
  }
  /** The tool round the current turn is in. */
  get currentRound(): number {
    return this._currentRound;
  }

  // ---- the loop ----

  /** What the loop does next. */
  next(): Step {
    const position = this.position;
    this.position = { at: 'head' };
    switch (position.at) {
      case 'idle-handover':
        this.position = { at: 'waited' };
        return { kind: 'wait' };
      case 'waited':
        if (this._endReason !== undefined) return { kind: 'end', reason: this._endReason };
        if (this.agentChangePending()) {
          this.position = { at: 'idle-handover' };
          return { kind: 'handover' };
        }
        return this.startTurn();
      case 'turn-over':
        this.position = { at: 'turn-handover', round: position.round };
        return { kind: 'handover', inTurn: { round: position.round } };
      case 'turn-handover':
        // Still here: the session is ending, or the archive failed; this run carries on with the turn.
        if (this._endReason === undefined) this.resumeRound = position.round;
        return this.next();
      case 'head':
        if (this._endReason !== undefined) return { kind: 'end', reason: this._endReason };
        if (this.resumeRound !== undefined) return this.startTurn();
        if (this.shouldHandOver() || this.agentChangePending()) {
          this.position = { at: 'idle-handover' };
          return { kind: 'handover' };
        }
        this.position = { at: 'waited' };
        return { kind: 'wait' };
    }
  }

  private startTurn(): Step {
    const round = this.resumeRound ?? 0;
    this.resumeRound = undefined;
    return { kind: 'turn', round };
  }

  /** Whether a wait for input is over: a message arrived that no model call has seen, or the session is ending. */
  hasInput(): boolean {
    return this._endReason !== undefined || this._lastUserSeq > this.handledThrough;
  }

  /** A turn starts: the session is running, and an interrupt or the end cancels the returned scope. */
  beginTurn(): { scope: CancellationScope; interruptReason?: string } {
    this._state = 'running';
    const turn = { scope: new CancellationScope() };
    this.turn = turn;
    return turn;
  }

  /** The turn was cut by an interrupt or the end (its open calls are closed already). */
  turnCut(turn: { interruptReason?: string }): void {
    if (this._endReason === undefined)
      this.append({ type: 'interrupted', reason: turn.interruptReason ?? 'interrupted' });
    this.markInputHandled();
  }

  /** The turn is over, whether it ended, was cut, or hands over at a round. */
  finishTurn(end: TurnEnd): void {
    this.turn = undefined;
    if (end.kind === 'handover') {
      this.position = { at: 'turn-over', round: end.round };
      return;
    }
    if (this._endReason === undefined) this._state = 'waiting_for_user';
    // A child session answers one task: its turn's last reply is the answer, and it ends. A session thread stays.
    if (this.parentRef && !this.staysOpen && this._endReason === undefined) this._endReason = 'answered';
  }

  /** The turn is at `round` (the handover query carries it). */
  enterRound(round: number): void {
    this._currentRound = round;
  }

  /** Every user message so far is seen: by the model call about to be made, or passed over by an interrupt. */
  markInputHandled(): void {
    this.handledThrough = this._lastUserSeq;
  }

  /** Ends the session (a no-op once it is ending), cutting the turn in progress. */
  requestEnd(reason: string): void {
    if (this._endReason !== undefined) return;
    this._endReason = reason;
    this.turn?.scope.cancel();
  }

  /** Ends the session with `reason`, whatever was asked before: a woken child gives up its task. */
  endNow(reason: string): void {
    this._endReason = reason;
  }

  /** Interrupts the turn in progress, if any; a handover in progress appends the interrupt before it goes. */
  interrupt(reason: string): void {
    if (this.handover) this.handover.interruptReason = reason;
    if (!this.turn) return;
    this.turn.interruptReason = reason;
    this.turn.scope.cancel();
  }

  /**
   * The interrupt with an acknowledgement: the seq of the `interrupted` event it caused, or null when a handover
   * in progress will append it (that handover waits for every handler to finish, so this one cannot wait for it).
   */
  async interruptAcknowledged(reason: string): Promise<{ seq: number | null; after: number }> {
    const from = this.nextSeq();
    if (this.handover) this.handover.interruptReason = reason;
    const turn = this.turn;
    if (turn) {
      turn.interruptReason = reason;
      turn.scope.cancel();
      await condition(() => this.lastInterruptedSeq >= from || this.turn !== turn || this._endReason !== undefined);
      if (this.lastInterruptedSeq >= from) return { seq: this.lastInterruptedSeq, after: from };
      if (this._endReason !== undefined)
        throw ApplicationFailure.nonRetryable('session has ended', Failure.Session.Ended);
    }
    if (this.handover) {
      this.handover.interruptReason = reason;
      return { seq: null, after: from };
    }
    // No turn runs (or it ended on its own meanwhile): the interrupt is recorded all the same.
    return { seq: this.append({ type: 'interrupted', reason }).seq, after: from };
  }

  /** A handover starts; returns its record, where an interrupt meanwhile lands. */
  beginHandover(): { interruptReason?: string } {
    const handover: { interruptReason?: string } = {};
    this.handover = handover;
    return handover;
  }

  /** The interrupt a handover in the middle of a turn took in is appended: the turn is over. */
  handoverInterrupted(reason: string): void {
    this.append({ type: 'interrupted', reason });
    this.markInputHandled();
  }

  endHandover(): void {
    this.handover = undefined;
  }

  /** The handover failed (the archive could not seal): the next try waits for more events. */
  deferHandover(): void {
    this.handoverRetryAtSeq = this.nextSeq() + 50;
  }

  /** Events through `seq` are sealed into the archive. */
  sealed(through: number): void {
    this._sealedThrough = through;
  }

  /** A model call's retry waits in `rescheduling`; an interrupt or the end cuts the wait, and the turn's end sets the state. */
  async rescheduled(wait: () => Promise<void>): Promise<void> {
    const before = this._state;
    this._state = 'rescheduling';
    try {
      await wait();
    } finally {
      if (this._state === 'rescheduling') this._state = before;
    }
  }

  /** The number of the model call about to be made, for the activity summaries the Web UI shows. */
  countModelCall(): number {
    return ++this._modelCalls;
  }

  /** Appends a compaction; the model's window moves forward to it. */
  compacted(e: Extract<NewEvent, { type: 'context_compacted' }>): void {
    const event = this.append(e);
    if (event.type === 'context_compacted') this._window = windowOf(event);
  }

  /** session_ended is in the log: nothing more may be appended. */
  ended(reason: string): void {
    this.append({ type: 'session_ended', reason });
    this._state = 'ended';
  }

  // ---- the log ----

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
  acceptUserMessage(msg: UserMessage, fromThread?: string): number {
    if (msg.messageId !== undefined) {
      const existing = this.seenMessageIds.get(msg.messageId);
      if (existing !== undefined) return existing;
    }
    const event = this.append({
      type: 'user_message',
      text: msg.text,
      ...(msg.messageId ? { messageId: msg.messageId } : {}),
      ...(fromThread ? { fromThread } : {}),
    });
    if (msg.messageId !== undefined) this.seenMessageIds.set(msg.messageId, event.seq);
    this._lastUserSeq = event.seq;
    return event.seq;
  }

  /** Appends a message the harness writes to the model (an outcome's task or feedback): input a turn answers. */
  acceptHarnessMessage(text: string): number {
    const event = this.append({ type: 'user_message', text, source: 'harness' });
    this._lastUserSeq = event.seq;
    return event.seq;
  }

  addUsage(u: Usage): void {
    this.usage.inputTokens += u.inputTokens;
    this.usage.outputTokens += u.outputTokens;
    this.usage.cacheReadInputTokens += u.cacheReadInputTokens;
    this.usage.cacheCreationInputTokens += u.cacheCreationInputTokens;
    // State only (the status query's usage): no command depends on it, so replay is unchanged.
    if (u.cacheCreation1hInputTokens)
      this.usage.cacheCreation1hInputTokens =
        (this.usage.cacheCreation1hInputTokens ?? 0) + u.cacheCreation1hInputTokens;
  }

  assertOpen(): void {
    if (this._endReason !== undefined)
      throw ApplicationFailure.nonRetryable('session has ended', Failure.Session.Ended);
  }

  /** True once session_ended is in the log: nothing more may be appended. */
  closed(): boolean {
    return this._state === 'ended';
  }

  /** Gives every listed tool_use an error result, so the conversation stays valid. */
  closeToolUses(ids: readonly string[], message: string): void {
    for (const id of ids)
      this.append({
        type: 'tool_result',
        toolUseId: id,
        output: message,
        isError: true,
        error: { kind: 'tool', message },
      });
  }

  /**
   * Whether the run should hand over to start the next turn with a new agent (`nextAgent`); not again until more
   * events arrive after a handover the archive failed.
   */
  agentChangePending(): boolean {
    return this.nextAgent !== undefined && this.nextSeq() >= this.handoverRetryAtSeq;
  }

  /** Whether the run should continue as new before going on: its history is long or large. */
  shouldHandOver(): boolean {
    if (this.nextSeq() < this.handoverRetryAtSeq) return false;
    const info = workflowInfo();
    return (
      info.continueAsNewSuggested ||
      info.historyLength >= this.limits.historyEvents ||
      info.historySize >= this.limits.historyBytes
    );
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
      window: this._window,
      usage: { ...this.usage },
      recentMessageIds: [...this.seenMessageIds].slice(-MAX_CARRIED_MESSAGE_IDS),
      lastUserSeq: this._lastUserSeq,
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
