// A deployment's Temporal Schedule: one per deployment (id `deployment-<deployment id>`), whose action starts
// deploymentRunWorkflow on the brain queue. The cron spec (5-field POSIX, in an IANA zone) is checked here before it
// reaches Temporal; pause, unpause and delete follow the deployment. Temporal computes the upcoming run times.
import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptionsAction,
  type ScheduleSpec,
} from '@temporalio/client';
import { z } from 'zod';
import { BRAIN_TASK_QUEUE } from '../session/queues';
import { DEPLOYMENT_RUN_WORKFLOW, type DeploymentRunInput } from '../session/deployment-contract';

/** How a deployment's firings overlap and catch up (DEPLOYMENT_OVERLAP_POLICY, DEPLOYMENT_CATCHUP_WINDOW_SECONDS). */
export interface SchedulePolicy {
  overlap: 'skip' | 'buffer_one' | 'buffer_all' | 'allow_all';
  catchupWindowSeconds: number;
}

export const DEFAULT_SCHEDULE_POLICY: SchedulePolicy = { overlap: 'buffer_all', catchupWindowSeconds: 300 };

const OVERLAP: Record<SchedulePolicy['overlap'], ScheduleOverlapPolicy> = {
  skip: ScheduleOverlapPolicy.SKIP,
  buffer_one: ScheduleOverlapPolicy.BUFFER_ONE,
  buffer_all: ScheduleOverlapPolicy.BUFFER_ALL,
  allow_all: ScheduleOverlapPolicy.ALLOW_ALL,
};

/** The policy from the configuration's two settings. */
export function schedulePolicyFrom(config: {
  DEPLOYMENT_OVERLAP_POLICY: SchedulePolicy['overlap'];
  DEPLOYMENT_CATCHUP_WINDOW_SECONDS: string;
}): SchedulePolicy {
  return {
    overlap: config.DEPLOYMENT_OVERLAP_POLICY,
    catchupWindowSeconds: Number(config.DEPLOYMENT_CATCHUP_WINDOW_SECONDS),
  };
}

export const scheduleIdOf = (deploymentId: string) => `deployment-${deploymentId}`;

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day-of-week', min: 0, max: 7 },
] as const;

/** What is wrong with one field of a cron expression, or undefined. */
function fieldProblem(value: string, f: (typeof FIELDS)[number]): string | undefined {
  for (const part of value.split(',')) {
    const m = /^(\*|(\d{1,2})(?:-(\d{1,2}))?)(?:\/(\d{1,2}))?$/.exec(part);
    if (!m)
      return `${f.name} field "${value}" is not a number, range (a-b), list (a,b), step (*/n, a-b/n) or *; L, W, #, ? and names are not supported`;
    const [, , lo, hi, step] = m;
    const nums = [lo, hi].filter((n): n is string => n !== undefined).map(Number);
    if (nums.some((n) => n < f.min || n > f.max)) return `${f.name} values are ${f.min}-${f.max}; got "${part}"`;
    if (nums.length === 2 && nums[0] > nums[1]) return `${f.name} range "${part}" runs backwards`;
    if (step !== undefined && (Number(step) < 1 || Number(step) > f.max))
      return `${f.name} step in "${part}" must be 1-${f.max}`;
  }
  return undefined;
}

/** What is wrong with a 5-field POSIX cron expression, or undefined. */
export function cronProblem(expression: string): string | undefined {
  const trimmed = expression.trim();
  if (trimmed.startsWith('@')) return 'predefined shortcuts such as @daily are not supported; write the 5 fields';
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5)
    return `a cron expression has 5 fields (minute hour day-of-month month day-of-week); got ${fields.length}`;
  for (const [i, f] of FIELDS.entries()) {
    const problem = fieldProblem(fields[i], f);
    if (problem) return problem;
  }
  return undefined;
}

