// A session's API events folded into what the console shows: the conversation as items (messages, tool calls with
// their results and confirmations, markers, errors), the session's state, and the calls that wait on the user.
// Pure and incremental: the stream and the list may deliver the same event, and each is taken once.
export interface ApiEvent {
  type: string;
  id: string;
  processed_at?: string | null;
  [field: string]: unknown;
}

export type CallKind = 'tool' | 'mcp' | 'custom';

export interface CallItem {
  kind: 'call';
  id: string;
  call: CallKind;
  name: string;
  server?: string;
  input: Record<string, unknown>;
  at?: string | null;
  result?: { text: string; isError: boolean };
  confirmation?: { result: 'allow' | 'deny'; message?: string };
}

/** A line between the conversation's items: an interrupt, a compaction, the end, a sandbox provisioned or lost. */
export interface MarkerItem {
  kind: 'marker';
  id: string;
  text: string;
  detail?: string;
  /** `warn` for what went wrong underneath the conversation (a lost sandbox). */
  tone?: 'warn';
  at?: string | null;
}

export type Item =
  | { kind: 'user' | 'agent'; id: string; text: string; at?: string | null }
  | CallItem
  | MarkerItem
  | { kind: 'error'; id: string; errorType: string; message: string; retry: string; at?: string | null }
  | { kind: 'other'; id: string; type: string; at?: string | null };

export type Status = 'unknown' | 'running' | 'idle' | 'terminated';

const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? content
        .map((b: { type?: string; text?: unknown }) =>
          b.type === 'text' ? String(b.text ?? '') : `[${b.type ?? 'block'}]`,
        )
        .join('\n\n')
    : '';

const RESULT_REF: Record<string, string> = {
  'agent.tool_result': 'tool_use_id',
  'agent.mcp_tool_result': 'mcp_tool_use_id',
  'user.custom_tool_result': 'custom_tool_use_id',
};
const CALL_KIND: Record<string, CallKind> = {
  'agent.tool_use': 'tool',
  'agent.mcp_tool_use': 'mcp',
  'agent.custom_tool_use': 'custom',
};
const MARKERS: Record<string, string> = {
  'user.interrupt': 'Interrupted',
  'agent.thread_context_compacted': 'Context compacted: earlier turns were summarised',
  'session.status_terminated': 'Session ended',
  'session.deleted': 'Session deleted',
};
const seconds = (ms: unknown): string =>
  typeof ms === 'number' && Number.isFinite(ms) ? ` in ${(ms / 1000).toFixed(1)} s` : '';

/** The platform's sandbox events (`platform.sandbox_*`, see docs/api.md) as markers. */
function sandboxMarker(e: ApiEvent): Omit<MarkerItem, 'kind' | 'id' | 'at'> {
  const name = typeof e.sandbox_name === 'string' ? e.sandbox_name : 'sandbox';
  if (e.type === 'platform.workspace_restored') {
    const taken = typeof e.taken_at === 'string' ? ` taken ${e.taken_at}` : '';
    return {
      text: `Workspace of ${name} restored from snapshot ${String(e.seq)}${seconds(e.duration_ms)}`,
      detail: `${String(e.files)} files, ${String(e.size_bytes)} bytes,${taken}`,
    };
  }
  if (e.type === 'platform.sandbox_paused') {
    return {
      text: `Sandbox ${name} paused while idle`,
      detail: `workspace kept in snapshot ${String(e.snapshot_seq)}; the next call resumes it on any host`,
    };
  }
  if (e.type === 'platform.sandbox_lost') {
    return {
      text: `Sandbox ${name} lost`,
      detail: `${typeof e.reason === 'string' ? e.reason : 'gone'}; the next call gets a new one`,
      tone: 'warn',
    };
  }
  const loosened = Array.isArray(e.loosened) ? e.loosened.filter((l): l is string => typeof l === 'string') : [];
  return {
    text: `Sandbox ${name} ${e.resumed === true ? 'resumed' : 'provisioned'}${seconds(e.duration_ms)}`,
    ...(loosened.length > 0 ? { detail: `loosened: ${loosened.join(', ')}` } : {}),
  };
}

/** Events that carry state or accounting, not a line of the conversation (the page's header shows status and usage). */
const SILENT = new Set([
  'session.status_running',
  'session.status_idle',
  'session.status_rescheduled',
  'session.usage',
  // One per changing call would crowd the conversation: the page's Workspace snapshots panel lists them.
  'platform.workspace_snapshot',
  'span.model_request_start',
  'span.model_request_end',
  'span.outcome_evaluation_ongoing',
]);

