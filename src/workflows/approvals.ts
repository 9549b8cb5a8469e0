// The tool gate: every tool call of a round passes through it. It asks for approval where the agent's policy (or,
// under `auto`, its judge model) says so, hands client tools to the calling application, and runs the rest. Its state
// (the round's calls still without a result, with their judgements) is carried across continue-as-new, so a pending
// approval or client call survives a handover and no call is judged twice.
import { condition, patched, setHandler } from '@temporalio/workflow';
import { formatIssues, type Agent, type BoundTool } from '../session/agent';
import type { NewEvent, SessionEvent, Usage } from '../session/events';
import { indeterminate, type Judgement } from '../session/judge';
import { evaluatePolicy, policyFor, type PolicyVerdict } from '../session/policy';
import {
  ResolveToolUseSchema,
  SubmitToolResultSchema,
  resolveToolUseUpdate,
  submitToolResultUpdate,
  type Carry,
  type PendingAction,
  type PendingTool,
  type ThreadAction,
} from '../session/contract';
import { toolError, type ToolOutcome } from '../tools/kind';
import type { SessionRun } from './session-run';
import { Failure, refusal } from '../session/failure-types';

export interface ToolGateDeps {
  agent: Agent;
  /** The run: its log (to tell a repeated decision or answer from an unknown id), whether it should hand over, whether it is open. */
  run: SessionRun;
  runTool: (use: { id: string; name: string; input: unknown }) => Promise<ToolOutcome>;
  /** The round a previous run handed over in the middle of. */
  carried?: PendingTool[];
  /**
   * For a call whose result comes from elsewhere (a running sub-agent): resolves true once it is there, false
   * when the run should hand over first; undefined for any other call.
   */
  awaitExternal?: (toolUseId: string) => Promise<boolean> | undefined;
  /**
   * The judge of a call under the `auto` policy: its decision, never a failure (a judge that fails escalates);
   * absent: every such call escalates.
   */
  judge?: (use: Use) => Promise<JudgedCall>;
  /**
   * A session thread's: tells the coordinator that a call waits for the client (or no longer does), so the
   * coordinator cross-posts it onto the primary stream. Never fails.
   */
  crossPost?: (action: Omit<ThreadAction, 'sessionId'>) => Promise<void>;
}

/** A judge's decision, with the model that made it and what it cost. */
export type JudgedCall = Judgement & { model: string; usage?: Usage };

/**
 * The round a previous run handed over in the middle of. A run recorded before the gate carried only the
 * spawn_agent calls still waiting for their children (`waiting`); they pass the gate as already allowed.
 */
export function carriedRound(
  carried: Carry | undefined,
  tools: ReadonlyMap<string, BoundTool>,
): PendingTool[] | undefined {
  const inTurn = carried?.inTurn;
  if (inTurn?.tools || !inTurn?.waiting) return inTurn?.tools;
  const spawnName = [...tools].find(([, t]) => t.kind === 'spawn_agent')?.[0] ?? 'spawn_agent';
  return inTurn.waiting.map((id) => ({ id, name: spawnName, input: {}, decision: { allow: true, by: 'policy' } }));
}

type Use = { id: string; name: string; input: unknown };

export class ToolGate {
  private readonly clientTools: Map<string, Agent['clientTools'][number]>;
  /** The round's calls still without a result through the gate. */
  private round: PendingTool[];
  private waitingOn: PendingTool | undefined;
  /** Client calls answered by `submitToolResult`: their tool_result is in the log. */
  private readonly answered = new Set<string>();
  /** Each call's policy verdict, evaluated once per tool use (the policy is a pure function of name and input). */
  private readonly verdicts = new Map<string, ReturnType<typeof evaluatePolicy>>();

  constructor(private readonly deps: ToolGateDeps) {
    this.clientTools = new Map(deps.agent.clientTools.map((t) => [t.name, t]));
    this.round = (deps.carried ?? []).map((t) => ({ ...t }));
  }

  /** An MCP tool without a policy of its own takes its server's, `mcp__<server>__*`. */
  private verdictOf(t: Use) {
    let v = this.verdicts.get(t.id);
    if (!v) this.verdicts.set(t.id, (v = evaluatePolicy(t.name, policyFor(this.deps.agent.policies, t.name), t.input)));
    return v;
  }

  /** Whether the call asks a person: by its policy, or under `auto` unless its judge allowed it (so far, it asks). */
  private asksFor(t: PendingTool, verdict: PolicyVerdict = this.verdictOf(t)): boolean {
    return verdict.auto ? t.judgement?.permission !== 'allow' : verdict.ask;
  }

