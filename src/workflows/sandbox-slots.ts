// The hands of one run: its sandboxes by name, provisioned on first use, replaced when lost, stopped when idle,
// destroyed at the end. Tool calls, file copies, hand-off and sub-agents all reach sandboxes through this object.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  sleep,
} from '@temporalio/workflow';
import type { ProvisionOutput } from '../hands/hands-activities';
import type { WorkspaceSnapshotTaken } from '../hands/hands-contract';
import type { Agent, BoundTool } from '../session/agent';
import type { NewEvent } from '../session/events';
import { resolveWorkspacePath } from '../session/paths';
import { lostWhileRunning, notProvisioned } from '../session/model-sentences';
import { TOOL_KINDS, toolSummary } from '../tools/registry';
import { HANDS_POOL, type SessionActivities } from './activity-options';
import { failureMessage, failureType } from './failures';
import type { HandedSandbox, SandboxSlot, WorkspaceSource } from '../session/contract';
import { invalidInput, toolError, type ToolOutcome } from '../tools/kind';
import { Failure } from '../session/failure-types';

export class SandboxSlots {
  /** The sandboxes this run holds, by name (a slot handed to another session stays, marked). */
  private readonly byName: Map<string, SandboxSlot>;
  /** The host a lost sandbox lived on: its replacement goes there first, to mount the same workspace. */
  private readonly lastHost: Map<string, string>;
  private readonly provisioning = new Map<string, Promise<SandboxSlot>>();
  /** A fork's sandboxes not provisioned yet: the source's snapshot each one's first workspace starts from. */
  private readonly workspaceFrom: Map<string, WorkspaceSource>;
  readonly onHost: SessionActivities['onHost'];
  /** Runs `wait` (a sandbox provisioned again, maybe restoring its workspace) with the session in `rescheduling`. */
  rescheduling?: (wait: () => Promise<void>) => Promise<void>;
  /** The earliest idle timer armed and not fired yet, and whether one fired since the last wait looked. */
  private idleTimerAt: number | undefined;
  private idleTimerFired = false;

  /**
   * `borrowed`: the sandboxes are another session's (a session thread works in its coordinator's): they are
   * provisioned and called under `sessionId`, that session's id, and this run never stops or destroys them.
   */
  constructor(
    private readonly sessionId: string,
    private readonly agent: Agent,
    private readonly activities: SessionActivities,
    private readonly append: (e: NewEvent) => unknown,
    carried:
      | {
          sandboxes?: SandboxSlot[];
          lastHost?: Record<string, string>;
          workspaceFrom?: Record<string, WorkspaceSource>;
        }
      | undefined,
    private readonly borrowed = false,
  ) {
    this.byName = new Map((carried?.sandboxes ?? []).map((s) => [s.name, { ...s }]));
    this.lastHost = new Map(Object.entries(carried?.lastHost ?? {}));
    this.workspaceFrom = new Map(borrowed ? [] : Object.entries(carried?.workspaceFrom ?? {}));
    this.onHost = activities.onHost;
  }

  /** The slot held under `name`, if any (handed off or not). */
  held(name: string): SandboxSlot | undefined {
    return this.byName.get(name);
  }

  /** Every slot held, in the order they were taken. */
  all(): SandboxSlot[] {
    return [...this.byName.values()];
  }

  /** Takes a sandbox another session passed here, replacing any slot of that name; returns the replaced slot. */
  receive(sandbox: HandedSandbox, lentBy?: string): SandboxSlot | undefined {
    const previous = this.byName.get(sandbox.name);
    this.byName.set(sandbox.name, { ...sandbox, lastUsed: Date.now(), ...(lentBy ? { lentBy } : {}) });
    return previous;
  }

  /** The slot now belongs to session `to` (undefined: back to this one); the slot stays so its calls are denied. */
  handTo(slot: SandboxSlot, to: string | undefined): void {
    slot.handedTo = to;
  }

  /** Whether this session's agent declares a sandbox of that name. */
  declares(name: string): boolean {
    return name in this.agent.sandboxes;
  }

  /** Provisions every declared sandbox now (provision 'eager'); one that fails is an error event. */
  async provisionAll(): Promise<void> {
    for (const name of Object.keys(this.agent.sandboxes)) {
      try {
        await this.ensure(name);
      } catch (err) {
        this.append({ type: 'error', kind: 'sandbox', message: notProvisioned(name, failureMessage(err)) });
      }
    }
  }

