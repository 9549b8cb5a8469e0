// sessionWorkflow: one workflow per session. It owns the append-only event log and runs the decision loop.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { ModelReply } from '../model/client';
import type { HandsActivities, ProvisionOutput } from '../activities/hands';
import type { ToolsActivities } from '../activities/tools';
import { TOOLS_TASK_QUEUE } from '../session/queues';
import { boundTools, buildToolSpecs, runBuiltinTool, toolError, type ToolOutcome } from './tools';
import { createToolGate } from './approvals';
import { evaluatePolicy } from '../session/policy';
import { shouldReprompt } from './harness';
import { EMPTY_REPLY_NUDGE } from '../session/harness';
import { FULL_WINDOW, windowOf, type ContextWindow } from '../session/context-builder';
import { openToolUses } from '../session/context';
import { SessionEventsInputSchema, type ToolSpec } from '../session/tools';
import { modelSummary, toolSummary } from '../session/summaries';
import { logEvent, trackVisibility } from './visibility';
import { AgentSchema, formatIssues, type Agent, type BoundTool } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import { MAX_FILE_BYTES, resolveWorkspacePath } from '../session/paths';
import { eventsDigest } from '../session/digest';
import {
  EventsQueryArgsSchema,
  GetFileSchema,
  PutFileSchema,
  ReasonSchema,
  SessionInputSchema,
  UserMessageSchema,
  MAX_CARRIED_MESSAGE_IDS,
  endSignal,
  eventsQuery,
  getFileUpdate,
  handoverQuery,
  interruptSignal,
  putFileUpdate,
  sendMessageUpdate,
  statusQuery,
  userMessageSignal,
  type Carry,
  type SandboxSlot,
  type SessionInput,
  type SessionState,
  type UserMessage,
  type ParentRef,
  type PendingTool,
} from './messages';
import { failureMessage, failureType } from './failures';
import { createHandoff } from './handoff';
import { childAnswer, createSubagents, reportToParent } from './subagents';

type Activities = ReturnType<typeof createActivities>;

const HANDS_POOL = 'hands';

/** An events query answers with at most about this many bytes of events, to stay well under payload limits. */
const QUERY_PAGE_BYTES = 1024 * 1024;

/**
 * The session runs in a scope a cancellation request cannot cancel: a request (as when a parent session
 * cancels its child) ends the session like the `end` signal, so it still cleans up and seals its log.
 */
export async function sessionWorkflow(rawInput: SessionInput): Promise<{ lastSeq: number; reason: string }> {
  return CancellationScope.nonCancellable(() => runSession(rawInput));
}

