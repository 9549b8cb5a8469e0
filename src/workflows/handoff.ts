// Hand-off of hands: a session passes one of its sandboxes to another session. The container and its host
// queue stay where they are; the host's ownership registry names the new owner (activity `transferSandbox` on
// the host's queue), and from then on the host denies the old owner's calls. Both logs record the transfer.
import { ApplicationFailure, getExternalWorkflowHandle, isCancellation, log, setHandler } from '@temporalio/workflow';
import type { NewEvent } from '../session/events';
import { HandoffSandboxInputSchema } from '../tools/handoff-sandbox';
import { formatIssues } from '../session/agent';
import { failureMessage } from './failures';
import {
  HandoffRequestSchema,
  handoffSandboxUpdate,
  sandboxReceivedSignal,
  SandboxGiftSchema,
  type HandedSandbox,
  type SandboxSlot,
} from '../session/contract';
import { toolError, type ToolOutcome } from '../tools/kind';
import type { SandboxSlots } from './sandbox-slots';
import { Failure } from '../session/failure-types';
import { PlatformError } from '../session/platform-error';

export interface HandoffContext {
  sessionId: string;
  append: (e: NewEvent) => unknown;
  /** The run's sandboxes; a sandbox that goes missing is remembered by host, so its replacement goes there. */
  slots: SandboxSlots;
  /** True once session_ended is in the log: nothing more may be appended. */
  closed: () => boolean;
}

/** A hand-off that cannot happen; its message is for the model or the user. */
export class HandoffError extends PlatformError {}

export const handedOf = (slot: SandboxSlot): HandedSandbox => ({
  name: slot.name,
  sandboxId: slot.sandboxId,
  taskQueue: slot.taskQueue,
  host: slot.host,
  stopped: slot.stopped,
});

export class Handoff {
  constructor(private readonly ctx: HandoffContext) {}

  private transfer(s: HandedSandbox, from: string, to: string) {
    return this.ctx.slots.onHost(s.taskQueue, 30).transferSandbox({ sandboxId: s.sandboxId, name: s.name, from, to });
  }

  /** The named sandbox, running and still this session's, ready to pass on. */
  private async prepare(name: string): Promise<SandboxSlot> {
    const { slots } = this.ctx;
    const held = slots.held(name);
    if (held?.handedTo)
      throw new HandoffError(`sandbox ${name} was handed to session ${held.handedTo}; it is no longer this session's`);
    if (!held && !slots.declares(name)) throw new HandoffError(`this session has no sandbox named ${name}`);
    try {
      return await slots.ensure(name);
    } catch (err) {
      if (isCancellation(err)) throw err;
      throw new HandoffError(`sandbox ${name} could not be made ready: ${failureMessage(err)}`);
    }
  }

  /** Moves ownership of the named sandboxes to `to` on their hosts; undoes the moves made if one fails. */
  async moveTo(names: readonly string[], to: string): Promise<SandboxSlot[]> {
    const moved: SandboxSlot[] = [];
    try {
      for (const name of names) {
        const slot = await this.prepare(name);
        await this.transfer(slot, this.ctx.sessionId, to);
        moved.push(slot);
      }
      return moved;
    } catch (err) {
      if (isCancellation(err)) throw err;
      await this.undo(moved, to);
      throw err instanceof HandoffError ? err : new HandoffError(failureMessage(err));
    }
  }

  async undo(slots: readonly SandboxSlot[], to: string): Promise<void> {
    for (const slot of slots)
      await this.transfer(slot, to, this.ctx.sessionId).catch((e) =>
        log.warn('could not take a sandbox back', { error: failureMessage(e) }),
      );
  }

  /** Records that `slot` now belongs to `to`: this session keeps the slot only to say its calls are denied. */
  markHandedOff(slot: SandboxSlot, to: string): void {
    this.ctx.slots.handTo(slot, to);
    this.ctx.append({
      type: 'sandbox_handed_off',
      name: slot.name,
      sandboxId: slot.sandboxId,
      from: this.ctx.sessionId,
      to,
    });
  }

  /** Passes a sandbox to another session for good; the receiver learns of it by signal. */
  async give(name: string, to: string): Promise<SandboxSlot> {
    const { sessionId } = this.ctx;
    if (to === sessionId) throw new HandoffError('a session cannot hand a sandbox to itself');
    const [slot] = await this.moveTo([name], to);
    try {
      await getExternalWorkflowHandle(to).signal(sandboxReceivedSignal, { from: sessionId, sandbox: handedOf(slot) });
    } catch (err) {
      if (isCancellation(err)) throw err;
      await this.undo([slot], to);
      throw new HandoffError(`session ${to} could not take sandbox ${name}: ${failureMessage(err)}`);
    }
    this.markHandedOff(slot, to);
    return slot;
  }