  /** One provisioning per sandbox at a time, shared by tool calls and file copies. */
  ensure(name: string): Promise<SandboxSlot> {
    const slot = this.byName.get(name);
    // A slot handed to another session stays, so the host can deny this session's calls to it.
    if (slot && (!slot.stopped || slot.handedTo)) return Promise.resolve(slot);
    let pending = this.provisioning.get(name);
    if (!pending) {
      pending = this.provisionNow(name).finally(() => this.provisioning.delete(name));
      this.provisioning.set(name, pending);
    }
    return pending;
  }

  private async provisionNow(name: string): Promise<SandboxSlot> {
    const { sessionId, agent } = this;
    const provisioner = this.activities.provisioner;
    const recipe = agent.sandboxes[name];
    const started = Date.now();
    const previous = this.byName.get(name);
    const from = this.restoreFrom(name);
    let result: ProvisionOutput | undefined;
    // A sandbox provisioned again after it was lost, paused, or could not be resumed moves: its workspace may be
    // restored from a snapshot, and the session reads `rescheduling` meanwhile.
    let resumeFailed = false;
    const moving = () =>
      previous?.paused === true || resumeFailed || (this.lastHost.has(name) && !this.byName.has(name));
    if (previous?.stopped && !previous.paused) {
      try {
        result = await provisioner(previous.taskQueue).provisionSandbox.executeWithOptions(
          { summary: `resume sandbox ${name}` },
          [{ sessionId, name, recipe, vault: agent.vault, resume: previous.sandboxId }],
        );
      } catch (err) {
        if (isCancellation(err)) throw err;
        this.byName.delete(name);
        resumeFailed = true;
        this.append({
          type: 'sandbox_lost',
          name,
          sandboxId: previous.sandboxId,
          reason: `could not resume: ${failureMessage(err)}`,
        });
      }
    }
    const after = previous?.paused ? ({ after: 'pause' } as const) : {};
    const provisionAnew = async (): Promise<ProvisionOutput> => {
      const preferred = previous?.paused ? previous.taskQueue : this.lastHost.get(name);
      if (preferred) {
        try {
          return await provisioner(preferred).provisionSandbox.executeWithOptions(
            { summary: `provision sandbox ${name}` },
            [{ sessionId, name, recipe, vault: agent.vault, ...after, ...from }],
          );
        } catch (err) {
          if (isCancellation(err)) throw err;
          this.lastHost.delete(name);
        }
      }
      return provisioner(HANDS_POOL).provisionSandbox.executeWithOptions({ summary: `provision sandbox ${name}` }, [
        { sessionId, name, recipe, vault: agent.vault, ...after, ...from },
      ]);
    };
    if (!result) {
      if (moving() && this.rescheduling && patched('sandbox-rescheduling')) {
        this.append({ type: 'sandbox_rescheduling', name, reason: previous?.paused ? 'paused' : 'lost' });
        const provisioned = provisionAnew();
        await this.rescheduling(() => provisioned.then(() => undefined).catch(() => undefined));
        result = await provisioned;
      } else result = await provisionAnew();
    }
    this.workspaceFrom.delete(name);
    const slot: SandboxSlot = {
      name,
      sandboxId: result.sandboxId,
      taskQueue: result.taskQueue,
      host: result.host,
      stopped: false,
      lastUsed: Date.now(),
    };
    this.byName.set(name, slot);
    this.append({
      type: 'sandbox_provisioned',
      name,
      sandboxId: result.sandboxId,
      host: result.host,
      ms: Date.now() - started,
      resumed: result.resumed,
      ...(result.runtime ? { runtime: result.runtime } : {}),
      loosened: result.loosened,
    });
    if (result.restored && patched('workspace-snapshot-events'))
      this.append({
        type: 'workspace_restored',
        name,
        sandboxId: result.sandboxId,
        host: result.host,
        snapshotSeq: result.restored.seq,
        takenAt: result.restored.takenAt,
        files: result.restored.files,
        sizeBytes: result.restored.sizeBytes,
        ms: result.restored.ms,
        ...(result.restored.from ? { from: result.restored.from } : {}),
      });
    return slot;
  }

  private appendSnapshot(name: string, snapshot: WorkspaceSnapshotTaken): void {
    this.append({
      type: 'workspace_snapshot',
      name,
      snapshotSeq: snapshot.seq,
      files: snapshot.files,
      sizeBytes: snapshot.sizeBytes,
      chunkCount: snapshot.chunkCount,
      newChunks: snapshot.newChunks,
      newBytes: snapshot.newBytes,
    });
  }

  /** What a fork's provision of `name` passes so its first workspace is the source's snapshot. */
  private restoreFrom(name: string): { restoreFrom?: WorkspaceSource } {
    const from = this.workspaceFrom.get(name);
    return from && patched('fork-workspace') ? { restoreFrom: from } : {};
  }