/** An outcome's definition and its evaluations, as markers: what it asks, and each grade with its explanation. */
function outcomeMarker(e: ApiEvent): Omit<MarkerItem, 'kind' | 'id' | 'at'> | undefined {
  const n = typeof e.iteration === 'number' ? e.iteration + 1 : '?';
  if (e.type === 'user.define_outcome')
    return {
      text: `Outcome: ${typeof e.description === 'string' ? e.description : ''}`,
      detail: `graded against its rubric, at most ${typeof e.max_iterations === 'number' ? e.max_iterations : 3} evaluations`,
    };
  if (e.type === 'span.outcome_evaluation_start') return { text: `Evaluation ${n}: grading the work` };
  if (e.type === 'span.outcome_evaluation_end') {
    const result = typeof e.result === 'string' ? e.result : 'unknown';
    return {
      text: `Evaluation ${n}: ${result.replace(/_/g, ' ')}`,
      ...(typeof e.explanation === 'string' ? { detail: e.explanation } : {}),
      ...(result === 'satisfied' || result === 'needs_revision' ? {} : { tone: 'warn' as const }),
    };
  }
  return undefined;
}

/** A sandbox's workspace captured after a call that changed it (`platform.workspace_snapshot`). */
export interface WorkspaceSnapshot {
  id: string;
  sandbox: string;
  seq: number;
  /** When the capture was stored. */
  at: string | null;
  files: number;
  sizeBytes: number;
  chunkCount: number;
  /** What this snapshot added to storage: the chunks (and their bytes) the workspace did not hold yet. */
  newChunks: number;
  newBytes: number;
}

/** A new workspace given a sandbox's latest snapshot before its first call (`platform.workspace_restored`). */
export interface WorkspaceRestore {
  id: string;
  sandbox: string;
  /** The container the snapshot was written into. */
  sandboxId: string;
  seq: number;
  /** When the restored snapshot was taken. */
  takenAt: string | null;
  /** When the restore was done. */
  at: string | null;
  files: number;
  sizeBytes: number;
  durationMs: number;
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const isoOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** One evaluation of an outcome: its grade and the grader's explanation. */
export interface Grade {
  outcomeId: string;
  iteration: number;
  result: string;
  explanation?: string;
}

export class Timeline {
  readonly items: Item[] = [];
  /** Every evaluation of the session's outcomes, in the order they ended. */
  readonly grades: Grade[] = [];
  /** Every workspace snapshot and restore of the session's sandboxes, in log order. */
  readonly snapshots: WorkspaceSnapshot[] = [];
  readonly restores: WorkspaceRestore[] = [];
  status: Status = 'unknown';
  /** Why the session is idle: `end_turn`, `requires_action`, `retries_exhausted`. */
  stopReason: string | undefined;
  /** Ids of the calls waiting for a confirmation or a custom tool result. */
  readonly waiting = new Set<string>();
  /** How many times the session went idle or ended: each one is a point where its tools' writes were collected. */
  settles = 0;
  /** Tokens of the model requests seen, for a live total while the session's own usage catches up. */
  outputTokens = 0;
  private readonly seen = new Set<string>();
  private readonly calls = new Map<string, number>();
  /** Tool calls with no result yet, oldest first: a sandbox event belongs to the one of them that runs. */
  private readonly open: string[] = [];

  /** Takes `events` in order; returns whether any was new. */
  push(events: readonly ApiEvent[]): boolean {
    let changed = false;
    for (const e of events) {
      if (typeof e?.id !== 'string' || this.seen.has(e.id)) continue;
      this.seen.add(e.id);
      this.one(e);
      changed = true;
    }
    return changed;
  }

  get size(): number {
    return this.seen.size;
  }

  call(id: string): CallItem | undefined {
    const i = this.calls.get(id);
    return i === undefined ? undefined : (this.items[i] as CallItem);
  }

  /**
   * Puts a sandbox's marker before the call it was provisioned for (or that found it lost): in the log it comes
   * between that call's use and its result, and the call's item already holds both.
   */
  private sandbox(marker: MarkerItem): void {
    const running = this.open.find((id) => !this.waiting.has(id));
    const at = running === undefined ? undefined : this.calls.get(running);
    if (at === undefined) {
      this.items.push(marker);
      return;
    }
    this.items.splice(at, 0, marker);
    for (const [id, i] of this.calls) if (i >= at) this.calls.set(id, i + 1);
  }

  /** Replaces the call's item with a changed copy, so a renderer comparing items sees it. */
  private update(id: string, patch: Partial<CallItem>): void {
    const i = this.calls.get(id);
    if (i === undefined) return;
    this.items[i] = { ...(this.items[i] as CallItem), ...patch };
  }

