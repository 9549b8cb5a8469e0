// Temporal's own floor for a platform turn: a workflow that runs, per turn, the same sequence of activities as a
// session turn (on the same kinds of task queue, with the same timeouts), each with an empty body, and nothing else.
// Bundled on its own by bench/floor.ts; the platform's workflows never import it.
import { condition, defineSignal, defineUpdate, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';

/** One turn; returns the workflow time (the start of the turn's last workflow task) when the turn ended. */
export const floorTurnUpdate = defineUpdate<number, [string]>('floorTurn');
export const floorEndSignal = defineSignal('floorEnd');

export interface FloorInput {
  /** The queue of each activity of a turn, in order: `brain` is the workflow's own queue (eager), `host` the hands host's. */
  shape: ('brain' | 'host')[];
  hostQueue: string;
  /** A session's limits: the model call's heartbeat timeout, a hands call's heartbeat and schedule-to-start timeouts. */
  brainHeartbeatMs: number;
  hostHeartbeatMs: number;
  hostScheduleToStartMs: number;
  /**
   * Each `brain` activity makes the model call a platform turn makes (the same request, through the same client, to
   * the same model server) instead of nothing: the floor of a platform that did nothing but call the model.
   */
  modelCall?: boolean;
  /**
   * How long each activity of a turn waits, in the order of `shape` (absent: no wait). A turn that lasts as long as
   * the platform's meets the server's work for the run that comes due meanwhile (timeouts of earlier tasks firing),
   * which a turn of empty bodies, over in a few milliseconds, does not.
   */
  waitMs?: number[];
}

export interface FloorActivities {
  /** Nothing; with `waitMs`, waits that long first. */
  noop(waitMs?: number): Promise<void>;
  /** One model call for session `sessionId`, whose conversation the worker keeps, with `text` as the user's turn. */
  model(sessionId: string, text: string): Promise<void>;
}

export async function floorWorkflow(input: FloorInput): Promise<void> {
  const brain = proxyActivities<FloorActivities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: input.brainHeartbeatMs,
  });
  const host = proxyActivities<FloorActivities>({
    taskQueue: input.hostQueue,
    scheduleToStartTimeout: input.hostScheduleToStartMs,
    startToCloseTimeout: '6 minutes',
    heartbeatTimeout: input.hostHeartbeatMs,
  });
  let ended = false;
  setHandler(floorEndSignal, () => {
    ended = true;
  });
  setHandler(floorTurnUpdate, async (text) => {
    for (const [i, queue] of input.shape.entries())
      if (queue === 'brain' && input.modelCall) await brain.model(workflowInfo().workflowId, text);
      else if (input.waitMs) await (queue === 'brain' ? brain : host).noop(input.waitMs[i]);
      else await (queue === 'brain' ? brain : host).noop();
    return Date.now();
  });
  await condition(() => ended);
}
