// Hand-off of hands: a session passes one of its sandboxes to another session. The container and its host
// queue stay where they are; the host's ownership registry names the new owner (activity `transferSandbox` on
// the host's queue), and from then on the host denies the old owner's calls. Both logs record the transfer.
import { ApplicationFailure, getExternalWorkflowHandle, isCancellation, log, setHandler } from '@temporalio/workflow';
import type { NewEvent } from '../session/events';
import { HandoffSandboxInputSchema } from '../tools/handoff-sandbox';
import { formatIssues } from '../session/agent';
import { failureMessage } from './failures';
import { HandoffRequestSchema, handoffSandboxUpdate, sandboxReceivedSignal, SandboxGiftSchema, type HandedSandbox, type SandboxSlot } from '../session/contract';
import { toolError, type ToolOutcome } from '../tools/kind';
import type { SandboxSlots } from './sandbox-slots';
import { Failure } from '../session/failure-types';

export interface HandoffContext {
  sessionId: string;
  append: (e: NewEvent) => unknown;
  /** The run's sandboxes; a sandbox that goes missing is remembered by host, so its replacement goes there. */
  slots: SandboxSlots;
  /** True once session_ended is in the log: nothing more may be appended. */
  closed: () => boolean;
}

/** A hand-off that cannot happen; its message is for the model or the user. */
export class HandoffError extends Error {}

export const handedOf = (slot: SandboxSlot): HandedSandbox => ({ name: slot.name, sandboxId: slot.sandboxId, taskQueue: slot.taskQueue, host: slot.host, stopped: slot.stopped });