  /** Takes a sandbox another session passed here; a sandbox of the same name this session held is destroyed. */
  async receive(from: string, sandbox: HandedSandbox, lentBy?: string): Promise<void> {
    const { slots, sessionId } = this.ctx;
    const previous = slots.receive(sandbox, lentBy);
    this.ctx.append({
      type: 'sandbox_received',
      name: sandbox.name,
      sandboxId: sandbox.sandboxId,
      from,
      host: sandbox.host,
    });
    if (previous && previous.sandboxId !== sandbox.sandboxId && !previous.handedTo) {
      await slots
        .onHost(previous.taskQueue, 30)
        .destroySandbox({ sandboxId: previous.sandboxId, sessionId })
        .catch((err) =>
          log.warn('could not destroy the sandbox a received one replaced', { error: failureMessage(err) }),
        );
    }
  }

  /** Forgets a sandbox handed to `holder` that did not come back: the next call provisions a new one on its host. */
  forgetHeldBy(holder: string, reason: string): void {
    for (const slot of this.ctx.slots.all()) {
      if (slot.handedTo !== holder) continue;
      this.ctx.slots.markLost(slot, reason);
    }
  }

  /** Takes back, on the host, every sandbox lent to a child session that can no longer return them. */
  async reclaimFrom(holder: string): Promise<void> {
    for (const slot of this.ctx.slots.all()) {
      if (slot.handedTo !== holder) continue;
      try {
        await this.transfer(slot, holder, this.ctx.sessionId);
        this.ctx.slots.handTo(slot, undefined);
        this.ctx.append({
          type: 'sandbox_received',
          name: slot.name,
          sandboxId: slot.sandboxId,
          from: holder,
          host: slot.host,
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        this.forgetHeldBy(
          holder,
          `session ${holder} did not hand it back, and it could not be taken back: ${failureMessage(err)}`,
        );
      }
    }
  }

  /** Hands every lent sandbox back to the session that lent it (a child session, as it ends). */
  async returnLent(): Promise<HandedSandbox[]> {
    const returned: HandedSandbox[] = [];
    for (const slot of this.ctx.slots.all()) {
      if (!slot.lentBy || slot.handedTo) continue;
      try {
        await this.transfer(slot, this.ctx.sessionId, slot.lentBy);
      } catch (err) {
        this.ctx.append({
          type: 'error',
          kind: 'sandbox',
          message: `could not hand sandbox ${slot.name} back to session ${slot.lentBy}: ${failureMessage(err)}`,
        });
        continue;
      }
      this.markHandedOff(slot, slot.lentBy);
      returned.push(handedOf(slot));
    }
    return returned;
  }

  /** The handoff_sandbox tool. */
  async tool(input: unknown): Promise<ToolOutcome> {
    const parsed = HandoffSandboxInputSchema.safeParse(input ?? {});
    if (!parsed.success) return toolError(`invalid input for handoff_sandbox: ${formatIssues(parsed.error)}`);
    try {
      const slot = await this.give(parsed.data.sandbox, parsed.data.to);
      return {
        output: `sandbox ${slot.name} (${slot.sandboxId.slice(0, 12)}) now belongs to session ${parsed.data.to}; your later calls to it will be denied`,
        isError: false,
      };
    } catch (err) {
      if (err instanceof HandoffError) return toolError(err.message);
      throw err;
    }
  }

  /** The sandboxReceived signal: a gift from another session. */
  async onGift(raw: unknown): Promise<void> {
    const gift = SandboxGiftSchema.safeParse(raw);
    if (!gift.success) {
      log.warn('sandboxReceived signal rejected', { error: formatIssues(gift.error) });
      return;
    }
    // An ended session takes nothing: the sandbox's owner is then not running, and the reaper removes it.
    if (this.ctx.closed()) {
      log.warn('sandboxReceived signal ignored: session has ended', { from: gift.data.from });
      return;
    }
    await this.receive(gift.data.from, gift.data.sandbox);
  }

  /** The sandboxReceived signal and the handoffSandbox update (`agents handoff FROM SANDBOX TO`). */
  register(assertOpen: () => void): void {
    const { slots, sessionId } = this.ctx;
    setHandler(sandboxReceivedSignal, (raw) => this.onGift(raw));
    setHandler(
      handoffSandboxUpdate,
      async (raw) => {
        const req = HandoffRequestSchema.parse(raw);
        try {
          return { sandboxId: (await this.give(req.sandbox, req.to)).sandboxId };
        } catch (err) {
          if (err instanceof HandoffError) throw ApplicationFailure.nonRetryable(err.message, Failure.Handoff.Refused);
          throw err;
        }
      },
      {
        validator: (raw) => {
          const r = HandoffRequestSchema.safeParse(raw);
          if (!r.success)
            throw ApplicationFailure.nonRetryable(`invalid handoff: ${formatIssues(r.error)}`, Failure.Handoff.Invalid);
          assertOpen();
          if (r.data.to === sessionId)
            throw ApplicationFailure.nonRetryable('a session cannot hand a sandbox to itself', Failure.Handoff.Invalid);
          const held = slots.held(r.data.sandbox);
          if (held?.handedTo)
            throw ApplicationFailure.nonRetryable(
              `sandbox ${r.data.sandbox} was handed to session ${held.handedTo} already`,
              Failure.Handoff.Invalid,
            );
          if (!held && !slots.declares(r.data.sandbox))
            throw ApplicationFailure.nonRetryable(
              `this session has no sandbox named ${r.data.sandbox}`,
              Failure.Handoff.Invalid,
            );
        },
      },
    );
  }
}
