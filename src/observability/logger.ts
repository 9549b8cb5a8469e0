// Worker logs as one JSON object per line on stderr: the SDK's, the workflow's (`log` from @temporalio/workflow)
// and the activities', each with the session id, seq, activity and attempt where they apply.
import type {
  ActivityExecuteInput,
  ActivityInterceptorsFactory,
  LogEntry,
  Next,
  ActivityInboundCallsInterceptor,
} from '@temporalio/worker';
import { WORKFLOW_TYPE } from '../session/queues';

/** SDK attributes that only add noise to a line (the task token is an opaque blob). */
const DROPPED = new Set(['taskToken', 'sdkComponent', 'isLocal']);

function plain(value: unknown): unknown {
  if (value instanceof Error)
    return {
      name: value.name,
      message: value.message.split('\n')[0],
      ...(value.cause instanceof Error ? { cause: value.cause.message.split('\n')[0] } : {}),
    };
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** The JSON line for one SDK log entry: `time`, `level`, `msg`, then `sessionId`, `activity`, `attempt`, `seq`, .... */
export function jsonLogLine(entry: LogEntry): string {
  const meta = (entry.meta ?? {}) as Record<string, unknown>;
  const line: Record<string, unknown> = {
    time: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
    level: entry.level,
    msg: entry.message,
  };
  if (meta.sdkComponent !== undefined) line.component = meta.sdkComponent;
  if (meta.workflowType === WORKFLOW_TYPE && typeof meta.workflowId === 'string') line.sessionId = meta.workflowId;
  if (meta.activityType !== undefined) line.activity = meta.activityType;
  for (const [k, v] of Object.entries(meta)) {
    if (DROPPED.has(k) || k in line || k === 'activityType') continue;
    line[k] = plain(v);
  }
  return JSON.stringify(line, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/** The log position an activity works at, from its input: the seq the model reads through, or the tool_use id. */
function positionOf(args: unknown[]): Record<string, unknown> {
  const input = args[0];
  if (!input || typeof input !== 'object') return {};
  const i = input as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  if (typeof i.throughSeq === 'number') out.seq = i.throughSeq;
  if (typeof i.fromSeq === 'number') out.fromSeq = i.fromSeq;
  if (typeof i.toolUseId === 'string') out.toolUseId = i.toolUseId;
  if (typeof i.sessionId === 'string') out.sessionId = i.sessionId;
  return out;
}

/**
 * Adds the activity's log position to every line it logs, and logs each activity's start and end at INFO
 * (the SDK logs them at DEBUG, and a failure at WARN).
 */
export const activityLogInterceptor: ActivityInterceptorsFactory = (ctx) => {
  let position: Record<string, unknown> = {};
  const inbound: ActivityInboundCallsInterceptor = {
    async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>) {
      position = positionOf(input.args);
      const started = Date.now();
      ctx.log.info('activity started');
      const result = await next(input);
      ctx.log.info('activity completed', { durationMs: Date.now() - started });
      return result;
    },
  };
  return { inbound, outbound: { getLogAttributes: (attrs, next) => next({ ...attrs, ...position }) } };
};
