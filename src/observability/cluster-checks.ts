// What `agents doctor` reads from a Temporal cluster about the namespace the platform runs in: the session search
// attributes, the retention of closed runs, and the server settings the platform relies on, as far as a client can
// observe them.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { SESSION_SEARCH_ATTRIBUTES } from '../session/search-attributes';

export interface ClusterCheck {
  name: 'search-attributes' | 'retention' | 'dynamic-config';
  ok: boolean;
  detail: string;
  fix?: string;
}

/**
 * Closed runs must stay this long. A run that failed or was terminated keeps the events it had not sealed yet only
 * in its history: `agents wake` reads them by replaying the run, so past retention they are gone. The API's session
 * status and usage, `agents status` and the Web UI read closed runs too. The dev server keeps 24 h.
 */
export const MIN_RETENTION_HOURS = 24;

const TIMEOUT_MS = 5_000;
const KEYWORD = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
const firstLine = (e: unknown) => String((e as Error)?.message ?? e).split('\n')[0];

function typeName(t: temporal.api.enums.v1.IndexedValueType | null | undefined): string {
  const name = temporal.api.enums.v1.IndexedValueType[t ?? 0] ?? String(t);
  return name.replace('INDEXED_VALUE_TYPE_', '').toLowerCase();
}

/** Every session search attribute registered on the namespace as a Keyword. */
export async function checkSearchAttributes(connection: Connection, namespace: string): Promise<ClusterCheck> {
  const listed = await connection.withDeadline(Date.now() + TIMEOUT_MS, () =>
    connection.operatorService.listSearchAttributes({ namespace }),
  );
  const custom = listed.customAttributes ?? {};
  const missing = SESSION_SEARCH_ATTRIBUTES.filter((k) => !(k.name in custom)).map((k) => k.name);
  const wrong = SESSION_SEARCH_ATTRIBUTES.filter((k) => k.name in custom && custom[k.name] !== KEYWORD).map(
    (k) => `${k.name} is ${typeName(custom[k.name])}`,
  );
  const names = SESSION_SEARCH_ATTRIBUTES.map((k) => k.name).join(', ');
  if (missing.length === 0 && wrong.length === 0)
    return { name: 'search-attributes', ok: true, detail: `${names} registered as Keyword on ${namespace}` };
  const problems = [
    ...(missing.length > 0 ? [`${missing.join(', ')} not registered on namespace ${namespace}`] : []),
    ...(wrong.length > 0 ? [`${wrong.join(', ')}, not Keyword`] : []),
  ];
  // One command per attribute: given several names and one type, the CLI registers only the first.
  const create = missing
    .map((n) => `\`temporal operator search-attribute create --namespace ${namespace} --name ${n} --type Keyword\``)
    .join(', ');
  const fixes = [
    ...(missing.length > 0
      ? [
          `${create} (Temporal Cloud: \`tcld namespace search-attributes add\`); a brain worker adds them itself at start where the server lets it`,
        ]
      : []),
    ...(wrong.length > 0
      ? ['remove each one of another type (`temporal operator search-attribute remove`) and create it as Keyword']
      : []),
  ];
  return {
    name: 'search-attributes',
    ok: false,
    detail: `${problems.join('; ')}: sessions upsert them, and their workflow tasks fail until they exist`,
    fix: fixes.join('; '),
  };
}

/** The namespace keeps closed runs at least {@link MIN_RETENTION_HOURS}. */
export async function checkRetention(connection: Connection, namespace: string): Promise<ClusterCheck> {
  const ns = await connection.withDeadline(Date.now() + TIMEOUT_MS, () =>
    connection.workflowService.describeNamespace({ namespace }),
  );
  const ttl = ns.config?.workflowExecutionRetentionTtl;
  const hours = (Number(ttl?.seconds ?? 0) + (ttl?.nanos ?? 0) / 1e9) / 3600;
  const shown = hours >= 48 && Number.isInteger(hours / 24) ? `${hours / 24} days` : `${+hours.toFixed(2)} h`;
  if (hours >= MIN_RETENTION_HOURS)
    return {
      name: 'retention',
      ok: true,
      detail: `${namespace} keeps closed runs ${shown} (at least ${MIN_RETENTION_HOURS} h needed)`,
    };
  return {
    name: 'retention',
    ok: false,
    detail:
      `${namespace} keeps closed runs ${shown}; the platform needs at least ${MIN_RETENTION_HOURS} h: a failed or terminated ` +
      'run holds its unsealed events only in its history (`agents wake` replays it to recover them), and session status and usage read closed runs',
    fix: `\`temporal operator namespace update --namespace ${namespace} --retention 72h\` (Temporal Cloud: the namespace's retention setting)`,
  };
}

