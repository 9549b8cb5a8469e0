// sessionWorkflow: one workflow per session. It owns the append-only event log and runs the decision loop.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { HandsActivities, ProvisionOutput } from '../activities/hands';
import type { ToolsActivities } from '../activities/tools';
import { TOOLS_TASK_QUEUE } from '../session/queues';
import { boundTools, buildToolSpecs, runBuiltinTool, toolError, type ToolOutcome } from './tools';
import { AgentSchema, formatIssues, type Agent, type BoundTool } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import { MAX_FILE_BYTES, resolveWorkspacePath } from '../session/paths';
import {
  EventsQueryArgsSchema,
  GetFileSchema,
  PutFileSchema,
  ReasonSchema,
  SessionInputSchema,
  UserMessageSchema,
  endSignal,
  eventsQuery,
  getFileUpdate,
  interruptSignal,
  putFileUpdate,
  sendMessageUpdate,
  statusQuery,
  userMessageSignal,
  type SessionInput,
  type SessionState,
  type UserMessage,
} from './messages';

type Activities = ReturnType<typeof createActivities>;

const HANDS_POOL = 'hands';

interface SandboxSlot {
  name: string;
  sandboxId: string;
  taskQueue: string;
  host: string;
  stopped: boolean;
  lastUsed: number;
}

