// The judge of the `auto` policy as the tool gate calls it: one judgeToolUse activity on the brain queue. A judge that
// fails past its attempts escalates the call (`indeterminate`, with the failure as the reason); it never allows.
import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import type { Agent } from '../session/agent';
import { indeterminate } from '../session/judge';
import type { SessionActivities } from './activity-options';
import type { JudgedCall } from './approvals';
import { failureMessage } from './failures';
import type { SessionRun } from './session-run';

export async function judgeCall(
  acts: Pick<SessionActivities, 'judge'>,
  agent: Agent,
  run: SessionRun,
  use: { id: string; name: string; input: unknown },
): Promise<JudgedCall> {
  const model = agent.judge?.model ?? agent.model;
  // The call's own tool_use event when this run holds it; after a handover, the log as far as it goes.
  const at = run.events.find((e) => e.type === 'tool_use' && e.id === use.id);
  try {
    const judged = await acts.judge.judgeToolUse.executeWithOptions({ summary: `judge ${use.name}` }, [
      {
        sessionId: run.sessionId,
        throughSeq: at?.seq ?? run.nextSeq() - 1,
        model,
        toolUse: { id: use.id, name: use.name, input: use.input },
        ...(agent.judge?.timeoutMs !== undefined ? { timeoutMs: agent.judge.timeoutMs } : {}),
        streamIdleMs: agent.limits.modelStreamIdleMs,
      },
    ]);
    return { ...judged, model };
  } catch (err) {
    if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
    return { ...indeterminate(`the judge failed: ${failureMessage(err)}`), model };
  }
}
