// Operations on a whole session across its runs: waking a dead run and forking a log at a seq.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy, type UpdateDefinition } from '@temporalio/common';
import type { SessionArchive } from './archive';
import { readEvents, type SessionLog } from './log/session-log';
import { AgentSchema, formatIssues, resolveTool, type Agent } from './session/agent';
import { windowAfter } from './session/context-builder';
import { openToolUses } from './session/context';
import { BRAIN_TASK_QUEUE, WORKFLOW_TYPE } from './session/queues';
import {
  DEFAULT_WORKSPACE,
  FIRST_MESSAGE_MEMO,
  WORKSPACE_KEY,
  firstMessageMemo,
  sessionSearchAttributes,
} from './session/search-attributes';
import {
  eventsQuery,
  handoverQuery,
  resolveToolUseUpdate,
  submitToolResultUpdate,
  type Carry,
  type ResolveToolUse,
  type SessionInput,
  type SubmitToolResult,
  type UserMessage,
  type WorkspaceSource,
} from './session/contract';
import type { SessionEvent } from './session/events';
import { PlatformError } from './session/platform-error';

export class SessionOpError extends PlatformError {}

/** Statuses a run can be woken from: it stopped without ending the session. */
const WAKEABLE = new Set(['TERMINATED', 'FAILED', 'TIMED_OUT', 'CANCELLED']);

/**
 * Restarts a session whose latest run was terminated or failed: seals that run's events into the archive
 * (read by query, which a brain worker answers by replaying the run) and starts a new run that continues
 * the log, with the dead run's state.
 */