  /** Whether the call may run (or be handed to the client) without a decision still to come. */
  private cleared(t: PendingTool): boolean {
    return t.decision ? t.decision.allow : t.approval === undefined && !this.asksFor(t);
  }

  /**
   * Judges a call under the `auto` policy, once: the decision goes into the log (tool_judged) and onto the call,
   * which the carry takes to the next run. A judge that fails or times out escalates; it never allows.
   */
  private async judge(t: PendingTool): Promise<void> {
    const { agent } = this.deps;
    // Histories from before the policy existed hold no `auto` call; the patch marks where judging began.
    const judged: JudgedCall =
      patched('auto-policy') && this.deps.judge
        ? await this.deps.judge(t)
        : { ...indeterminate('no judge is available'), model: agent.judge?.model ?? agent.model };
    const { permission, reasonCode, reason, model, usage } = judged;
    if (usage) this.deps.run.addUsage(usage);
    this.deps.run.append({
      type: 'tool_judged',
      toolUseId: t.id,
      permission,
      ...(reasonCode !== undefined ? { reasonCode } : {}),
      reason,
      model,
      ...(usage ? { usage } : {}),
    });
    t.judgement = { permission, ...(reasonCode !== undefined ? { reasonCode } : {}), reason };
  }

  private lastOf<T extends SessionEvent['type']>(type: T, id: string) {
    return [...this.deps.run.events]
      .reverse()
      .find((e) => e.type === type && (e as { toolUseId?: string }).toolUseId === id) as
      Extract<SessionEvent, { type: T }> | undefined;
  }

  private decide(t: PendingTool, allow: boolean, by: string, reason?: string): number {
    const event = this.deps.run.append({
      type: 'approval_resolved',
      toolUseId: t.id,
      allow,
      by,
      ...(reason !== undefined ? { reason } : {}),
    });
    t.decision = { allow, by, ...(reason !== undefined ? { reason } : {}) };
    return event.seq;
  }

  /**
   * Waits until `done` holds; false when the run should hand over first. Unless `onPerson` is false (a self-hosted
   * environment's worker answers), the session reads as requires_action meanwhile.
   */
  private async waitFor(
    t: PendingTool,
    done: () => boolean,
    timeoutMs?: number,
    onPerson = true,
  ): Promise<boolean | 'timeout'> {
    if (onPerson) this.waitingOn = t;
    try {
      const ready = () => done() || this.deps.run.shouldHandOver();
      if (timeoutMs === undefined) await condition(ready);
      else if (!(await condition(ready, Math.max(1, timeoutMs)))) return 'timeout';
      return done();
    } finally {
      if (onPerson) this.waitingOn = undefined;
    }
  }

  /**
   * A self-hosted environment's tool call: its worker answers through `submitToolResult`; an answer not in by
   * `timeoutSeconds` after the wait began (a durable timer, carried across handovers) becomes an error result.
   */
  private async awaitEnvironment(t: PendingTool, timeoutSeconds: number): Promise<'done' | 'handover'> {
    t.resultDueAt ??= Date.now() + timeoutSeconds * 1000;
    const r = await this.waitFor(t, () => this.answered.has(t.id), t.resultDueAt - Date.now(), false);
    if (r === 'timeout') {
      this.deps.run.append({
        type: 'tool_result',
        toolUseId: t.id,
        ...toolError(
          `no worker of the self-hosted environment answered within ${timeoutSeconds} s; the call may not have run`,
          'infra',
        ),
      });
      return 'done';
    }
    return r ? 'done' : 'handover';
  }

  private missingRequired(t: PendingTool): string[] {
    const required = this.clientTools.get(t.name)?.input_schema.required ?? [];
    const input = (t.input ?? {}) as Record<string, unknown>;
    return required.filter((k) => !(k in input));
  }

  /**
   * A thread's call starts or stops waiting for the client: the coordinator is told, once per call for `waiting`
   * (the flag is carried across handovers, and the coordinator drops what it already has).
   */
  private async crossPost(t: PendingTool, state: 'waiting' | 'settled', waitsFor?: 'confirmation' | 'result') {
    const post = this.deps.crossPost;
    if (!post) return;
    if (state === 'settled') {
      if (t.crossPosted) await post({ toolUseId: t.id, state });
      return;
    }
    // Threads recorded before cross-posting never told their coordinator of a call.
    if (t.crossPosted || !patched('thread-cross-post')) return;
    t.crossPosted = true;
    await post({
      toolUseId: t.id,
      state,
      ...(t.useSeq !== undefined ? { useSeq: t.useSeq } : {}),
      name: t.name,
      input: t.input,
      ...(waitsFor ? { waitsFor } : {}),
      ...(t.approval ? { policy: t.approval.policy } : {}),
    });
  }