export function createHandoff(ctx: HandoffContext) {
  const transfer = (s: HandedSandbox, from: string, to: string) =>
    ctx.slots.onHost(s.taskQueue, 30).transferSandbox({ sandboxId: s.sandboxId, name: s.name, from, to });

  /** The named sandbox, running and still this session's, ready to pass on. */
  const prepare = async (name: string): Promise<SandboxSlot> => {
    const held = ctx.slots.byName.get(name);
    if (held?.handedTo) throw new HandoffError(`sandbox ${name} was handed to session ${held.handedTo}; it is no longer this session's`);
    if (!held && !ctx.slots.declares(name)) throw new HandoffError(`this session has no sandbox named ${name}`);
    try {
      return await ctx.slots.ensure(name);
    } catch (err) {
      if (isCancellation(err)) throw err;
      throw new HandoffError(`sandbox ${name} could not be made ready: ${failureMessage(err)}`);
    }
  };

  /** Moves ownership of the named sandboxes to `to` on their hosts; undoes the moves made if one fails. */
  const moveTo = async (names: readonly string[], to: string): Promise<SandboxSlot[]> => {
    const moved: SandboxSlot[] = [];
    try {
      for (const name of names) {
        const slot = await prepare(name);
        await transfer(slot, ctx.sessionId, to);
        moved.push(slot);
      }
      return moved;
    } catch (err) {
      if (isCancellation(err)) throw err;
      await undo(moved, to);
      throw err instanceof HandoffError ? err : new HandoffError(failureMessage(err));
    }
  };

  const undo = async (slots: readonly SandboxSlot[], to: string) => {
    for (const slot of slots) await transfer(slot, to, ctx.sessionId).catch((e) => log.warn('could not take a sandbox back', { error: failureMessage(e) }));
  };

  /** Records that `slot` now belongs to `to`: this session keeps the slot only to say its calls are denied. */
  const markHandedOff = (slot: SandboxSlot, to: string) => {
    slot.handedTo = to;
    ctx.append({ type: 'sandbox_handed_off', name: slot.name, sandboxId: slot.sandboxId, from: ctx.sessionId, to });
  };

  /** Passes a sandbox to another session for good; the receiver learns of it by signal. */
  const give = async (name: string, to: string): Promise<SandboxSlot> => {
    if (to === ctx.sessionId) throw new HandoffError('a session cannot hand a sandbox to itself');
    const [slot] = await moveTo([name], to);
    try {
      await getExternalWorkflowHandle(to).signal(sandboxReceivedSignal, { from: ctx.sessionId, sandbox: handedOf(slot) });
    } catch (err) {
      if (isCancellation(err)) throw err;
      await undo([slot], to);
      throw new HandoffError(`session ${to} could not take sandbox ${name}: ${failureMessage(err)}`);
    }
    markHandedOff(slot, to);
    return slot;
  };

  /** Takes a sandbox another session passed here; a sandbox of the same name this session held is destroyed. */
  const receive = async (from: string, sandbox: HandedSandbox, lentBy?: string): Promise<void> => {
    const previous = ctx.slots.byName.get(sandbox.name);
    ctx.slots.byName.set(sandbox.name, { ...sandbox, lastUsed: Date.now(), ...(lentBy ? { lentBy } : {}) });
    ctx.append({ type: 'sandbox_received', name: sandbox.name, sandboxId: sandbox.sandboxId, from, host: sandbox.host });
    if (previous && previous.sandboxId !== sandbox.sandboxId && !previous.handedTo) {
      await ctx.slots.onHost(previous.taskQueue, 30)
        .destroySandbox({ sandboxId: previous.sandboxId, sessionId: ctx.sessionId })
        .catch((err) => log.warn('could not destroy the sandbox a received one replaced', { error: failureMessage(err) }));
    }
  };

  /** Forgets a sandbox handed to `holder` that did not come back: the next call provisions a new one on its host. */
  const forgetHeldBy = (holder: string, reason: string) => {
    for (const slot of [...ctx.slots.byName.values()]) {
      if (slot.handedTo !== holder) continue;
      ctx.slots.byName.delete(slot.name);
      ctx.slots.lastHost.set(slot.name, slot.taskQueue);
      ctx.append({ type: 'sandbox_lost', name: slot.name, sandboxId: slot.sandboxId, reason });
    }
  };

  /** Takes back, on the host, every sandbox lent to a child session that can no longer return them. */
  const reclaimFrom = async (holder: string): Promise<void> => {
    for (const slot of [...ctx.slots.byName.values()]) {
      if (slot.handedTo !== holder) continue;
      try {
        await transfer(slot, holder, ctx.sessionId);
        slot.handedTo = undefined;
        ctx.append({ type: 'sandbox_received', name: slot.name, sandboxId: slot.sandboxId, from: holder, host: slot.host });
      } catch (err) {
        if (isCancellation(err)) throw err;
        forgetHeldBy(holder, `session ${holder} did not hand it back, and it could not be taken back: ${failureMessage(err)}`);
      }
    }
  };

  /** Hands every lent sandbox back to the session that lent it (a child session, as it ends). */
  const returnLent = async (): Promise<HandedSandbox[]> => {
    const returned: HandedSandbox[] = [];
    for (const slot of [...ctx.slots.byName.values()]) {
      if (!slot.lentBy || slot.handedTo) continue;
      try {
        await transfer(slot, ctx.sessionId, slot.lentBy);
      } catch (err) {
        ctx.append({ type: 'error', kind: 'sandbox', message: `could not hand sandbox ${slot.name} back to session ${slot.lentBy}: ${failureMessage(err)}` });
        continue;
      }
      markHandedOff(slot, slot.lentBy);
      returned.push(handedOf(slot));
    }
    return returned;
  };

  /** The handoff_sandbox tool. */
  const tool = async (input: unknown): Promise<ToolOutcome> => {
    const parsed = HandoffSandboxInputSchema.safeParse(input ?? {});
    if (!parsed.success) return toolError(`invalid input for handoff_sandbox: ${formatIssues(parsed.error)}`);
    try {
      const slot = await give(parsed.data.sandbox, parsed.data.to);
      return { output: `sandbox ${slot.name} (${slot.sandboxId.slice(0, 12)}) now belongs to session ${parsed.data.to}; your later calls to it will be denied`, isError: false };
    } catch (err) {
      if (err instanceof HandoffError) return toolError(err.message);
      throw err;
    }
  };

  /** The sandboxReceived signal: a gift from another session. */
  const onGift = async (raw: unknown): Promise<void> => {
    const gift = SandboxGiftSchema.safeParse(raw);
    if (!gift.success) {
      log.warn('sandboxReceived signal rejected', { error: formatIssues(gift.error) });
      return;
    }
    // An ended session takes nothing: the sandbox's owner is then not running, and the reaper removes it.
    if (ctx.closed()) {
      log.warn('sandboxReceived signal ignored: session has ended', { from: gift.data.from });
      return;
    }
    await receive(gift.data.from, gift.data.sandbox);
  };

  /** The sandboxReceived signal and the handoffSandbox update (`agents handoff FROM SANDBOX TO`). */
  const register = (assertOpen: () => void) => {
    setHandler(sandboxReceivedSignal, onGift);
    setHandler(
      handoffSandboxUpdate,
      async (raw) => {
        const req = HandoffRequestSchema.parse(raw);
        try {
          return { sandboxId: (await give(req.sandbox, req.to)).sandboxId };
        } catch (err) {
          if (err instanceof HandoffError) throw ApplicationFailure.nonRetryable(err.message, Failure.Handoff.Refused);
          throw err;
        }
      },
      {
        validator: (raw) => {
          const r = HandoffRequestSchema.safeParse(raw);
          if (!r.success) throw ApplicationFailure.nonRetryable(`invalid handoff: ${formatIssues(r.error)}`, Failure.Handoff.Invalid);
          assertOpen();
          if (r.data.to === ctx.sessionId) throw ApplicationFailure.nonRetryable('a session cannot hand a sandbox to itself', Failure.Handoff.Invalid);
          const held = ctx.slots.byName.get(r.data.sandbox);
          if (held?.handedTo) throw ApplicationFailure.nonRetryable(`sandbox ${r.data.sandbox} was handed to session ${held.handedTo} already`, Failure.Handoff.Invalid);
          if (!held && !ctx.slots.declares(r.data.sandbox)) throw ApplicationFailure.nonRetryable(`this session has no sandbox named ${r.data.sandbox}`, Failure.Handoff.Invalid);
        },
      },
    );
  };

  return { register, moveTo, undo, markHandedOff, give, receive, forgetHeldBy, reclaimFrom, returnLent, tool, onGift };
}

export type Handoff = ReturnType<typeof createHandoff>;
