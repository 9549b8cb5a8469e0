// The deployments and deployment_runs tables. A deployment's fields are the API's shapes (initial events,
// resources), kept as JSON; a run is written once when its firing starts and finished once, by finishDeploymentRun.
import type { Queryable } from '../db';

export interface DeploymentRow {
  id: string;
  workspace_id: string;
  /** The workspace's name, which sessions carry as their AgentWorkspace search attribute. */
  workspace: string;
  pos: number;
  name: string;
  description: string | null;
  agent_id: string;
  /** null: the agent's latest version, resolved at each firing. */
  agent_version: number | null;
  environment_id: string;
  initial_events: unknown[];
  resources: unknown[];
  vault_ids: string[];
  metadata: Record<string, string>;
  budget_amount: number | null;
  budget_currency: string | null;
  schedule_expression: string | null;
  schedule_timezone: string | null;
  /** `{type: 'manual'}` or `{type: 'error', error: {type}}`; null when active. */
  paused_reason: { type: 'manual' } | { type: 'error'; error: { type: string } } | null;
  last_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

const COLUMNS =
  'id, workspace_id, workspace, pos, name, description, agent_id, agent_version, environment_id, initial_events, resources, vault_ids, metadata, budget_amount, budget_currency, schedule_expression, schedule_timezone, paused_reason, last_run_at, created_at, updated_at, archived_at';

/** What create and update write. */
export interface DeploymentFields {
  name: string;
  description: string | null;
  agentId: string;
  agentVersion: number | null;
  environmentId: string;
  initialEvents: unknown[];
  resources: unknown[];
  vaultIds: string[];
  metadata: Record<string, string>;
  budget: { amount: number; currency: string } | null;
  schedule: { expression: string; timezone: string } | null;
}

const values = (f: DeploymentFields) => [
  f.name,
  f.description,
  f.agentId,
  f.agentVersion,
  f.environmentId,
  JSON.stringify(f.initialEvents),
  JSON.stringify(f.resources),
  JSON.stringify(f.vaultIds),
  f.metadata,
  f.budget?.amount ?? null,
  f.budget?.currency ?? null,
  f.schedule?.expression ?? null,
  f.schedule?.timezone ?? null,
];

export async function insertDeployment(
  db: Queryable,
  owner: { workspaceId: string; workspace: string },
  id: string,
  f: DeploymentFields,
): Promise<void> {
  await db.query(
    `insert into deployments (id, workspace_id, workspace, name, description, agent_id, agent_version, environment_id, initial_events, resources, vault_ids, metadata, budget_amount, budget_currency, schedule_expression, schedule_timezone, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, now(), now())`,
    [id, owner.workspaceId, owner.workspace, ...values(f)],
  );
}

/** Removes a deployment whose schedule could not be created (nothing else names it yet). */
export async function removeDeploymentRow(db: Queryable, id: string): Promise<void> {
  await db.query('delete from deployments where id = $1', [id]);
}

export async function updateDeployment(db: Queryable, id: string, f: DeploymentFields): Promise<void> {
  await db.query(
    `update deployments set name = $2, description = $3, agent_id = $4, agent_version = $5, environment_id = $6, initial_events = $7, resources = $8, vault_ids = $9, metadata = $10, budget_amount = $11, budget_currency = $12, schedule_expression = $13, schedule_timezone = $14, updated_at = now() where id = $1`,
    [id, ...values(f)],
  );
}

export async function findDeployment(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<DeploymentRow | undefined> {
  const [row] = await db.query<DeploymentRow>(
    `select ${COLUMNS} from deployments where id = $1 and workspace_id = $2`,
    [id, workspaceId],
  );
  return row;
}

/** A deployment by id alone: for its firings, which carry no workspace of a request. */
export async function findDeploymentById(db: Queryable, id: string): Promise<DeploymentRow | undefined> {
  const [row] = await db.query<DeploymentRow>(`select ${COLUMNS} from deployments where id = $1`, [id]);
  return row;
}

export interface DeploymentListFilter {
  agentId: string | null;
  createdGte: string | null;
  createdLte: string | null;
  includeArchived: boolean;
  /** `active` or `paused`; null: both. */
  status: 'active' | 'paused' | null;
}

/** The workspace's deployments, newest first, before `pos` `before` (null: from the newest). */
export async function listDeployments(
  db: Queryable,
  workspaceId: string,
  f: DeploymentListFilter,
  before: number | null,
  limit: number,
): Promise<DeploymentRow[]> {
  return db.query<DeploymentRow>(
    `select ${COLUMNS} from deployments cross join lateral (select date_trunc('milliseconds', created_at) as ms) t
     where workspace_id = $1 and ($2::int is null or pos < $2) and ($3::boolean or archived_at is null)
       and ($4::text is null or agent_id = $4)
       and ($5::timestamptz is null or ms >= $5) and ($6::timestamptz is null or ms <= $6)
       and ($7::text is null or (case when $7 = 'paused' then paused_reason is not null and archived_at is null else paused_reason is null or archived_at is not null end))
     order by pos desc limit $8`,
    [workspaceId, before, f.includeArchived, f.agentId, f.createdGte, f.createdLte, f.status, limit],
  );
}

/** Sets (a reason) or clears (null) the deployment's pause. */
export async function setDeploymentPaused(
  db: Queryable,
  id: string,
  reason: DeploymentRow['paused_reason'],
): Promise<void> {
  await db.query('update deployments set paused_reason = $2, updated_at = now() where id = $1', [
    id,
    reason === null ? null : JSON.stringify(reason),
  ]);
}

/** Archives the deployment for good; its pause is cleared (an archived deployment reports `active`). */
export async function archiveDeploymentRow(db: Queryable, id: string): Promise<void> {
  await db.query(
    'update deployments set archived_at = coalesce(archived_at, now()), paused_reason = null, updated_at = now() where id = $1',
    [id],
  );
}

export interface DeploymentRunRow {
  id: string;
  workspace_id: string;
  deployment_id: string;
  pos: number;
  workflow_id: string;
  trigger_type: 'schedule' | 'manual';
  scheduled_at: Date | null;
  agent_id: string;
  agent_version: number;
  state: 'started' | 'succeeded' | 'failed';
  session_id: string | null;
  error_type: string | null;
  error_message: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const RUN_COLUMNS =
  'id, workspace_id, deployment_id, pos, workflow_id, trigger_type, scheduled_at, agent_id, agent_version, state, session_id, error_type, error_message, created_at, finished_at';

export interface NewDeploymentRun {
  id: string;
  workspaceId: string;
  deploymentId: string;
  workflowId: string;
  trigger: { type: 'manual' } | { type: 'schedule'; scheduledAt: Date };
  agentId: string;
  agentVersion: number;
}

/**
 * Records that a firing started, once: a retried start, or a second firing for the same scheduled time, finds the
 * run already recorded and returns that one.
 */
export async function startDeploymentRunRow(db: Queryable, r: NewDeploymentRun): Promise<DeploymentRunRow> {
  const scheduledAt = r.trigger.type === 'schedule' ? r.trigger.scheduledAt : null;
  await db.query(
    `insert into deployment_runs (id, workspace_id, deployment_id, workflow_id, trigger_type, scheduled_at, agent_id, agent_version, state)
     values ($1, $2, $3, $4, $5, $6, $7, $8, 'started') on conflict do nothing`,
    [r.id, r.workspaceId, r.deploymentId, r.workflowId, r.trigger.type, scheduledAt, r.agentId, r.agentVersion],
  );
  const [row] = await db.query<DeploymentRunRow>(
    `select ${RUN_COLUMNS} from deployment_runs where workflow_id = $1
       or (deployment_id = $2 and trigger_type = 'schedule' and scheduled_at = $3::timestamptz)
     order by pos limit 1`,
    [r.workflowId, r.deploymentId, scheduledAt],
  );
  return row;
}

export async function findDeploymentRun(
  db: Queryable,
  workspaceId: string,
  id: string,
): Promise<DeploymentRunRow | undefined> {
  const [row] = await db.query<DeploymentRunRow>(
    `select ${RUN_COLUMNS} from deployment_runs where id = $1 and workspace_id = $2`,
    [id, workspaceId],
  );
  return row;
}

export async function findDeploymentRunById(db: Queryable, id: string): Promise<DeploymentRunRow | undefined> {
  const [row] = await db.query<DeploymentRunRow>(`select ${RUN_COLUMNS} from deployment_runs where id = $1`, [id]);
  return row;
}

/** How a run ended: the session it created, or why none was. */
export type RunOutcome = { sessionId: string } | { error: { type: string; message: string } };

/**
 * Marks a run finished, once (a repeat leaves the first outcome), and notes a scheduled run's time on its deployment
 * (`schedule.last_run_at`). The one place a run ends. Returns the run as finished.
 */
export async function finishDeploymentRun(
  db: Queryable,
  runId: string,
  outcome: RunOutcome,
): Promise<DeploymentRunRow> {
  const ok = 'sessionId' in outcome;
  const [row] = await db.query<DeploymentRunRow>(
    `update deployment_runs set state = $2, session_id = $3, error_type = $4, error_message = $5, finished_at = now()
     where id = $1 and state = 'started' returning ${RUN_COLUMNS}`,
    [
      runId,
      ok ? 'succeeded' : 'failed',
      ok ? outcome.sessionId : null,
      ok ? null : outcome.error.type,
      ok ? null : outcome.error.message,
    ],
  );
  if (row?.trigger_type === 'schedule')
    await db.query(
      'update deployments set last_run_at = greatest(coalesce(last_run_at, $2::timestamptz), $2::timestamptz) where id = $1',
      [row.deployment_id, row.created_at],
    );
  // Webhook events deployment_run.started|succeeded|failed are emitted from here, beside the row they describe.
  return row ?? (await findDeploymentRunById(db, runId))!;
}

export interface DeploymentRunFilter {
  deploymentId: string | null;
  triggerType: 'schedule' | 'manual' | null;
  hasError: boolean | null;
  createdGt: string | null;
  createdGte: string | null;
  createdLt: string | null;
  createdLte: string | null;
}

/** The workspace's finished runs, newest first, before `pos` `before` (null: from the newest). */
export async function listDeploymentRuns(
  db: Queryable,
  workspaceId: string,
  f: DeploymentRunFilter,
  before: number | null,
  limit: number,
): Promise<DeploymentRunRow[]> {
  return db.query<DeploymentRunRow>(
    `select ${RUN_COLUMNS} from deployment_runs cross join lateral (select date_trunc('milliseconds', created_at) as ms) t
     where workspace_id = $1 and state <> 'started' and ($2::int is null or pos < $2)
       and ($3::text is null or deployment_id = $3) and ($4::text is null or trigger_type = $4)
       and ($5::boolean is null or (error_type is not null) = $5)
       and ($6::timestamptz is null or ms > $6) and ($7::timestamptz is null or ms >= $7)
       and ($8::timestamptz is null or ms < $8) and ($9::timestamptz is null or ms <= $9)
     order by pos desc limit $10`,
    [
      workspaceId,
      before,
      f.deploymentId,
      f.triggerType,
      f.hasError,
      f.createdGt,
      f.createdGte,
      f.createdLt,
      f.createdLte,
      limit,
    ],
  );
}