  /** One call through the gate: approval, then the client or the tool itself. */
  private async runOne(t: PendingTool): Promise<'done' | 'handover'> {
    const append = (e: NewEvent) => this.deps.run.append(e);
    if (this.clientTools.has(t.name) && this.missingRequired(t).length > 0) {
      append({
        type: 'tool_result',
        toolUseId: t.id,
        ...toolError(`invalid input for ${t.name}: missing ${this.missingRequired(t).join(', ')}`),
      });
      return 'done';
    }
    if (!t.decision && !t.approval) {
      const verdict = this.verdictOf(t);
      if (verdict.auto && !t.judgement) await this.judge(t);
      if (this.asksFor(t, verdict)) {
        const rule = verdict.auto ? `${verdict.rule} (${t.judgement?.reasonCode ?? 'indeterminate'})` : verdict.rule;
        append({ type: 'approval_requested', toolUseId: t.id, policy: rule });
        t.approval = {
          policy: rule,
          onTimeout: verdict.onTimeout,
          ...(verdict.timeoutSeconds !== undefined ? { expiresAt: Date.now() + verdict.timeoutSeconds * 1000 } : {}),
        };
      }
    }
    const client = this.clientTools.get(t.name);
    const forClient = client !== undefined && client.runsIn !== 'environment';
    if (t.approval && !t.decision) {
      await this.crossPost(t, 'waiting', forClient ? 'result' : 'confirmation');
      const expiresAt = t.approval.expiresAt;
      const r = await this.waitFor(
        t,
        () => t.decision !== undefined,
        expiresAt === undefined ? undefined : expiresAt - Date.now(),
      );
      if (r === 'timeout') {
        this.decide(
          t,
          t.approval.onTimeout === 'allow',
          'timeout',
          `no decision before the approval timed out; the policy's default (${t.approval.onTimeout}) applies`,
        );
      } else if (!r) return 'handover';
    }
    // A custom tool's copy stays waiting for its result once it is allowed.
    if (t.decision && !(forClient && t.decision.allow)) await this.crossPost(t, 'settled');
    if (t.decision && !t.decision.allow) {
      const who =
        t.decision.by === 'timeout'
          ? 'its approval timed out and the policy denied it'
          : `${t.decision.by ?? 'the user'} denied this tool call`;
      const message = t.decision.reason && t.decision.by !== 'timeout' ? `${who}: ${t.decision.reason}` : who;
      append({ type: 'tool_result', toolUseId: t.id, ...toolError(message, 'denied') });
      return 'done';
    }
    if (client) {
      if (this.answered.has(t.id)) {
        await this.crossPost(t, 'settled');
        return 'done';
      }
      // Only sessions of self-hosted environments have such tools, none of them older than the patch.
      if (client.timeoutSeconds !== undefined && patched('client-tool-timeout'))
        return this.awaitEnvironment(t, client.timeoutSeconds);
      if (forClient) await this.crossPost(t, 'waiting', 'result');
      if (!(await this.waitFor(t, () => this.answered.has(t.id), undefined, forClient))) return 'handover';
      await this.crossPost(t, 'settled');
      return 'done';
    }
    const external = this.deps.awaitExternal?.(t.id);
    if (external && !(await external)) return 'handover';
    const result = await this.deps.runTool(t);
    append({ type: 'tool_result', toolUseId: t.id, ...result });
    return 'done';
  }