function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type) return `${cause.type}: ${cause.message}`;
    return cause?.message ?? err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export async function sessionWorkflow(rawInput: SessionInput): Promise<{ lastSeq: number; reason: string }> {
  const parsed = SessionInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(`invalid session input: ${formatIssues(parsed.error)}`, 'SessionError.InvalidInput');
  }
  const agent: Agent = AgentSchema.parse(parsed.data.agent);
  const sessionId = workflowInfo().workflowId;
  const limits = agent.limits;

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

  const events: SessionEvent[] = [];
  const seenMessageIds = new Map<string, number>();
  const usage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
  const sandboxes = new Map<string, SandboxSlot>();
  const provisioning = new Map<string, Promise<SandboxSlot>>();
  /** The host a lost sandbox lived on: its replacement goes there first, to mount the same workspace. */
  const lastHost = new Map<string, string>();
  const tools = boundTools(agent);
  let state: SessionState = 'waiting_for_user';
  let lastUserSeq = -1;
  let handledThrough = -1;
  let endReason: string | undefined;
  let turn: { scope: CancellationScope; interruptReason?: string } | undefined;

  const append = (e: NewEvent): SessionEvent => {
    const event = { seq: events.length, ...e, time: new Date().toISOString() } as SessionEvent;
    events.push(event);
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
        result = await provisioner(previous.taskQueue).provisionSandbox({ sessionId, name, recipe, vault: agent.vault, resume: previous.sandboxId });
      } catch (err) {
        if (isCancellation(err)) throw err;
        sandboxes.delete(name);
        append({ type: 'sandbox_lost', name, sandboxId: previous.sandboxId, reason: `could not resume: ${failureMessage(err)}` });
      }
    }
    const preferred = lastHost.get(name);
    if (!result && preferred) {
      try {
        result = await provisioner(preferred).provisionSandbox({ sessionId, name, recipe, vault: agent.vault });
      } catch (err) {
        if (isCancellation(err)) throw err;
        lastHost.delete(name);
      }
    }
    result ??= await provisioner(HANDS_POOL).provisionSandbox({ sessionId, name, recipe, vault: agent.vault });
    const slot: SandboxSlot = { name, sandboxId: result.sandboxId, taskQueue: result.taskQueue, host: result.host, stopped: false, lastUsed: Date.now() };
    sandboxes.set(name, slot);
    append({ type: 'sandbox_provisioned', name, sandboxId: result.sandboxId, host: result.host, ms: Date.now() - started, resumed: result.resumed, loosened: result.loosened });
    return slot;
  };

  /** One provisioning per sandbox at a time, shared by tool calls and file copies. */
  const ensureSandbox = (name: string): Promise<SandboxSlot> => {
    const slot = sandboxes.get(name);
    if (slot && !slot.stopped) return Promise.resolve(slot);
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
      const r = await onHost(slot.taskQueue, timeoutSeconds).execute({ sandboxId: slot.sandboxId, toolUseId: use.id, tool: bound.kind as 'bash', input: use.input, timeoutSeconds, git });
      slot.lastUsed = Date.now();
      return r.isError ? { ...r, error: { kind: 'tool', message: r.output.split('\n').slice(-2).join(' ').slice(0, 500) } } : r;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = failureMessage(err);
      markLost(slot, reason);
      return toolError(`sandbox ${name} was lost while running this tool (${reason}); the next call gets a fresh sandbox`, 'infra');
    }
  };

  const stopIdleSandboxes = async () => {
    for (const slot of sandboxes.values()) {
      const idleMs = agent.sandboxes[slot.name].idleStopMinutes * 60_000;
      if (slot.stopped || Date.now() - slot.lastUsed < idleMs) continue;
      try {
        await onHost(slot.taskQueue, 30).stopSandbox({ sandboxId: slot.sandboxId });
        slot.stopped = true;
      } catch (err) {
        markLost(slot, `could not stop idle sandbox: ${failureMessage(err)}`);
      }
    }
  };

  const nextIdleDeadline = (): number | undefined => {
    let next: number | undefined;
    for (const slot of sandboxes.values()) {
      if (slot.stopped) continue;
      const at = slot.lastUsed + agent.sandboxes[slot.name].idleStopMinutes * 60_000;
      next = next === undefined ? at : Math.min(next, at);
    }
    return next;
  };

  const destroyAll = async () => {
    await Promise.all(
      [...sandboxes.values()].map((slot) => onHost(slot.taskQueue, 30).destroySandbox({ sandboxId: slot.sandboxId }).catch((err) => log.warn('destroySandbox failed', { error: failureMessage(err) }))),
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

  // Before any handler is registered: input that arrived with the start is delivered when its handler is set.
  append({ type: 'session_started', agent: agent as unknown as Record<string, unknown> });
  if (parsed.data.message) acceptUserMessage(parsed.data.message);

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
      const r = await onFileSandbox(req.sandbox, 'FilesError.Put', (host, sandboxId) => host.putFile({ sandboxId, key: `put-${uuid4()}`, path, contentBase64: req.contentBase64 }));
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
      const r = await onFileSandbox(req.sandbox, 'FilesError.Get', (host, sandboxId) => host.getFile({ sandboxId, key: `get-${uuid4()}`, path }));
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

  setHandler(interruptSignal, (raw) => {
    const reason = ReasonSchema.safeParse(raw ?? {});
    if (!turn) return;
    turn.interruptReason = (reason.success && reason.data.reason) || 'interrupted by user';
    turn.scope.cancel();
  });

  setHandler(endSignal, (raw) => {
    if (endReason !== undefined) return;
    const reason = ReasonSchema.safeParse(raw ?? {});
    endReason = (reason.success && reason.data.reason) || 'ended by user';
    turn?.scope.cancel();
  });

  setHandler(eventsQuery, (raw) => {
    const args = EventsQueryArgsSchema.parse(raw ?? {});
    const slice = events.slice(args.from, args.from + args.limit);
    return { events: slice, nextSeq: args.from + slice.length };
  });

  setHandler(statusQuery, () => ({
    state,
    lastSeq: events.length - 1,
    sandboxes: [...sandboxes.values()].map((s) => ({ name: s.name, sandboxId: s.sandboxId, host: s.host, state: s.stopped ? ('stopped' as const) : ('running' as const) })),
    usage: { ...usage },
  }));

  const toolSpecs = buildToolSpecs(agent);
  /** Model-facing mcp__<server>__<tool> names to the server and the tool's own name. */
  const mcpTools = new Map<string, { server: string; tool: string }>();
  let mcpListed = Object.keys(agent.mcpServers).length === 0;

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
      mcpTools.set(t.name, { server: t.server, tool: t.tool });
      toolSpecs.push(t.spec);
    }
    for (const f of listed.failed) append({ type: 'error', kind: 'mcp', message: `${f.message} (its tools are not offered in this run)` });
  };

  const runMcpTool = async (use: { id: string; input: unknown }, target: { server: string; tool: string }): Promise<ToolOutcome> => {
    const server = agent.mcpServers[target.server];
    try {
      const r = await mcp(server.timeoutSeconds, 2).callMcpTool({ sessionId, vault: agent.vault, serverName: target.server, server, tool: target.tool, input: use.input, toolUseId: use.id });
      return r.isError ? { ...r, error: { kind: 'tool', message: r.output.slice(0, 500) } } : r;
    } catch (err) {
      if (isCancellation(err)) throw err;
      return toolError(failureMessage(err), 'infra');
    }
  };

  /** Gives every tool_use without a result an error result, so the conversation stays valid. */
  const closeDanglingToolUses = (message: string) => {
    const answered = new Set<string>();
    const open: string[] = [];
    for (const e of events) {
      if (e.type === 'tool_use') open.push(e.id);
      if (e.type === 'tool_result') answered.add(e.toolUseId);
    }
    for (const id of open) {
      if (!answered.has(id)) append({ type: 'tool_result', toolUseId: id, output: message, isError: true, error: { kind: 'tool', message } });
    }
  };

  const runTool = async (use: { id: string; name: string; input: unknown }): Promise<ToolOutcome> => {
    const bound = tools.get(use.name);
    const mcpTarget = bound ? undefined : mcpTools.get(use.name);
    if (mcpTarget) return runMcpTool(use, mcpTarget);
    if (!bound) return toolError(`unknown tool: ${use.name}`);
    if (bound.sandbox !== undefined) return runSandboxTool(use, bound);
    return runBuiltinTool(use, events);
  };

  const runTurn = async () => {
    for (let round = 0; ; round++) {
      if (round >= limits.maxToolRoundsPerTurn) {
        append({ type: 'error', kind: 'limit', message: `stopped after ${round} tool rounds in one turn (limits.maxToolRoundsPerTurn)` });
        return;
      }
      handledThrough = lastUserSeq;
      await ensureMcpTools();
      let reply;
      try {
        reply = await model.callModel({ sessionId, throughSeq: events.length - 1, model: agent.model, system: agent.system, tools: toolSpecs, maxTokens: limits.maxOutputTokens, caching: agent.promptCaching });
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (err instanceof ActivityFailure) {
          append({ type: 'error', kind: 'model', message: failureMessage(err) });
          return;
        }
        throw err;
      }
      usage.inputTokens += reply.usage.inputTokens;
      usage.outputTokens += reply.usage.outputTokens;
      usage.cacheReadInputTokens += reply.usage.cacheReadInputTokens;
      usage.cacheCreationInputTokens += reply.usage.cacheCreationInputTokens;
      append({ type: 'assistant_message', content: reply.content, stopReason: reply.stopReason, usage: reply.usage });

      const toolUses = reply.content.filter((b) => b.type === 'tool_use') as unknown as { id: string; name: string; input: unknown }[];
      if (toolUses.length === 0) return;
      for (const use of toolUses) append({ type: 'tool_use', id: use.id, name: use.name, input: use.input });
      for (const use of toolUses) {
        const result = await runTool(use);
        append({ type: 'tool_result', toolUseId: use.id, ...result });
      }
    }
  };

  if (agent.provision === 'eager') {
    for (const name of Object.keys(agent.sandboxes)) {
      try {
        await ensureSandbox(name);
      } catch (err) {
        append({ type: 'error', kind: 'sandbox', message: `sandbox ${name} could not be provisioned: ${failureMessage(err)}` });
      }
    }
  }

  while (endReason === undefined) {
    for (;;) {
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
    try {
      await scope.run(runTurn);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      closeDanglingToolUses(endReason !== undefined ? 'session ended before the tool finished' : 'interrupted before the tool finished');
      if (endReason === undefined) append({ type: 'interrupted', reason: turn.interruptReason ?? 'interrupted' });
      handledThrough = lastUserSeq;
    } finally {
      turn = undefined;
    }
    if (endReason === undefined) state = 'waiting_for_user';
  }

  await CancellationScope.nonCancellable(destroyAll);
  append({ type: 'session_ended', reason: endReason });
  state = 'ended';
  await condition(allHandlersFinished);
  return { lastSeq: events.length - 1, reason: endReason };
}