export async function wakeSession(
  client: Client,
  archive: SessionArchive,
  sessionId: string,
): Promise<{ runId: string; nextSeq: number }> {
  let desc;
  try {
    desc = await client.workflow.getHandle(sessionId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new SessionOpError(`unknown session ${sessionId}, or its last run is past retention`);
    throw err;
  }
  const status = desc.status.name;
  if (status === 'RUNNING') throw new SessionOpError(`session ${sessionId} is running; there is nothing to wake`);
  if (!WAKEABLE.has(status))
    throw new SessionOpError(
      `session ${sessionId} ended normally (${status.toLowerCase()}); fork it to carry on from its log`,
    );
  const dead = client.workflow.getHandle(sessionId, desc.runId);
  const { agent, carry, firstSeq } = await dead.query(handoverQuery);
  // Seal what the dead run holds beyond the archive's end.
  const sealed = (await archive.segments(sessionId)).reduce((m, s) => Math.max(m, s.throughSeq), -1);
  const from = Math.max(firstSeq, sealed + 1);
  if (from < carry.nextSeq) {
    const deadRun: SessionLog = { read: (_id, start, limit) => dead.query(eventsQuery, { from: start, limit }) };
    const events = await readEvents(deadRun, sessionId, from, carry.nextSeq - from);
    if (from + events.length !== carry.nextSeq)
      throw new SessionOpError(`could only read events ${from} to ${from + events.length - 1} of the stopped run`);
    await archive.seal(sessionId, events);
  }
  const input: SessionInput = { agent, continued: carry, start: 'woken' };
  const first = desc.memo?.[FIRST_MESSAGE_MEMO];
  const handle = await startSessionRun(client, {
    workflowId: sessionId,
    input,
    agent: AgentSchema.parse(agent),
    ...(typeof first === 'string' ? { firstMessage: first } : {}),
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    workspace: workspaceOf(desc.typedSearchAttributes),
  });
  return { runId: handle.firstExecutionRunId, nextSeq: carry.nextSeq };
}

export interface ForkOptions {
  source: string;
  /** The fork's log begins with the source's events 0..at. */
  at: number;
  id: string;
  /**
   * Give the fork sandboxes from the source's recipes, each starting from the source's workspace snapshot at or
   * before `at` (when there is one); without it the fork has no sandboxes and no files.
   */
  sandboxes?: boolean;
  message?: UserMessage;
}

/**
 * Starts a session whose log begins with the source's events up to `at`, referenced through a link in the
 * archive rather than copied, and then runs on its own. The source's log is only read.
 */
export async function forkSession(
  client: Client,
  archive: SessionArchive,
  log: SessionLog,
  opts: ForkOptions,
): Promise<{ sessionId: string; firstOwnSeq: number; workspaces: Record<string, WorkspaceSource | null> }> {
  if (opts.id === opts.source) throw new SessionOpError('a fork needs an id of its own');
  const exists = await client.workflow
    .getHandle(opts.id)
    .describe()
    .then(() => true)
    .catch((err) => {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    });
  if (exists || (await archive.segments(opts.id)).length > 0)
    throw new SessionOpError(`session ${opts.id} already exists`);
  const events = await readEvents(log, opts.source, 0, opts.at + 1);
  if (events.length === 0) throw new SessionOpError(`unknown session ${opts.source}`);
  if (events.length !== opts.at + 1)
    throw new SessionOpError(`session ${opts.source} has events 0 to ${events.length - 1}; cannot fork at ${opts.at}`);

  const started = [...events].reverse().find((e) => e.type === 'session_started');
  const parsed = AgentSchema.safeParse(started?.type === 'session_started' ? started.agent : undefined);
  if (!parsed.success)
    throw new SessionOpError(`the source's agent no longer validates: ${formatIssues(parsed.error)}`);
  const agent: Agent = opts.sandboxes ? parsed.data : withoutSandboxes(parsed.data);

  const lastUser = [...events].reverse().find((e) => e.type === 'user_message')?.seq ?? -1;
  const carry: Carry = {
    nextSeq: opts.at + 1,
    run: 1,
    window: windowAfter(events),
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    recentMessageIds: [],
    lastUserSeq: lastUser,
    handledThrough: lastUser,
    sandboxes: [],
    lastHost: {},
    openToolUses: openToolUses(events),
  };
  const from = opts.sandboxes ? forkWorkspaces(events, opts.source, Object.keys(agent.sandboxes)) : {};
  if (Object.keys(from).length > 0) carry.workspaceFrom = from;
  await archive.link(opts.id, { sessionId: opts.source, throughSeq: opts.at });
  const input: SessionInput = {
    agent,
    continued: carry,
    start: 'forked',
    forkedFrom: { sessionId: opts.source, seq: opts.at },
    ...(opts.message ? { message: opts.message } : {}),
  };
  const firstMessage = events.find((e) => e.type === 'user_message')?.text ?? opts.message?.text;
  // A fork stays in its source's workspace (the default once the source is past retention).
  const workspace = await client.workflow
    .getHandle(opts.source)
    .describe()
    .then(
      (d) => workspaceOf(d.typedSearchAttributes),
      () => DEFAULT_WORKSPACE,
    );
  await startSessionRun(client, {
    workflowId: opts.id,
    input,
    agent,
    workspace,
    ...(firstMessage !== undefined ? { firstMessage } : {}),
  });
  return {
    sessionId: opts.id,
    firstOwnSeq: opts.at + 1,
    workspaces: Object.fromEntries(Object.keys(agent.sandboxes).map((n) => [n, from[n] ?? null])),
  };
}

/**
 * For a fork at the end of `events` (the source's log from 0), the snapshot each of `names` starts from: the latest
 * one at or before the fork point. A `workspace_snapshot` event names a snapshot of the session whose part of the
 * log holds it: the source's own events follow its `session_started` with `forkedFrom`, and the events before that
 * are its own source's (a fork of a fork goes back along the chain). A `workspace_restored` with `from` is a fork
 * taking its source's snapshot as its own, so it counts as that session's snapshot too. A sandbox with no snapshot
 * at the fork point starts from its recipe.
 */
export function forkWorkspaces(
  events: readonly SessionEvent[],
  sourceId: string,
  names: readonly string[],
): Record<string, WorkspaceSource> {
  const wanted = new Set(names);
  const out: Record<string, WorkspaceSource> = {};
  let owner = sourceId;
  for (let i = events.length - 1; i >= 0 && wanted.size > 0; i--) {
    const e = events[i];
    if ((e.type === 'workspace_snapshot' || (e.type === 'workspace_restored' && e.from)) && wanted.has(e.name)) {
      out[e.name] = { sessionId: owner, snapshotSeq: e.snapshotSeq };
      wanted.delete(e.name);
    } else if (e.type === 'session_started' && e.forkedFrom) {
      // Events up to the fork point are the source's.
      owner = e.forkedFrom.sessionId;
      i = Math.min(i, e.forkedFrom.seq + 1);
    }
  }
  return out;
}

/** The workspace a run's search attributes name (a session started before the attribute: the default). */
function workspaceOf(attrs: { get(key: typeof WORKSPACE_KEY): string | undefined } | undefined): string {
  return attrs?.get(WORKSPACE_KEY) ?? DEFAULT_WORKSPACE;
}

/** The agent with no sandboxes and no tool bound to one. */
function withoutSandboxes(agent: Agent): Agent {
  return { ...agent, sandboxes: {}, tools: agent.tools.filter((t) => resolveTool(t).sandbox === undefined) };
}

/**
 * Starts a session run with its search attributes (state, agent name, model, workspace) and, when given, the first user
 * message in its memo. On a namespace where no worker has registered the attributes yet, the run starts
 * without them and its workflow sets them once a brain worker (which registers them) picks it up.
 */
export async function startSessionRun(
  client: Client,
  opts: {
    workflowId: string;
    input: SessionInput;
    agent: { name: string; model: string };
    firstMessage?: string;
    workflowIdReusePolicy?: WorkflowIdReusePolicy;
    workspace?: string;
  },
) {
  const base = {
    taskQueue: BRAIN_TASK_QUEUE,
    workflowId: opts.workflowId,
    args: [opts.input] as [SessionInput],
    ...(opts.workflowIdReusePolicy ? { workflowIdReusePolicy: opts.workflowIdReusePolicy } : {}),
    ...(opts.firstMessage !== undefined ? { memo: firstMessageMemo(opts.firstMessage) } : {}),
  };
  try {
    const workspace = { key: WORKSPACE_KEY, value: opts.workspace ?? DEFAULT_WORKSPACE };
    return await client.workflow.start(WORKFLOW_TYPE, {
      ...base,
      typedSearchAttributes: [...sessionSearchAttributes(opts.agent), workspace],
    });
  } catch (err) {
    if (!/search attribute/i.test((err as Error).message ?? '')) throw err;
    return client.workflow.start(WORKFLOW_TYPE, base);
  }
}

/** Runs a session update, turning its refusal (unknown id, already decided, bad input) into a SessionOpError. */
async function sessionUpdate<Ret, Arg>(
  client: Client,
  sessionId: string,
  def: UpdateDefinition<Ret, [Arg]>,
  arg: Arg,
): Promise<Ret> {
  try {
    return await client.workflow.getHandle(sessionId).executeUpdate(def, { args: [arg] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new SessionOpError(err.cause?.message ?? err.message);
    if (err instanceof WorkflowNotFoundError) throw new SessionOpError(`unknown session ${sessionId}`);
    throw err;
  }
}

/** Approves or denies a tool call waiting for approval; returns the seq of its approval_resolved event. */
export function resolveToolUse(client: Client, sessionId: string, decision: ResolveToolUse): Promise<{ seq: number }> {
  return sessionUpdate(client, sessionId, resolveToolUseUpdate, decision);
}

/** Answers a client tool call with the calling application's result; returns the seq of its tool_result event. */
export function submitToolResult(
  client: Client,
  sessionId: string,
  result: SubmitToolResult,
): Promise<{ seq: number }> {
  return sessionUpdate(client, sessionId, submitToolResultUpdate, result);
}