  /** Registers the gate's updates (approve or deny a call, answer a client tool call); the session registers all its handlers in one place. */
  register(): void {
    const { deps, clientTools } = this;
    setHandler(
      resolveToolUseUpdate,
      (raw) => {
        const req = ResolveToolUseSchema.parse(raw);
        const t = this.round.find((x) => x.id === req.toolUseId)!;
        return { seq: this.decide(t, req.allow, req.by ?? 'user', req.reason) };
      },
      {
        validator: (raw) => {
          const r = ResolveToolUseSchema.safeParse(raw);
          if (!r.success) throw refusal(`invalid resolveToolUse: ${formatIssues(r.error)}`, Failure.Approval.Invalid);
          deps.run.assertOpen();
          const id = r.data.toolUseId;
          const t = this.round.find((x) => x.id === id);
          if (t?.approval && !t.decision) return;
          const resolved = this.lastOf('approval_resolved', id);
          if (resolved)
            throw refusal(
              `tool use ${id} was already ${resolved.allow ? 'approved' : 'denied'} (event ${resolved.seq}, by ${resolved.by})`,
              Failure.Approval.AlreadyDecided,
            );
          if (t)
            throw refusal(
              `tool use ${id} has no approval pending${this.cleared(t) ? ': its policy allows it' : ' yet: it waits for an earlier call of its round'}`,
              Failure.Approval.NotPending,
            );
          throw refusal(`no approval is pending for tool use ${id}`, Failure.Approval.Unknown);
        },
      },
    );

    setHandler(
      submitToolResultUpdate,
      (raw) => {
        const req = SubmitToolResultSchema.parse(raw);
        this.answered.add(req.toolUseId);
        const event = deps.run.append({
          type: 'tool_result',
          toolUseId: req.toolUseId,
          output: req.output,
          isError: req.isError,
          ...(req.isError ? { error: { kind: 'tool' as const, message: req.output.slice(0, 500) } } : {}),
        });
        return { seq: event.seq };
      },
      {
        validator: (raw) => {
          const r = SubmitToolResultSchema.safeParse(raw);
          if (!r.success)
            throw refusal(`invalid submitToolResult: ${formatIssues(r.error)}`, Failure.ClientTool.Invalid);
          deps.run.assertOpen();
          const id = r.data.toolUseId;
          const result = this.lastOf('tool_result', id);
          if (result)
            throw refusal(
              `tool use ${id} already has a result (event ${result.seq}); this answer is refused`,
              Failure.ClientTool.AlreadyAnswered,
            );
          const t = this.round.find((x) => x.id === id);
          if (!t) throw refusal(`no client tool call ${id} is waiting for a result`, Failure.ClientTool.Unknown);
          if (!clientTools.has(t.name))
            throw refusal(
              `tool use ${id} is a ${t.name} call, which the session runs itself`,
              Failure.ClientTool.NotClientTool,
            );
          if (!this.cleared(t))
            throw refusal(`tool use ${id} waits for approval first`, Failure.ClientTool.NotApproved);
        },
      },
    );
  }

  /** Whether the policy may ask for a person's decision before this call runs (under `auto`, the judge decides first). */
  asks(use: Use): boolean {
    const v = this.verdictOf(use);
    return v.ask || v.auto === true;
  }

  /** Starts a round with the model's tool calls (their tool_use events already appended). */
  startRound(uses: Use[]): void {
    const seqs = new Map(this.deps.run.events.flatMap((e) => (e.type === 'tool_use' ? [[e.id, e.seq] as const] : [])));
    this.round = uses.map((u) => ({
      id: u.id,
      name: u.name,
      input: u.input,
      ...(seqs.has(u.id) ? { useSeq: seqs.get(u.id) } : {}),
    }));
    // Verdicts of earlier rounds are not asked for again.
    for (const id of this.verdicts.keys()) if (!this.round.some((t) => t.id === id)) this.verdicts.delete(id);
  }

  /** Finishes the round's calls in order; `handover` when the run should hand over while one still waits. */
  async runRound(): Promise<'done' | 'handover'> {
    // On cancellation the round stays, so the session can close its calls (Sealing.closeOpenCalls, then clear).
    while (this.round.length > 0) {
      if ((await this.runOne(this.round[0])) === 'handover') return 'handover';
      this.round.shift();
    }
    return 'done';
  }

  /** Forgets the round (an interrupt closed its calls). */
  clear(): void {
    this.round = [];
  }

  /** The round's calls whose result is not in the log yet. */
  openIds(): string[] {
    const resulted = new Set(this.deps.run.events.flatMap((e) => (e.type === 'tool_result' ? [e.toolUseId] : [])));
    return this.round.filter((t) => !this.answered.has(t.id) && !resulted.has(t.id)).map((t) => t.id);
  }

  /** The round's calls still without a result, for the next run. */
  carry(): PendingTool[] | undefined {
    const open = this.round.filter((t) => !this.answered.has(t.id));
    return open.length > 0 ? open.map((t) => ({ ...t })) : undefined;
  }

  /** True while the turn waits on a person or the calling application. */
  waiting(): boolean {
    return this.waitingOn !== undefined;
  }

  pending(): PendingAction[] {
    const out: PendingAction[] = [];
    for (const t of this.round) {
      if (t.approval && !t.decision) {
        out.push({
          kind: 'approval',
          toolUseId: t.id,
          name: t.name,
          input: t.input,
          policy: t.approval.policy,
          onTimeout: t.approval.onTimeout,
          ...(t.approval.expiresAt !== undefined ? { expiresAt: new Date(t.approval.expiresAt).toISOString() } : {}),
        });
      } else if (
        this.clientTools.has(t.name) &&
        this.clientTools.get(t.name)!.runsIn !== 'environment' &&
        !this.answered.has(t.id) &&
        this.cleared(t)
      ) {
        out.push({ kind: 'client_tool', toolUseId: t.id, name: t.name, input: t.input });
      }
    }
    return out;
  }
}