/** Whether `zone` is an IANA time zone this process (and so Temporal's tz database) knows. */
export function isTimeZone(zone: string): boolean {
  if (!/^[A-Za-z0-9_+\-/]{1,64}$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const ScheduleParamsSchema = z.strictObject({
  type: z.literal('cron', { error: 'schedule.type must be cron' }),
  expression: z
    .string()
    .max(256)
    .superRefine((v, ctx) => {
      const problem = cronProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .transform((v) => v.trim().split(/\s+/).join(' ')),
  timezone: z
    .string()
    .refine(isTimeZone, { error: (i) => `${String(i.input).slice(0, 64)} is not an IANA time zone such as UTC` }),
});
export type ScheduleParams = z.infer<typeof ScheduleParamsSchema>;

/**
 * Temporal's spec for a POSIX cron: POSIX fires when either day field matches if both are restricted, while
 * Temporal's cron requires both, so such an expression becomes two, one per day field. No schedule: an empty spec,
 * which never fires by itself.
 */
export function scheduleSpecOf(schedule: { expression: string; timezone: string } | null): ScheduleSpec {
  if (!schedule) return {};
  const [min, hour, dom, month, dow] = schedule.expression.split(' ');
  const crons =
    dom !== '*' && dow !== '*'
      ? [`${min} ${hour} ${dom} ${month} *`, `${min} ${hour} * ${month} ${dow}`]
      : [schedule.expression];
  return { cronExpressions: crons, timezone: schedule.timezone };
}

export interface DeploymentScheduleState {
  id: string;
  name: string;
  workspace: string;
  schedule: { expression: string; timezone: string } | null;
  paused: boolean;
}

function actionOf(d: DeploymentScheduleState): ScheduleOptionsAction {
  const input: DeploymentRunInput = { deploymentId: d.id };
  return {
    type: 'startWorkflow',
    workflowType: DEPLOYMENT_RUN_WORKFLOW,
    // Temporal appends each firing's time to this id.
    workflowId: `${d.id}-run`,
    taskQueue: BRAIN_TASK_QUEUE,
    args: [input],
    memo: { deployment: d.id, name: d.name, workspace: d.workspace },
  };
}

const noteOf = (d: DeploymentScheduleState) =>
  d.schedule ? `deployment ${d.name}` : `deployment ${d.name}: manual runs only`;

/** Creates the deployment's Schedule. */
export async function createDeploymentSchedule(
  client: Client,
  d: DeploymentScheduleState,
  policy: SchedulePolicy,
): Promise<void> {
  await client.schedule.create({
    scheduleId: scheduleIdOf(d.id),
    spec: scheduleSpecOf(d.schedule),
    action: actionOf(d),
    policies: { overlap: OVERLAP[policy.overlap], catchupWindow: policy.catchupWindowSeconds * 1000 },
    state: { paused: d.paused, note: noteOf(d) },
    memo: { deployment: d.id, name: d.name, workspace: d.workspace },
  });
}

/** Rewrites the Schedule's spec, action, policy and pause to match the deployment. */
export async function updateDeploymentSchedule(
  client: Client,
  d: DeploymentScheduleState,
  policy: SchedulePolicy,
): Promise<void> {
  const handle = client.schedule.getHandle(scheduleIdOf(d.id));
  try {
    await handle.update((prev) => ({
      ...prev,
      spec: scheduleSpecOf(d.schedule),
      action: actionOf(d),
      policies: {
        ...prev.policies,
        overlap: OVERLAP[policy.overlap],
        catchupWindow: policy.catchupWindowSeconds * 1000,
      },
      state: { ...prev.state, paused: d.paused, note: noteOf(d) },
    }));
  } catch (e) {
    // A Schedule lost outside the API (deleted in the Web UI) is made again.
    if (!(e instanceof ScheduleNotFoundError)) throw e;
    await createDeploymentSchedule(client, d, policy);
  }
}

export async function pauseDeploymentSchedule(client: Client, id: string, note: string): Promise<void> {
  await client.schedule.getHandle(scheduleIdOf(id)).pause(note);
}

export async function unpauseDeploymentSchedule(client: Client, id: string, note: string): Promise<void> {
  await client.schedule.getHandle(scheduleIdOf(id)).unpause(note);
}

/** Deletes the Schedule for good; one already gone is fine. */
export async function deleteDeploymentSchedule(client: Client, id: string): Promise<void> {
  try {
    await client.schedule.getHandle(scheduleIdOf(id)).delete();
  } catch (e) {
    if (!(e instanceof ScheduleNotFoundError)) throw e;
  }
}

/** The next (at most 5) times the Schedule fires, as Temporal computes them; paused, what it would do unpaused. */
export async function upcomingRuns(client: Client, id: string): Promise<string[]> {
  try {
    const d = await client.schedule.getHandle(scheduleIdOf(id)).describe();
    return d.info.nextActionTimes.slice(0, 5).map((t) => t.toISOString());
  } catch (e) {
    if (e instanceof ScheduleNotFoundError) return [];
    throw e;
  }
}