/**
 * Whether the server hands an activity back with the workflow task that scheduled it on the same queue, seen the
 * only way a client can: a throwaway workflow on a queue of its own whose one workflow task asks for an eager
 * activity; the answer carries the activity task or not. The workflow is terminated and deleted at once.
 */
export async function probeEagerActivities(connection: Connection, namespace: string): Promise<boolean> {
  const ws = connection.workflowService;
  const id = `agents-doctor-probe-${randomUUID()}`;
  const taskQueue = { name: id, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL };
  const identity = `agents-doctor@${os.hostname()}`;
  const within = <T>(fn: () => Promise<T>) => connection.withDeadline(Date.now() + 15_000, fn);
  const started = await within(() =>
    ws.startWorkflowExecution({
      namespace,
      workflowId: id,
      workflowType: { name: 'agents-doctor-probe' },
      taskQueue,
      workflowExecutionTimeout: msToTs('60s'),
      identity,
      requestId: id,
    }),
  );
  try {
    const task = await within(() => ws.pollWorkflowTaskQueue({ namespace, taskQueue, identity }));
    if (!task.taskToken?.length) throw new Error('the probe workflow task did not arrive');
    const done = await within(() =>
      ws.respondWorkflowTaskCompleted({
        namespace,
        taskToken: task.taskToken,
        identity,
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            scheduleActivityTaskCommandAttributes: {
              activityId: 'probe',
              activityType: { name: 'agents-doctor-probe' },
              taskQueue,
              startToCloseTimeout: msToTs('10s'),
              scheduleToCloseTimeout: msToTs('10s'),
              requestEagerExecution: true,
            },
          },
        ],
      }),
    );
    return (done.activityTasks ?? []).length > 0;
  } finally {
    const workflowExecution = { workflowId: id, runId: started.runId };
    await within(() =>
      ws.terminateWorkflowExecution({ namespace, workflowExecution, reason: 'agents doctor probe', identity }),
    ).catch(() => undefined);
    await within(() => ws.deleteWorkflowExecution({ namespace, workflowExecution })).catch(() => undefined);
  }
}

/**
 * What the platform relies on from the server's dynamic config, where a client can see it: updates (every user
 * message is one) from the namespace's capabilities, and eager activity execution by a probe. The timer queue's
 * time shift (`history.timerProcessorMaxTimeShift`, 10 ms in deploy/temporal-dynamicconfig.yaml) shows in no API.
 */
export async function checkDynamicConfig(connection: Connection, namespace: string): Promise<ClusterCheck> {
  const ns = await connection.withDeadline(Date.now() + TIMEOUT_MS, () =>
    connection.workflowService.describeNamespace({ namespace }),
  );
  const problems: string[] = [];
  const fixes: string[] = [];
  const caps = ns.namespaceInfo?.capabilities;
  if (caps && !caps.syncUpdate) {
    problems.push('workflow updates are off: each user message, interrupt and session update is one');
    fixes.push('set `frontend.enableUpdateWorkflowExecution: true` in the dynamic config (the default)');
  }
  let eager: boolean | undefined;
  try {
    eager = await probeEagerActivities(connection, namespace);
  } catch (e) {
    problems.push(`could not probe eager activity execution: ${firstLine(e)}`);
    fixes.push('let doctor start, terminate and delete a workflow in the namespace, or check the setting by hand');
  }
  if (eager === false) {
    problems.push(
      'eager activity execution is off: each model call waits for a dispatch through matching after the workflow task that scheduled it',
    );
    fixes.push(
      'set `system.enableActivityEagerExecution: true` in the dynamic config (the default from server 1.32; see deploy/temporal-dynamicconfig.yaml)',
    );
  }
  const unread = 'history.timerProcessorMaxTimeShift (10ms recommended) cannot be read by a client';
  if (problems.length === 0)
    return {
      name: 'dynamic-config',
      ok: true,
      detail: `updates on${caps ? '' : ' (no capabilities reported)'}, eager activity execution on; ${unread}`,
    };
  return { name: 'dynamic-config', ok: false, detail: `${problems.join('; ')}; ${unread}`, fix: fixes.join('; ') };
}
