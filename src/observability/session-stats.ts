// What `agents status` adds to the status query: errors by kind, elapsed time, cost and a coordinator's threads,
// read from the log; the list cost against the budget, as the session counts it.
import type { SessionEvent, Usage } from '../session/events';
import type { SessionStatus } from '../session/contract';
import { NANO_USD_PER_CENT } from '../session/list-cost';
import { costOf, priceOf, type PriceTable } from './pricing';

export interface SessionStats {
  /** Tool calls whose tool failed (a command's non-zero exit, an MCP tool's error): the model's business. */
  toolErrors: number;
  /** Tool calls the infrastructure failed (a lost sandbox, an unreachable host or MCP server). */
  infraErrors: number;
  /** Tool calls refused by a policy or a person. */
  deniedErrors: number;
  /** `error` events (a model call past its retries, a limit, an archive failure), by kind. */
  sessionErrors: Record<string, number>;
  toolCalls: number;
  modelReplies: number;
  model?: string;
  startedAt?: string;
  /** From the first event to the last (the session ended) or to `now`. */
  elapsedMs?: number;
  /** A coordinator's session threads, in the order they started. */
  threads: ThreadSummary[];
}

/** A session thread as the coordinator's log tells it: its roster agent, its latest status, its own log's session. */
export interface ThreadSummary {
  threadId: string;
  agent: string;
  /** The session whose log is the thread's own (`agents events` reads it). */
  sessionId: string;
  status: 'running' | 'idle' | 'terminated';
  archived: boolean;
  /** Its whole usage as it last reported it. */
  usage?: Usage;
}

export function sessionStats(events: readonly SessionEvent[], now: Date): SessionStats {
  const stats: SessionStats = {
    toolErrors: 0,
    infraErrors: 0,
    deniedErrors: 0,
    sessionErrors: {},
    toolCalls: 0,
    modelReplies: 0,
    threads: [],
  };
  const threads = new Map<string, ThreadSummary>();
  for (const e of events) {
    if (e.type === 'thread_created')
      threads.set(e.threadId, {
        threadId: e.threadId,
        agent: e.agent,
        sessionId: e.sessionId,
        status: 'running',
        archived: false,
      });
    else if (e.type === 'thread_status' && threads.has(e.threadId))
      Object.assign(threads.get(e.threadId)!, { status: e.status }, e.usage ? { usage: e.usage } : {});
    else if (e.type === 'thread_archived' && threads.has(e.threadId))
      Object.assign(threads.get(e.threadId)!, { archived: true, status: 'terminated' });
    if (e.type === 'session_started' && typeof e.agent.model === 'string') stats.model = e.agent.model;
    else if (e.type === 'tool_use') stats.toolCalls++;
    else if (e.type === 'assistant_message') stats.modelReplies++;
    else if (e.type === 'error') stats.sessionErrors[e.kind] = (stats.sessionErrors[e.kind] ?? 0) + 1;
    else if (e.type === 'tool_result' && e.isError) {
      const kind = e.error?.kind ?? 'tool';
      if (kind === 'infra') stats.infraErrors++;
      else if (kind === 'denied') stats.deniedErrors++;
      else stats.toolErrors++;
    }
  }
  stats.threads = [...threads.values()];
  if (events.length > 0) {
    stats.startedAt = events[0].time;
    const last = events[events.length - 1];
    const end = last.type === 'session_ended' ? Date.parse(last.time) : now.getTime();
    stats.elapsedMs = Math.max(0, end - Date.parse(events[0].time));
  }
  return stats;
}

/** The session's cost in US dollars, or undefined when the model has no price. */
export function sessionCost(usage: Usage, model: string | undefined, prices: PriceTable): number | undefined {
  const price = model === undefined ? undefined : priceOf(prices, model);
  return price ? costOf(usage, price) : undefined;
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** One line for a thread, e.g. `thread sthr_1 (reviewer): idle, 1200 tokens; its log: agents events sesn_x-t1`. */
export function threadLine(t: ThreadSummary): string {
  const tokens = t.usage
    ? `, ${t.usage.inputTokens + t.usage.cacheReadInputTokens + t.usage.cacheCreationInputTokens + t.usage.outputTokens} tokens`
    : '';
  return `thread ${t.threadId} (${t.agent}): ${t.status}${t.archived ? ', archived' : ''}${tokens}; its log: agents events ${t.sessionId}`;
}

/** The session's list cost against its budget, e.g. `$0.0360 of a $0.03 budget (reached: model calls stop)`. */
export function spendLine(c: NonNullable<SessionStatus['listCost']>): string {
  const spent = `$${(c.costNanoUsd / 1e9).toFixed(4)}`;
  if (!c.budget) return `${spent} (no budget)`;
  const budget = `$${(c.budget.amount / 100).toFixed(2)}`;
  const left = c.budget.amount * NANO_USD_PER_CENT - c.costNanoUsd;
  return c.reached
    ? `${spent} of a ${budget} budget (reached: no model call until it is raised or removed)`
    : `${spent} of a ${budget} budget ($${(left / 1e9).toFixed(4)} left)`;
}

/** Per sandbox, the workspace snapshots the log records: how many, what they stored, the latest, the restores. */
export function workspaceSnapshotsOf(events: readonly SessionEvent[]): Array<{
  name: string;
  taken: number;
  storedBytes: number;
  restores: number;
  latest: { seq: number; at: string; files: number; sizeBytes: number };
}> {
  const by = new Map<string, ReturnType<typeof workspaceSnapshotsOf>[number]>();
  for (const e of events) {
    if (e.type === 'workspace_snapshot') {
      const w = by.get(e.name);
      const latest = { seq: e.snapshotSeq, at: e.time, files: e.files, sizeBytes: e.sizeBytes };
      if (w) {
        w.taken += 1;
        w.storedBytes += e.newBytes;
        w.latest = latest;
      } else by.set(e.name, { name: e.name, taken: 1, storedBytes: e.newBytes, restores: 0, latest });
    } else if (e.type === 'workspace_restored') {
      const w = by.get(e.name);
      if (w) w.restores += 1;
    }
  }
  return [...by.values()];
}