  /** Forgets a sandbox that is gone (unless already replaced), remembering its host for the replacement. */
  markLost(slot: SandboxSlot, reason: string): void {
    if (this.byName.get(slot.name)?.sandboxId !== slot.sandboxId) return;
    this.byName.delete(slot.name);
    this.lastHost.set(slot.name, slot.taskQueue);
    this.append({ type: 'sandbox_lost', name: slot.name, sandboxId: slot.sandboxId, reason });
  }

  /** Runs a tool call in its sandbox; a lost sandbox is an infrastructure error for the model, and forgotten. */
  async runTool(use: { id: string; input: unknown }, bound: BoundTool): Promise<ToolOutcome> {
    const { sessionId, agent } = this;
    const name = bound.sandbox!;
    // A malformed call is answered before anything runs: it never provisions a sandbox. Histories recorded
    // before this check had the hands host refuse the input after provisioning.
    if (patched('parse-tool-input')) {
      const parsed = TOOL_KINDS[bound.kind].input.safeParse(use.input ?? {});
      if (!parsed.success) return toolError(invalidInput(bound.name, parsed.error));
    }
    let slot: SandboxSlot;
    try {
      slot = await this.ensure(name);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return toolError(notProvisioned(name, failureMessage(err)), 'infra');
    }
    const timeoutSeconds = agent.sandboxes[name].commandTimeoutSeconds;
    try {
      const repo = agent.sandboxes[name].repo;
      const git =
        (bound.kind === 'git_push' || bound.kind === 'git_pull') && repo
          ? { sessionId, name, vault: agent.vault, repo }
          : undefined;
      const r = await this.onHost(slot.taskQueue, timeoutSeconds).execute.executeWithOptions(
        { summary: toolSummary(bound.name, bound.kind, use.input) },
        [
          {
            sessionId,
            sandboxId: slot.sandboxId,
            toolUseId: use.id,
            tool: bound.kind as 'bash',
            input: use.input,
            timeoutSeconds,
            git,
          },
        ],
      );
      slot.lastUsed = Date.now();
      const { outputRef, snapshot, ...rest } = r;
      if (snapshot && patched('workspace-snapshot-events')) this.appendSnapshot(name, snapshot);
      const outcome: ToolOutcome = { ...rest, ...(outputRef ? { outputRef: { sandbox: name, ...outputRef } } : {}) };
      return r.isError
        ? { ...outcome, error: { kind: 'tool', message: r.output.split('\n').slice(-2).join(' ').slice(0, 500) } }
        : outcome;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const reason = failureMessage(err);
      if (failureType(err) === Failure.Sandbox.Denied) return toolError(reason, 'denied');
      this.markLost(slot, reason);
      return toolError(lostWhileRunning(name, reason), 'infra');
    }
  }

  async stopIdle(): Promise<void> {
    if (this.borrowed) return;
    for (const slot of this.byName.values()) {
      if (slot.handedTo || !this.agent.sandboxes[slot.name]) continue;
      const idleMs = this.agent.sandboxes[slot.name].idleStopMinutes * 60_000;
      if (slot.stopped || Date.now() - slot.lastUsed < idleMs) continue;
      try {
        // An idle sandbox whose host keeps snapshots is paused: captured, then removed from its host. One lent by
        // a parent session goes back to it as it is, so it is only stopped.
        if (!slot.lentBy && patched('sandbox-pause')) await this.pause(slot);
        else {
          await this.onHost(slot.taskQueue, 30).stopSandbox({ sessionId: this.sessionId, sandboxId: slot.sandboxId });
          slot.stopped = true;
        }
      } catch (err) {
        this.markLost(slot, `could not stop idle sandbox: ${failureMessage(err)}`);
      }
    }
  }

  private async pause(slot: SandboxSlot): Promise<void> {
    const r = await this.onHost(slot.taskQueue, 600).pauseSandbox({
      sessionId: this.sessionId,
      sandboxId: slot.sandboxId,
    });
    slot.stopped = true;
    if (!r.paused) return;
    slot.paused = true;
    if (r.snapshot) this.appendSnapshot(slot.name, r.snapshot);
    this.append({ type: 'sandbox_paused', name: slot.name, sandboxId: slot.sandboxId, snapshotSeq: r.snapshotSeq });
  }