  private one(e: ApiEvent): void {
    const at = e.processed_at;
    switch (e.type) {
      case 'user.message':
      case 'agent.message':
        this.items.push({ kind: e.type === 'user.message' ? 'user' : 'agent', id: e.id, text: textOf(e.content), at });
        return;
      case 'agent.tool_use':
      case 'agent.mcp_tool_use':
      case 'agent.custom_tool_use': {
        const input = typeof e.input === 'object' && e.input !== null ? (e.input as Record<string, unknown>) : {};
        this.calls.set(e.id, this.items.length);
        if (e.type === 'agent.tool_use') this.open.push(e.id);
        this.items.push({
          kind: 'call',
          id: e.id,
          call: CALL_KIND[e.type],
          name: String(e.name ?? ''),
          ...(typeof e.mcp_server_name === 'string' ? { server: e.mcp_server_name } : {}),
          input,
          at,
        });
        return;
      }
      case 'agent.tool_result':
      case 'agent.mcp_tool_result':
      case 'user.custom_tool_result': {
        const ref = String(e[RESULT_REF[e.type]] ?? '');
        this.waiting.delete(ref);
        if (this.open.includes(ref)) this.open.splice(this.open.indexOf(ref), 1);
        if (this.calls.has(ref))
          this.update(ref, { result: { text: textOf(e.content), isError: e.is_error === true } });
        else this.items.push({ kind: 'other', id: e.id, type: e.type, at });
        return;
      }
      case 'user.tool_confirmation': {
        const ref = String(e.tool_use_id ?? '');
        this.waiting.delete(ref);
        this.update(ref, {
          confirmation: {
            result: e.result === 'deny' ? 'deny' : 'allow',
            ...(typeof e.deny_message === 'string' ? { message: e.deny_message } : {}),
          },
        });
        return;
      }
      case 'session.error': {
        const err = (e.error ?? {}) as { type?: string; message?: string; retry_status?: { type?: string } };
        this.items.push({
          kind: 'error',
          id: e.id,
          errorType: err.type ?? 'error',
          message: err.message ?? '',
          retry: err.retry_status?.type ?? 'unknown',
          at,
        });
        return;
      }
      case 'session.status_running':
        this.status = 'running';
        this.stopReason = undefined;
        this.waiting.clear();
        return;
      case 'session.status_idle': {
        const stop = (e.stop_reason ?? {}) as { type?: string; event_ids?: unknown };
        this.status = 'idle';
        this.settles += 1;
        this.stopReason = stop.type;
        this.waiting.clear();
        if (stop.type === 'requires_action' && Array.isArray(stop.event_ids))
          for (const id of stop.event_ids) if (typeof id === 'string') this.waiting.add(id);
        return;
      }
      case 'platform.workspace_snapshot':
        this.snapshots.push({
          id: e.id,
          sandbox: typeof e.sandbox_name === 'string' ? e.sandbox_name : 'sandbox',
          seq: count(e.seq),
          at: isoOrNull(at),
          files: count(e.files),
          sizeBytes: count(e.size_bytes),
          chunkCount: count(e.chunk_count),
          newChunks: count(e.new_chunks),
          newBytes: count(e.new_bytes),
        });
        return;
      case 'platform.sandbox_provisioned':
      case 'platform.sandbox_lost':
      case 'platform.sandbox_paused':
      case 'platform.workspace_restored':
        if (e.type === 'platform.workspace_restored')
          this.restores.push({
            id: e.id,
            sandbox: typeof e.sandbox_name === 'string' ? e.sandbox_name : 'sandbox',
            sandboxId: typeof e.sandbox_id === 'string' ? e.sandbox_id : '',
            seq: count(e.seq),
            takenAt: isoOrNull(e.taken_at),
            at: isoOrNull(at),
            files: count(e.files),
            sizeBytes: count(e.size_bytes),
            durationMs: count(e.duration_ms),
          });
        this.sandbox({ kind: 'marker', id: e.id, ...sandboxMarker(e), at });
        return;
      case 'user.define_outcome':
      case 'span.outcome_evaluation_start':
      case 'span.outcome_evaluation_end':
        if (e.type === 'span.outcome_evaluation_end')
          this.grades.push({
            outcomeId: String(e.outcome_id ?? ''),
            iteration: typeof e.iteration === 'number' ? e.iteration : 0,
            result: typeof e.result === 'string' ? e.result : 'unknown',
            ...(typeof e.explanation === 'string' ? { explanation: e.explanation } : {}),
          });
        this.items.push({ kind: 'marker', id: e.id, ...outcomeMarker(e)!, at });
        return;
      case 'span.model_request_end': {
        const usage = (e.model_usage ?? {}) as { output_tokens?: number };
        this.outputTokens += usage.output_tokens ?? 0;
        return;
      }
      default:
        if (e.type in MARKERS) {
          if (e.type === 'session.status_terminated' || e.type === 'session.deleted') {
            this.status = 'terminated';
            this.settles += 1;
            this.waiting.clear();
          }
          this.items.push({ kind: 'marker', id: e.id, text: MARKERS[e.type], at });
        } else if (!SILENT.has(e.type)) this.items.push({ kind: 'other', id: e.id, type: e.type, at });
    }
  }
}

/** What an idle session waits for, in words. */
export function idleReason(stopReason: string | undefined, waiting = 0): string {
  if (stopReason === 'requires_action')
    return waiting === 1 ? 'waiting for your action on 1 call' : `waiting for your action on ${waiting || 'its'} calls`;
  if (stopReason === 'retries_exhausted') return 'stopped after an error';
  // end_turn, or a session that has not run a turn yet.
  return 'waiting for a message';
}