async function runSession(rawInput: SessionInput): Promise<{ lastSeq: number; reason: string }> {
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(`invalid session input: ${formatIssues(parsed.error)}`, 'SessionError.InvalidInput');
  }
  const agent: Agent = AgentSchema.parse(parsed.data.agent);
  const sessionId = workflowInfo().workflowId;
  const limits = agent.limits;
  const carried: Carry | undefined = parsed.data.continued;
  const startKind = parsed.data.start;
  /** The seq of this run's first event; earlier events are sealed in the session archive. */
  const baseSeq = carried?.nextSeq ?? 0;
  const run = carried?.run ?? 1;
  /** Set in a child session: the spawn_agent call it answers. */
  const parentRef: ParentRef | undefined = parsed.data.parent ?? carried?.parent;

  const model = proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: limits.modelHeartbeatTimeoutMs,
    retry: {
      maximumAttempts: limits.modelRetry.maxAttempts,
      initialInterval: limits.modelRetry.initialIntervalMs,
      backoffCoefficient: limits.modelRetry.backoffCoefficient,
      maximumInterval: limits.modelRetry.maximumIntervalMs,
    },
  });
  const provisioner = (taskQueue: string) =>
    proxyActivities<HandsActivities>({
      taskQueue,
      // On the pool, wait for any host; on a named host, give up quickly: that host is gone.
      scheduleToStartTimeout: taskQueue === HANDS_POOL ? limits.provisionTimeoutMs : limits.handsScheduleToStartMs,
      startToCloseTimeout: limits.provisionTimeoutMs,
      heartbeatTimeout: limits.handsHeartbeatTimeoutMs,
      retry: { maximumAttempts: 3, initialInterval: 500, nonRetryableErrorTypes: ['SandboxError.SetupFailed'] },
    });
  const onHost = (taskQueue: string, timeoutSeconds: number) =>
    proxyActivities<HandsActivities>({
      taskQueue,
      scheduleToStartTimeout: limits.handsScheduleToStartMs,
      startToCloseTimeout: (timeoutSeconds + 60) * 1000,
      heartbeatTimeout: limits.handsHeartbeatTimeoutMs,
      retry: { maximumAttempts: 3, initialInterval: 500 },
    });

  // MCP runs on queue `tools`. Listing is cheap to repeat; a tool call may have side effects, so it is tried twice at most.
  const mcp = (timeoutSeconds: number, maximumAttempts: number) =>
    proxyActivities<ToolsActivities>({
      taskQueue: TOOLS_TASK_QUEUE,
      scheduleToStartTimeout: '1 minute',
      startToCloseTimeout: (timeoutSeconds + 60) * 1000,
      heartbeatTimeout: '15 seconds',
      retry: { maximumAttempts, initialInterval: 500, nonRetryableErrorTypes: ['McpError.Credential', 'McpError.Unauthorized', 'McpError.Rejected', 'McpError.InvalidResult'] },
    });

  // A seal that read events other than the ones history committed (ArchiveError.Stale) is tried again, with backoff.
  const archive = proxyActivities<Activities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 8, initialInterval: 500, maximumInterval: 5000 } });

  /** This run's events; event `seq` is events[seq - baseSeq]. */
  const events: SessionEvent[] = [];
  const seenMessageIds = new Map<string, number>(carried?.recentMessageIds ?? []);
  const usage: Usage = carried ? { ...carried.usage } : { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
  const sandboxes = new Map<string, SandboxSlot>((carried?.sandboxes ?? []).map((s) => [s.name, { ...s }]));
  const provisioning = new Map<string, Promise<SandboxSlot>>();
  /** The host a lost sandbox lived on: its replacement goes there first, to mount the same workspace. */
  const lastHost = new Map<string, string>(Object.entries(carried?.lastHost ?? {}));
  const tools = boundTools(agent);
  let state: SessionState = 'waiting_for_user';
  let lastUserSeq = carried?.lastUserSeq ?? -1;
  let handledThrough = carried?.handledThrough ?? -1;
  let endReason: string | undefined;
  let turn: { scope: CancellationScope; interruptReason?: string } | undefined;
  /** The context window the model sees; moves forward with each compaction. */
  let window: ContextWindow = carried?.window ?? FULL_WINDOW;
  /** The last seq sealed into the archive. */
  let sealedThrough = baseSeq - 1;
  /** The tool round the current turn is in. */
  let currentRound = 0;
  /** Set while this run hands over in the middle of a turn; an interrupt then lands here. */
  let handover: { interruptReason?: string } | undefined;
  /** Model calls made by this run, for the activity summaries the Web UI shows. */
  let modelCalls = 0;

  const nextSeq = () => baseSeq + events.length;
  const append = (e: NewEvent): SessionEvent => {
    const event = { seq: nextSeq(), ...e, time: new Date().toISOString() } as SessionEvent;
    events.push(event);
    logEvent(event);
    return event;
  };

  const acceptUserMessage = (msg: UserMessage): number => {
    if (msg.messageId !== undefined) {
      const existing = seenMessageIds.get(msg.messageId);
      if (existing !== undefined) return existing;
    }
    const event = append({ type: 'user_message', text: msg.text, ...(msg.messageId ? { messageId: msg.messageId } : {}) });
    if (msg.messageId !== undefined) seenMessageIds.set(msg.messageId, event.seq);
    lastUserSeq = event.seq;
    return event.seq;
  };

  // --- Hands: sandboxes are provisioned on first use, replaced when lost, stopped when idle.

  const provisionNow = async (name: string): Promise<SandboxSlot> => {
    const recipe = agent.sandboxes[name];
    const started = Date.now();
    const previous = sandboxes.get(name);
    let result: ProvisionOutput | undefined;
    if (previous?.stopped) {
      try {
        result = await provisioner(previous.taskQueue).provisionSandbox.executeWithOptions({ summary: `resume sandbox ${name}` }, [{ sessionId, name, recipe, vault: agent.vault, resume: previous.sandboxId }]);
      } catch (err) {
        if (isCancellation(err)) throw err;
        sandboxes.delete(name);
        append({ type: 'sandbox_lost', name, sandboxId: previous.sandboxId, reason: `could not resume: ${failureMessage(err)}` });
      }
    }
    const preferred = lastHost.get(name);
    if (!result && preferred) {
      try {
        result = await provisioner(preferred).provisionSandbox.executeWithOptions({ summary: `provision sandbox ${name}` }, [{ sessionId, name, recipe, vault: agent.vault }]);
      } catch (err) {
        if (isCancellation(err)) throw err;
        lastHost.delete(name);
      }
    }
    result ??= await provisioner(HANDS_POOL).provisionSandbox.executeWithOptions({ summary: `provision sandbox ${name}` }, [{ sessionId, name, recipe, vault: agent.vault }]);
    const slot: SandboxSlot = { name, sandboxId: result.sandboxId, taskQueue: result.taskQueue, host: result.host, stopped: false, lastUsed: Date.now() };
    sandboxes.set(name, slot);
    append({ type: 'sandbox_provisioned', name, sandboxId: result.sandboxId, host: result.host, ms: Date.now() - started, resumed: result.resumed, loosened: result.loosened });
    return slot;
  };

  /** One provisioning per sandbox at a time, shared by tool calls and file copies. */
  const ensureSandbox = (name: string): Promise<SandboxSlot> => {
    const slot = sandboxes.get(name);
    // A slot handed to another session stays, so the host can deny this session's calls to it.
    if (slot && (!slot.stopped || slot.handedTo)) return Promise.resolve(slot);
    let pending = provisioning.get(name);
    if (!pending) {
      pending = provisionNow(name).finally(() => provisioning.delete(name));
      provisioning.set(name, pending);
    }
    return pending;
  };

  const markLost = (slot: SandboxSlot, reason: string) => {
    if (sandboxes.get(slot.name)?.sandboxId !== slot.sandboxId) return;
    sandboxes.delete(slot.name);
    lastHost.set(slot.name, slot.taskQueue);
    append({ type: 'sandbox_lost', name: slot.name, sandboxId: slot.sandboxId, reason });
  };

  const runSandboxTool = async (use: { id: string; input: unknown }, bound: BoundTool): Promise<ToolOutcome> => {
    const name = bound.sandbox!;
    let slot: SandboxSlot;
    try {
      slot = await ensureSandbox(name);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return toolError(`sandbox ${name} could not be provisioned: ${failureMessage(err)}`, 'infra');
    }
    const timeoutSeconds = agent.sandboxes[name].commandTimeoutSeconds;
    try {
      const repo = agent.sandboxes[name].repo;
      const git = (bound.kind === 'git_push' || bound.kind === 'git_pull') && repo ? { sessionId, name, vault: agent.vault, repo } : undefined;
      const r = await onHost(slot.taskQueue, timeoutSeconds).execute.executeWithOptions({ summary: toolSummary(bound.name, bound.kind, use.input) }, [{ sessionId, sandboxId: slot.sandboxId, toolUseId: use.id, tool: bound.kind as 'bash', input: use.input, timeoutSeconds, git }]);
      slot.lastUsed = Date.now();
      const { outputRef, ...rest } = r;
      const outcome: ToolOutcome = { ...rest, ...(outputRef ? { outputRef: { sandbox: name, ...outputRef } } : {}) };
      return r.isError ? { ...outcome, error: { kind: 'tool', message: r.output.split('\n').slice(-2).join(' ').slice(0, 500) } } : outcome;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = failureMessage(err);
      if (failureType(err) === 'SandboxError.Denied') return toolError(reason, 'denied');
      markLost(slot, reason);
      return toolError(`sandbox ${name} was lost while running this tool (${reason}); the next call gets a fresh sandbox`, 'infra');
    }
  };

  const stopIdleSandboxes = async () => {
    for (const slot of sandboxes.values()) {
      if (slot.handedTo || !agent.sandboxes[slot.name]) continue;
      const idleMs = agent.sandboxes[slot.name].idleStopMinutes * 60_000;
      if (slot.stopped || Date.now() - slot.lastUsed < idleMs) continue;
      try {
        await onHost(slot.taskQueue, 30).stopSandbox({ sessionId, sandboxId: slot.sandboxId });
        slot.stopped = true;
      } catch (err) {
        markLost(slot, `could not stop idle sandbox: ${failureMessage(err)}`);
      }
    }
  };

  const nextIdleDeadline = (): number | undefined => {
    let next: number | undefined;
    for (const slot of sandboxes.values()) {
      if (slot.stopped || slot.handedTo || !agent.sandboxes[slot.name]) continue;
      const at = slot.lastUsed + agent.sandboxes[slot.name].idleStopMinutes * 60_000;
      next = next === undefined ? at : Math.min(next, at);
    }
    return next;
  };

  const destroyAll = async () => {
    await Promise.all(
      [...sandboxes.values()].filter((slot) => !slot.handedTo).map((slot) => onHost(slot.taskQueue, 30).destroySandbox({ sessionId, sandboxId: slot.sandboxId }).catch((err) => log.warn('destroySandbox failed', { error: failureMessage(err) }))),
    );
    sandboxes.clear();
  };

  const checkFileTarget = (sandbox: string, path: string) => {
    const recipe = agent.sandboxes[sandbox];
    if (!recipe) throw ApplicationFailure.nonRetryable(`no sandbox named ${sandbox}; this agent declares ${Object.keys(agent.sandboxes).join(', ')}`, 'FilesError.UnknownSandbox');
    try {
      return resolveWorkspacePath(recipe.workdir, path);
    } catch (err) {
      throw ApplicationFailure.nonRetryable((err as Error).message, 'FilesError.BadPath');
    }
  };

  const assertOpen = () => {
    if (endReason !== undefined) throw ApplicationFailure.nonRetryable('session has ended', 'SessionError.Ended');
  };

  /** Gives every listed tool_use an error result, so the conversation stays valid. */
  const closeToolUses = (ids: readonly string[], message: string) => {
    for (const id of ids) append({ type: 'tool_result', toolUseId: id, output: message, isError: true, error: { kind: 'tool', message } });
  };

  const closed = () => state === 'ended';
  const handoff = createHandoff({ sessionId, append, sandboxes, lastHost, ensureSandbox, onHost, declares: (name) => name in agent.sandboxes, closed });
  const subagents = createSubagents({ sessionId, agent, append, usage, handoff, carried, closed });

  // Before any handler is registered: input that arrived with the start is delivered when its handler is set.
  if (startKind === 'new') {
    append({ type: 'session_started', agent: agent as unknown as Record<string, unknown>, ...(parentRef ? { parent: parentRef } : {}) });
    for (const s of parsed.data.lent ?? []) await handoff.receive(parentRef?.sessionId ?? 'unknown', s, parentRef?.sessionId);
  }
  if (startKind === 'forked') {
    append({ type: 'session_started', agent: agent as unknown as Record<string, unknown>, forkedFrom: parsed.data.forkedFrom });
    closeToolUses(carried?.openToolUses ?? [], 'the session was forked before this tool finished');
  }
  if (startKind === 'woken') {
    append({ type: 'error', kind: 'session', message: `run ${run - 1} of this session stopped without handing over; it was woken as run ${run}` });
    closeToolUses(carried?.openToolUses ?? [], 'the run stopped before this tool finished');
  }
  if (parsed.data.message) acceptUserMessage(parsed.data.message);
  /** Whether the turn waits on a person or the calling application (set once the tool gate exists). */
  let awaitingAction = () => false;
  // Histories recorded before the search attributes existed carry no upserts.
  if (patched('search-attributes')) {
    const firstUserText = () => (startKind === 'new' ? events.find((e) => e.type === 'user_message')?.text : undefined);
    trackVisibility(agent, () => (state === 'running' && awaitingAction() ? 'requires_action' : state), firstUserText);
  }

  handoff.register(assertOpen);
  subagents.register();
  CancellationScope.current().cancelRequested.catch(() => {
    if (endReason !== undefined) return;
    endReason = 'cancelled';
    turn?.scope.cancel();
  });

  setHandler(userMessageSignal, (raw) => {
    const result = UserMessageSchema.safeParse(raw);
    if (!result.success) {
      log.warn('userMessage signal rejected', { error: formatIssues(result.error) });
      return;
    }
    if (endReason !== undefined) {
      log.warn('userMessage signal ignored: session has ended');
      return;
    }
    acceptUserMessage(result.data);
  });

  setHandler(
    sendMessageUpdate,
    (raw) => ({ seq: acceptUserMessage(UserMessageSchema.parse(raw)) }),
    {
      validator: (raw) => {
        const result = UserMessageSchema.safeParse(raw);
        if (!result.success) throw ApplicationFailure.nonRetryable(`invalid message: ${formatIssues(result.error)}`, 'SessionError.InvalidMessage');
        assertOpen();
      },
    },
  );

  /** Runs a file copy on the sandbox's host, provisioning the sandbox first if it has none. */
  const onFileSandbox = async <T>(sandbox: string, type: string, call: (host: HandsActivities, sandboxId: string) => Promise<T>): Promise<T> => {
    const slot = await ensureSandbox(sandbox);
    try {
      return await call(onHost(slot.taskQueue, 60), slot.sandboxId);
    } catch (err) {
      throw ApplicationFailure.nonRetryable(failureMessage(err), type);
    }
  };

  setHandler(
    putFileUpdate,
    async (raw) => {
      const req = PutFileSchema.parse(raw);
      const path = checkFileTarget(req.sandbox, req.path);
      const r = await onFileSandbox(req.sandbox, 'FilesError.Put', (host, sandboxId) => host.putFile({ sessionId, sandboxId, key: `put-${uuid4()}`, path, contentBase64: req.contentBase64 }));
      return { path, bytes: r.bytes };
    },
    {
      validator: (raw) => {
        const r = PutFileSchema.safeParse(raw);
        if (!r.success) throw ApplicationFailure.nonRetryable(`invalid putFile: ${formatIssues(r.error)}`, 'FilesError.Invalid');
        assertOpen();
        checkFileTarget(r.data.sandbox, r.data.path);
        const bytes = Math.floor((r.data.contentBase64.length * 3) / 4);
        if (bytes > MAX_FILE_BYTES + 2) throw ApplicationFailure.nonRetryable(`file is about ${bytes} bytes; the limit is ${MAX_FILE_BYTES}`, 'FilesError.TooLarge');
      },
    },
  );

  setHandler(
    getFileUpdate,
    async (raw) => {
      const req = GetFileSchema.parse(raw);
      const path = checkFileTarget(req.sandbox, req.path);
      const r = await onFileSandbox(req.sandbox, 'FilesError.Get', (host, sandboxId) => host.getFile({ sessionId, sandboxId, key: `get-${uuid4()}`, path }));
      return { path, ...r };
    },
    {
      validator: (raw) => {
        const r = GetFileSchema.safeParse(raw);
        if (!r.success) throw ApplicationFailure.nonRetryable(`invalid getFile: ${formatIssues(r.error)}`, 'FilesError.Invalid');
        assertOpen();
        checkFileTarget(r.data.sandbox, r.data.path);
      },
    },
  );

  /**
   * The round a previous run handed over in the middle of. A run recorded before the gate carried only the
   * spawn_agent calls still waiting for their children (`waiting`); they pass the gate as already allowed.
   */
  function carriedRound(): PendingTool[] | undefined {
    const inTurn = carried?.inTurn;
    if (inTurn?.tools || !inTurn?.waiting) return inTurn?.tools;
    const spawnName = [...tools].find(([, t]) => t.kind === 'spawn_agent')?.[0] ?? 'spawn_agent';
    return inTurn.waiting.map((id) => ({ id, name: spawnName, input: {}, decision: { allow: true, by: 'policy' } }));
  }

  /** Approvals, client tools and sub-agents: every tool call of a round passes this gate. */
  const gate = createToolGate({
    agent,
    append,
    events,
    runTool: (use) => runTool(use),
    shouldHandOver: () => shouldHandOver(),
    assertOpen,
    carried: startKind === 'continued' ? carriedRound() : undefined,
    awaitExternal: (id) => subagents.awaitResult(id, shouldHandOver),
  });
  awaitingAction = () => gate.waiting();

  setHandler(interruptSignal, (raw) => {
    const parsedReason = ReasonSchema.safeParse(raw ?? {});
    const reason = (parsedReason.success && parsedReason.data.reason) || 'interrupted by user';
    if (handover) handover.interruptReason = reason;
    if (!turn) return;
    turn.interruptReason = reason;
    turn.scope.cancel();
  });

  setHandler(endSignal, (raw) => {
    if (endReason !== undefined) return;
    const reason = ReasonSchema.safeParse(raw ?? {});
    endReason = (reason.success && reason.data.reason) || 'ended by user';
    turn?.scope.cancel();
  });

  setHandler(eventsQuery, (raw) => {
    const parsedArgs = EventsQueryArgsSchema.safeParse(raw ?? {});
    // A readable refusal (see READABLE_FAILURE_TYPES): a query's failure reaches a client as its message alone.
    if (!parsedArgs.success) throw ApplicationFailure.nonRetryable(`invalid events query: ${formatIssues(parsedArgs.error)}`, 'SessionError.InvalidQuery');
    const args = parsedArgs.data;
    if (args.from < baseSeq) return { events: [], nextSeq: args.from, firstSeq: baseSeq };
    const slice: SessionEvent[] = [];
    let bytes = 0;
    for (let i = Math.max(0, args.from - baseSeq); i < events.length && slice.length < args.limit; i++) {
      bytes += JSON.stringify(events[i]).length;
      if (slice.length > 0 && bytes > QUERY_PAGE_BYTES) break;
      slice.push(events[i]);
    }
    return { events: slice, nextSeq: args.from + slice.length, firstSeq: baseSeq };
  });

  setHandler(handoverQuery, () => ({
    agent,
    carry: snapshot(state === 'running' ? { round: currentRound } : undefined),
    firstSeq: baseSeq,
  }));

  setHandler(statusQuery, () => ({
    state: state === 'running' && awaitingAction() ? ('requires_action' as const) : state,
    lastSeq: nextSeq() - 1,
    firstSeq: baseSeq,
    run,
    sandboxes: [...sandboxes.values()].map((s) => ({
      name: s.name,
      sandboxId: s.sandboxId,
      host: s.host,
      state: s.handedTo ? ('handed_off' as const) : s.stopped ? ('stopped' as const) : ('running' as const),
      ...(s.handedTo ? { handedTo: s.handedTo } : {}),
    })),
    usage: { ...usage },
    subagents: subagents.status(),
    pending: gate.pending(),
  }));

  const toolSpecs = buildToolSpecs(agent);
  /** Model-facing mcp__<server>__<tool> names to the server and the tool's own name. */
  const mcpTools = new Map<string, { server: string; tool: string; spec: ToolSpec }>();
  let mcpListed = Object.keys(agent.mcpServers).length === 0;
  if (carried?.mcpTools) {
    mcpListed = true;
    for (const t of carried.mcpTools) {
      mcpTools.set(t.name, { server: t.server, tool: t.tool, spec: t.spec as unknown as ToolSpec });
      toolSpecs.push(t.spec as unknown as ToolSpec);
    }
  }

  /** Lists the MCP servers' tools once per run, before the first model call; no connection is made earlier. */
  const ensureMcpTools = async () => {
    if (mcpListed) return;
    let listed;
    try {
      listed = await mcp(60, 3).listMcpTools({ sessionId, vault: agent.vault, servers: agent.mcpServers, reserved: [...tools.keys()] });
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = failureMessage(err);
      listed = { tools: [], failed: Object.keys(agent.mcpServers).map((server) => ({ server, message: `MCP server ${server}: ${reason}` })) };
    }
    mcpListed = true;
    for (const t of listed.tools) {
      if (tools.has(t.name) || mcpTools.has(t.name)) continue;
      mcpTools.set(t.name, { server: t.server, tool: t.tool, spec: t.spec });
      toolSpecs.push(t.spec);
    }
    for (const f of listed.failed) append({ type: 'error', kind: 'mcp', message: `${f.message} (its tools are not offered in this run)` });
  };

  const runMcpTool = async (use: { id: string; input: unknown }, target: { server: string; tool: string }): Promise<ToolOutcome> => {
    const server = agent.mcpServers[target.server];
    try {
      const r = await mcp(server.timeoutSeconds, 2).callMcpTool.executeWithOptions({ summary: `mcp ${target.server}: ${target.tool}` }, [{ sessionId, vault: agent.vault, serverName: target.server, server, tool: target.tool, input: use.input, toolUseId: use.id }]);
      return r.isError ? { ...r, error: { kind: 'tool', message: r.output.slice(0, 500) } } : r;
    } catch (err) {
      if (isCancellation(err)) throw err;
      return toolError(failureMessage(err), 'infra');
    }
  };

  /** Tool uses without a result: this run's, and those of a round an earlier run handed over in the middle of. */
  const unansweredToolUses = () => [...new Set([...gate.openIds(), ...openToolUses(events)])];
  /** Closes every call of the round in progress, cancelling its running children first. */
  const closeDanglingToolUses = async (message: string) => {
    const cut = await subagents.cancelRunning();
    closeToolUses([...new Set([...unansweredToolUses(), ...cut])], message);
    gate.clear();
  };

  /** What the next run starts from. */
  const snapshot = (inTurn?: { round: number }): Carry => ({
    nextSeq: nextSeq(),
    run: run + 1,
    window,
    usage: { ...usage },
    recentMessageIds: [...seenMessageIds].slice(-MAX_CARRIED_MESSAGE_IDS),
    lastUserSeq,
    handledThrough,
    ...(inTurn ? { inTurn: { ...inTurn, ...(gate.carry() ? { tools: gate.carry() } : {}) } } : {}),
    sandboxes: [...sandboxes.values()].map((s) => ({ ...s })),
    lastHost: Object.fromEntries(lastHost),
    ...(mcpListed && mcpTools.size ? { mcpTools: [...mcpTools].map(([name, t]) => ({ name, server: t.server, tool: t.tool, spec: t.spec as unknown as Record<string, unknown> })) } : {}),
    openToolUses: unansweredToolUses(),
    ...(parentRef ? { parent: parentRef } : {}),
    ...subagents.snapshot(),
  });

  /** After a failed handover (the archive could not seal), the next try waits for this many more events. */
  let handoverRetryAtSeq = -1;
  const shouldHandOver = (): boolean => {
    if (nextSeq() < handoverRetryAtSeq) return false;
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= limits.historyEvents || info.historySize >= limits.historyBytes;
  };

  /** Seals every event of this run not sealed yet. A failure is logged as an event; the events stay in history. */
  const sealAll = async (): Promise<boolean> => {
    const through = nextSeq() - 1;
    if (through <= sealedThrough) return true;
    try {
      // The digest is of the events as this run holds them, which history commits with the seal's scheduling.
      const digest = eventsDigest(events.slice(sealedThrough + 1 - baseSeq, through + 1 - baseSeq));
      await archive.sealEvents({ sessionId, fromSeq: sealedThrough + 1, throughSeq: through, digest });
      sealedThrough = through;
      return true;
    } catch (err) {
      append({ type: 'error', kind: 'archive', message: `could not seal events ${sealedThrough + 1} to ${through} into the session archive: ${failureMessage(err)}` });
      return false;
    }
  };

  /**
   * Continues as new once every handler has finished and every event is sealed. Input that arrives meanwhile
   * is appended and sealed too; the server refuses the handover if more arrives after this task started, and
   * the replay that follows takes it in. Returns (without handing over) if the session is ending or sealing failed.
   */
  const handOver = async (inTurn?: { round: number }): Promise<void> => {
    handover = {};
    try {
      for (;;) {
        await condition(allHandlersFinished);
        if (endReason !== undefined) return;
        if (inTurn && handover.interruptReason !== undefined) {
          await closeDanglingToolUses('interrupted before the tool finished');
          append({ type: 'interrupted', reason: handover.interruptReason });
          handledThrough = lastUserSeq;
          inTurn = undefined;
        }
        if (!(await sealAll())) {
          handoverRetryAtSeq = nextSeq() + 50;
          return;
        }
        if (sealedThrough === nextSeq() - 1 && allHandlersFinished() && endReason === undefined) break;
      }
    } finally {
      handover = undefined;
    }
    await continueAsNew<typeof sessionWorkflow>({ agent, continued: snapshot(inTurn), start: 'continued' });
  };

  const runTool = async (use: { id: string; name: string; input: unknown }): Promise<ToolOutcome> => {
    const bound = tools.get(use.name);
    const mcpTarget = bound ? undefined : mcpTools.get(use.name);
    if (mcpTarget) return runMcpTool(use, mcpTarget);
    if (!bound) return toolError(`unknown tool: ${use.name}`);
    if (bound.sandbox !== undefined) return runSandboxTool(use, bound);
    if (bound.kind === 'spawn_agent') {
      // A call that waited for approval starts its child only now.
      if (!subagents.tracks(use.id)) await subagents.startAll([use]);
      return subagents.result(use.id);
    }
    if (bound.kind === 'handoff_sandbox') return handoff.tool(use.input);
    const from = SessionEventsInputSchema.safeParse(use.input ?? {}).data?.from;
    if (from !== undefined && from < baseSeq) {
      // An older slice lives in the archive: read it there.
      try {
        return await archive.readSessionEvents({ sessionId, input: use.input });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return toolError(`could not read the session log: ${failureMessage(err)}`, 'infra');
      }
    }
    return runBuiltinTool(use, events, baseSeq);
  };

  /** One model reply over the current window, compacting the window first when it is over budget; with the last seq its call read. */
  const nextReply = async (): Promise<{ reply: ModelReply; throughSeq: number }> => {
    const request = () => ({ sessionId, throughSeq: nextSeq() - 1, model: agent.model, system: agent.system, tools: toolSpecs, maxTokens: limits.maxOutputTokens, caching: agent.promptCaching, window, streamIdleMs: limits.modelStreamIdleMs });
    const summary = { summary: modelSummary(++modelCalls, run) };
    const firstRequest = request();
    const first = await model.callModel.executeWithOptions(summary, [{ ...firstRequest, contextTokens: limits.contextTokens }]);
    if (first.compact === undefined) return { reply: first, throughSeq: firstRequest.throughSeq };
    const cutSeq = first.compact.cutSeq;
    const c = await model.compactContext.executeWithOptions({ summary: 'compact context' }, [{ ...request(), cutSeq }]);
    const event = append({ type: 'context_compacted', throughSeq: cutSeq - 1, summary: c.summary, tokensBefore: c.tokensBefore, tokensAfter: c.tokensAfter });
    if (event.type === 'context_compacted') window = windowOf(event);
    // Over budget even now (one huge tail): send it anyway rather than compact in a loop.
    const secondRequest = request();
    const second = await model.callModel.executeWithOptions(summary, [secondRequest]);
    if (second.compact !== undefined) throw new Error('callModel asked for a compaction without a budget');
    return { reply: second, throughSeq: secondRequest.throughSeq };
  };

  /** Runs a turn from `startRound`; returns the round to resume at when the run should hand over first. */
  const runTurn = async (startRound: number): Promise<{ handoverAt?: number }> => {
    // A run that took over in the middle of a round finishes its calls first.
    if ((await gate.runRound()) === 'handover') return { handoverAt: startRound };
    let reprompts = 0;
    for (let round = startRound; ; round++) {
      currentRound = round;
      if (round >= limits.maxToolRoundsPerTurn) {
        append({ type: 'error', kind: 'limit', message: `stopped after ${round} tool rounds in one turn (limits.maxToolRoundsPerTurn)` });
        return {};
      }
      // Between two model calls of a long tool loop is a safe place to hand over.
      if (round > startRound && shouldHandOver()) return { handoverAt: round };
      handledThrough = lastUserSeq;
      await ensureMcpTools();
      let reply: ModelReply;
      let throughSeq: number;
      try {
        ({ reply, throughSeq } = await nextReply());
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (err instanceof ActivityFailure) {
          append({ type: 'error', kind: 'model', message: failureMessage(err) });
          return {};
        }
        throw err;
      }
      usage.inputTokens += reply.usage.inputTokens;
      usage.outputTokens += reply.usage.outputTokens;
      usage.cacheReadInputTokens += reply.usage.cacheReadInputTokens;
      usage.cacheCreationInputTokens += reply.usage.cacheCreationInputTokens;
      append({ type: 'assistant_message', content: reply.content, stopReason: reply.stopReason, usage: reply.usage, throughSeq });

      const toolUses = reply.content.filter((b) => b.type === 'tool_use') as unknown as { id: string; name: string; input: unknown }[];
      if (toolUses.length === 0) {
        if (!shouldReprompt(agent.harness, reply.content, reprompts)) return {};
        reprompts++;
        append({ type: 'user_message', text: EMPTY_REPLY_NUDGE, source: 'harness' });
        continue;
      }
      for (const use of toolUses) append({ type: 'tool_use', id: use.id, name: use.name, input: use.input });
      // The round's children start together and run in parallel; one that needs approval starts once approved.
      await subagents.startAll(toolUses.filter((u) => tools.get(u.name)?.kind === 'spawn_agent' && !evaluatePolicy(u.name, agent.policies[u.name], u.input).ask));
      gate.startRound(toolUses);
      if ((await gate.runRound()) === 'handover') return { handoverAt: round + 1 };
    }
  };

  if (agent.provision === 'eager' && (startKind === 'new' || startKind === 'forked')) {
    for (const name of Object.keys(agent.sandboxes)) {
      try {
        await ensureSandbox(name);
      } catch (err) {
        append({ type: 'error', kind: 'sandbox', message: `sandbox ${name} could not be provisioned: ${failureMessage(err)}` });
      }
    }
  }

  // A woken run gives up on the children its dead run waited for; their calls may have begun in an earlier run.
  if (startKind === 'woken') {
    const closedAlready = new Set(carried?.openToolUses ?? []);
    closeToolUses((await subagents.cancelRunning()).filter((id) => !closedAlready.has(id)), 'the run stopped before this tool finished');
  }

  /** A run that took over mid-turn goes straight on with that turn. */
  let resumeRound = carried?.inTurn?.round;
  // A child whose run stopped mid-task does not pick the task up again: it ends and reports an error.
  if (parentRef && startKind === 'woken') endReason = 'its run stopped before it answered';
  while (endReason === undefined) {
    if (resumeRound === undefined && shouldHandOver()) await handOver();
    for (; resumeRound === undefined; ) {
      const deadline = nextIdleDeadline();
      const wake = () => endReason !== undefined || lastUserSeq > handledThrough;
      if (deadline === undefined) {
        await condition(wake);
        break;
      }
      if (await condition(wake, Math.max(1, deadline - Date.now()))) break;
      await stopIdleSandboxes();
    }
    if (endReason !== undefined) break;
    state = 'running';
    const scope = new CancellationScope();
    turn = { scope };
    const startRound = resumeRound ?? 0;
    resumeRound = undefined;
    let handoverAt: number | undefined;
    try {
      ({ handoverAt } = await scope.run(() => runTurn(startRound)));
    } catch (err) {
      if (!isCancellation(err)) throw err;
      // Children of the cut turn are cancelled; their calls may have begun in an earlier run.
      await closeDanglingToolUses(endReason !== undefined ? 'session ended before the tool finished' : 'interrupted before the tool finished');
      if (endReason === undefined) append({ type: 'interrupted', reason: turn.interruptReason ?? 'interrupted' });
      handledThrough = lastUserSeq;
    } finally {
      turn = undefined;
    }
    if (handoverAt !== undefined) {
      await handOver({ round: handoverAt });
      // Still here: the session is ending, or the archive failed; this run carries on with the turn.
      if (endReason === undefined) resumeRound = handoverAt;
      continue;
    }
    if (endReason === undefined) state = 'waiting_for_user';
    // A child session answers one task: its turn's last reply is the answer, and it ends.
    if (parentRef && endReason === undefined) endReason = 'answered';
  }

  const answer = parentRef ? childAnswer(events, endReason) : undefined;
  // A session ending while a handover waited (on an approval, a client or a child) leaves that round's calls open.
  await closeDanglingToolUses('session ended before the tool finished');
  const returned = await handoff.returnLent();
  await CancellationScope.nonCancellable(destroyAll);
  if (parentRef && answer) {
    const problem = await reportToParent(parentRef, { sessionId, ...answer, usage: { ...usage }, returned });
    if (problem) append({ type: 'error', kind: 'subagent', message: `could not report to the parent session ${parentRef.sessionId}: ${problem}` });
  }
  append({ type: 'session_ended', reason: endReason });
  state = 'ended';
  await condition(allHandlersFinished);
  // Histories recorded before the archive existed end without sealing.
  if (patched('session-archive')) await CancellationScope.nonCancellable(sealAll);
  return { lastSeq: nextSeq() - 1, reason: endReason };
}