  /**
   * Waits until `ready` holds, stopping each running sandbox as it falls idle meanwhile. The idle timer outlives
   * the wait: input that ends a wait leaves it running, and when it fires during a turn the next wait finds that
   * nothing fell idle and arms one timer for the new deadline. A session that works in turns thus starts one timer
   * per idle period, not one per turn, and never cancels one (two commands fewer on each turn's tasks).
   */
  async idleUntil(ready: () => boolean): Promise<void> {
    if (!patched('idle-timer-kept')) return this.idleUntilPerWait(ready);
    for (;;) {
      if (ready()) return;
      const deadline = this.nextIdleDeadline();
      if (deadline === undefined) {
        await condition(ready);
        return;
      }
      if (!this.idleTimerFired) this.armIdleTimer(deadline);
      await condition(() => ready() || this.idleTimerFired);
      if (ready()) return;
      this.idleTimerFired = false;
      await this.stopIdle();
    }
  }

  /** Arms a timer for `at`, unless one armed already fires by then. */
  private armIdleTimer(at: number): void {
    if (this.idleTimerAt !== undefined && this.idleTimerAt <= at) return;
    this.idleTimerAt = at;
    const fired = () => {
      if (this.idleTimerAt === at) this.idleTimerAt = undefined;
      this.idleTimerFired = true;
    };
    // Outside any turn's scope, so an interrupt does not cancel it; cancelled with the run, it only wakes a wait.
    void CancellationScope.nonCancellable(() => sleep(Math.max(1, at - Date.now()))).then(fired, fired);
  }

  /** Before `idle-timer-kept`: each wait starts a timer, and input that ends the wait cancels it. */
  private async idleUntilPerWait(ready: () => boolean): Promise<void> {
    for (;;) {
      const deadline = this.nextIdleDeadline();
      if (deadline === undefined) {
        await condition(ready);
        break;
      }
      if (await condition(ready, Math.max(1, deadline - Date.now()))) break;
      await this.stopIdle();
    }
  }

  /** When the next running sandbox falls idle long enough to stop, if any. */
  nextIdleDeadline(): number | undefined {
    if (this.borrowed) return undefined;
    let next: number | undefined;
    for (const slot of this.byName.values()) {
      if (slot.stopped || slot.handedTo || !this.agent.sandboxes[slot.name]) continue;
      const at = slot.lastUsed + this.agent.sandboxes[slot.name].idleStopMinutes * 60_000;
      next = next === undefined ? at : Math.min(next, at);
    }
    return next;
  }

  async destroyAll(): Promise<void> {
    if (this.borrowed) return void this.byName.clear();
    await Promise.all(
      [...this.byName.values()]
        .filter((slot) => !slot.handedTo && !slot.paused)
        .map((slot) =>
          this.onHost(slot.taskQueue, 30)
            .destroySandbox({ sessionId: this.sessionId, sandboxId: slot.sandboxId })
            .catch((err) => log.warn('destroySandbox failed', { error: failureMessage(err) })),
        ),
    );
    this.byName.clear();
  }

  /** The workspace path a file copy targets, refused if the sandbox or the path is not this agent's. */
  fileTarget(sandbox: string, path: string): string {
    const recipe = this.agent.sandboxes[sandbox];
    if (!recipe)
      throw ApplicationFailure.nonRetryable(
        `no sandbox named ${sandbox}; this agent declares ${Object.keys(this.agent.sandboxes).join(', ')}`,
        Failure.Files.UnknownSandbox,
      );
    try {
      return resolveWorkspacePath(recipe.workdir, path);
    } catch (err) {
      throw ApplicationFailure.nonRetryable((err as Error).message, Failure.Files.BadPath);
    }
  }

  /** Runs a file copy on the sandbox's host, provisioning the sandbox first if it has none. */
  async onFileSandbox<T>(
    sandbox: string,
    type: string,
    call: (host: ReturnType<SessionActivities['onHost']>, sandboxId: string) => Promise<T>,
  ): Promise<T> {
    const slot = await this.ensure(sandbox);
    try {
      return await call(this.onHost(slot.taskQueue, 60), slot.sandboxId);
    } catch (err) {
      throw ApplicationFailure.nonRetryable(failureMessage(err), type);
    }
  }

  status() {
    return [...this.byName.values()].map((s) => ({
      name: s.name,
      sandboxId: s.sandboxId,
      host: s.host,
      state: s.handedTo
        ? ('handed_off' as const)
        : s.paused
          ? ('paused' as const)
          : s.stopped
            ? ('stopped' as const)
            : ('running' as const),
      ...(s.handedTo ? { handedTo: s.handedTo } : {}),
    }));
  }

  carry(): {
    sandboxes: SandboxSlot[];
    lastHost: Record<string, string>;
    workspaceFrom?: Record<string, WorkspaceSource>;
  } {
    return {
      sandboxes: [...this.byName.values()].map((s) => ({ ...s })),
      lastHost: Object.fromEntries(this.lastHost),
      ...(this.workspaceFrom.size > 0 ? { workspaceFrom: Object.fromEntries(this.workspaceFrom) } : {}),
    };
  }
}
