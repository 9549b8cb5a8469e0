// /v1/deployments: an agent bound to an environment, initial events, resources, vaults, metadata and a budget, each
// firing of which creates a session (src/api/deployment-activities.ts). Every deployment has a Temporal Schedule
// (deployment-schedules.ts) whose spec is its cron schedule, or none for a manual-only one; pause and unpause are
// the Schedule's, archive deletes it. `run` starts the same firing workflow at once and answers with the finished run.
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import {
  IdSchema,
  MetadataPatchSchema,
  MetadataSchema,
  PageQuerySchema,
  TimeQuerySchema,
  applyMetadataPatch,
  booleanQuery,
  cursorPos,
  filterDigest,
  iso,
  isoOrNull,
  newId,
  pageSchema,
  toPage,
} from './shared-fields';
import type { ApiApp, ApiDeps } from './route-context';
import { ApiError, badRequest, notFound } from './api-error';
import { getAgent } from './agents';
import { BudgetLimitSchema, BudgetResponseSchema, budgetOfMoney, moneyOf } from './sessions/session-budget';
import { ResourcesSchema } from './sessions/resources';
import {
  AgentRefSchema,
  SessionVaultIdsSchema,
  UserMessageSchema,
  planSession,
  type SessionOwner,
} from './sessions/session-create';
import {
  DEFAULT_SCHEDULE_POLICY,
  ScheduleParamsSchema,
  createDeploymentSchedule,
  deleteDeploymentSchedule,
  pauseDeploymentSchedule,
  unpauseDeploymentSchedule,
  upcomingRuns,
  updateDeploymentSchedule,
  type DeploymentScheduleState,
} from './deployment-schedules';
import { DeploymentRunSchema, deploymentRunRoutes, runOf } from './deployment-runs';
import { DEPLOYMENT_RUN_WORKFLOW, type DeploymentRunInput } from '../session/deployment-contract';
import { BRAIN_TASK_QUEUE } from '../session/queues';
import type { Money } from '../session/list-cost';
import {
  archiveDeploymentRow,
  findDeployment,
  findDeploymentRun,
  insertDeployment,
  listDeployments,
  removeDeploymentRow,
  setDeploymentPaused,
  updateDeployment,
  type DeploymentFields,
  type DeploymentRow,
} from '../storage/repos/deployments-repo';

/** How long `run` waits for its firing to create the session before answering 503 (the run carries on). */
const RUN_WAIT_MS = 60_000;

/**
 * An initial event as `events.send` validates it: `user.message` with text blocks. The other two kinds the SDK
 * types are refused by name: a session's log takes neither yet.
 */
const InitialEventSchema = z.discriminatedUnion('type', [
  UserMessageSchema,
  z
    .looseObject({ type: z.literal('user.define_outcome') })
    .refine(
      () => false,
      'user.define_outcome is not supported yet: outcomes are not evaluated here; send user.message',
    ),
  z
    .looseObject({ type: z.literal('system.message') })
    .refine(() => false, "system.message is not supported yet: put standing instructions in the agent's system prompt"),
]);
const InitialEventsSchema = z
  .array(InitialEventSchema)
  .min(1, 'initial_events must hold at least 1 event')
  .max(50, 'initial_events holds at most 50 events');

/** A repository token is write-only per session: a deployment cannot hold one yet. */
const DeploymentResourcesSchema = ResourcesSchema.superRefine((rs, ctx) => {
  rs.forEach((r, i) => {
    if (r.type === 'github_repository' && r.authorization_token !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: [i, 'authorization_token'],
        message:
          "a deployment's repository cannot carry authorization_token yet; use a public repository, or create the session with sessions.create",
      });
  });
});

const DeploymentCreateSchema = z.strictObject({
  agent: AgentRefSchema,
  environment_id: IdSchema,
  initial_events: InitialEventsSchema,
  name: z.string().trim().min(1, 'name must not be empty').max(256),
  budget: BudgetLimitSchema.nullish(),
  description: z.string().max(2048).nullish(),
  metadata: MetadataSchema.optional(),
  resources: DeploymentResourcesSchema.optional(),
  schedule: ScheduleParamsSchema.nullish(),
  vault_ids: SessionVaultIdsSchema.optional(),
});

const DeploymentUpdateSchema = z.strictObject({
  agent: AgentRefSchema.optional(),
  budget: BudgetLimitSchema.nullish(),
  description: z.string().max(2048).nullish(),
  environment_id: IdSchema.optional(),
  initial_events: InitialEventsSchema.optional(),
  metadata: MetadataPatchSchema.nullish(),
  name: z.string().trim().min(1, 'name must not be empty').max(256).optional(),
  resources: DeploymentResourcesSchema.nullish(),
  schedule: ScheduleParamsSchema.nullish(),
  vault_ids: SessionVaultIdsSchema.nullish(),
});

const PausedReasonSchema = z.union([
  z.object({ type: z.literal('manual') }),
  z.object({ type: z.literal('error'), error: z.object({ type: z.string() }) }),
]);

const ResourceConfigSchema = z.union([
  z.object({
    type: z.literal('github_repository'),
    url: z.string(),
    checkout: z.unknown().optional(),
    mount_path: z.string().nullable().optional(),
  }),
  z.object({ type: z.literal('file'), file_id: z.string(), mount_path: z.string().nullable().optional() }),
  z.object({
    type: z.literal('memory_store'),
    memory_store_id: z.string(),
    access: z.enum(['read_write', 'read_only']).nullable().optional(),
    instructions: z.string().nullable().optional(),
  }),
]);

export const DeploymentSchema = z
  .object({
    id: z.string(),
    type: z.literal('deployment'),
    agent: z.object({ id: z.string(), type: z.literal('agent'), version: z.number() }),
    name: z.string(),
    description: z.string().nullable(),
    environment_id: z.string(),
    initial_events: z.array(z.object({ type: z.literal('user.message'), content: z.array(z.unknown()) })),
    metadata: z.record(z.string(), z.string()),
    resources: z.array(ResourceConfigSchema),
    vault_ids: z.array(z.string()),
    schedule: z
      .object({
        type: z.literal('cron'),
        expression: z.string(),
        timezone: z.string(),
        last_run_at: z.string().nullable(),
        upcoming_runs_at: z.array(z.string()),
      })
      .nullable(),
    status: z.enum(['active', 'paused']),
    paused_reason: PausedReasonSchema.nullable(),
    budget: BudgetResponseSchema.nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'Deployment' });
export type ApiDeployment = z.infer<typeof DeploymentSchema>;

const DeploymentPath = z.object({ deployment_id: IdSchema });

const DeploymentListQuerySchema = PageQuerySchema.extend({
  agent_id: IdSchema.optional(),
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
  include_archived: booleanQuery.optional(),
  status: z.enum(['active', 'paused'], { error: 'status must be active or paused' }).optional(),
});

/** The response's resources: the stored params minus the write-only token (which a deployment never holds). */
function resourceConfigsOf(resources: unknown[]): z.infer<typeof ResourceConfigSchema>[] {
  return resources.map((r) => {
    const { authorization_token: _t, ...rest } = r as Record<string, unknown>;
    return rest as z.infer<typeof ResourceConfigSchema>;
  });
}

/** The agent version the next firing uses: the pinned one, or the agent's latest now. */
async function agentVersionOf(deps: ApiDeps, d: DeploymentRow): Promise<number> {
  if (d.agent_version !== null) return d.agent_version;
  return (await getAgent(deps.db, d.workspace_id, d.agent_id)).version;
}

export async function toDeployment(deps: ApiDeps, client: Client, d: DeploymentRow): Promise<ApiDeployment> {
  const schedule =
    d.schedule_expression !== null && d.schedule_timezone !== null
      ? {
          type: 'cron' as const,
          expression: d.schedule_expression,
          timezone: d.schedule_timezone,
          last_run_at: isoOrNull(d.last_run_at),
          upcoming_runs_at: d.archived_at ? [] : await upcomingRuns(client, d.id),
        }
      : null;
  const paused = d.paused_reason !== null && d.archived_at === null;
  return {
    id: d.id,
    type: 'deployment',
    agent: { id: d.agent_id, type: 'agent', version: await agentVersionOf(deps, d) },
    name: d.name,
    description: d.description,
    environment_id: d.environment_id,
    initial_events: d.initial_events as ApiDeployment['initial_events'],
    metadata: d.metadata,
    resources: resourceConfigsOf(d.resources),
    vault_ids: d.vault_ids,
    schedule,
    status: paused ? 'paused' : 'active',
    paused_reason: paused ? d.paused_reason : null,
    budget:
      d.budget_amount !== null && d.budget_currency !== null
        ? budgetOfMoney({ amount: d.budget_amount, currency: d.budget_currency as Money['currency'] })
        : null,
    created_at: iso(d.created_at),
    updated_at: iso(d.updated_at),
    archived_at: isoOrNull(d.archived_at),
  };
}

export async function deploymentRow(deps: ApiDeps, workspaceId: string, id: string): Promise<DeploymentRow> {
  const row = await findDeployment(deps.db, workspaceId, id);
  if (!row) throw notFound('deployment', id);
  return row;
}

const scheduleStateOf = (d: DeploymentRow, f?: DeploymentFields): DeploymentScheduleState => ({
  id: d.id,
  name: f?.name ?? d.name,
  workspace: d.workspace,
  schedule:
    f !== undefined
      ? f.schedule
      : d.schedule_expression !== null && d.schedule_timezone !== null
        ? { expression: d.schedule_expression, timezone: d.schedule_timezone }
        : null,
  paused: d.paused_reason !== null,
});

/**
 * Every check a firing of `f` will meet, made now, so a deployment that could never create a session is a 400
 * naming why: the agent (not archived), environment, vaults, resources, and a budget's priced models.
 */
async function checkFields(deps: ApiDeps, owner: SessionOwner, f: DeploymentFields): Promise<void> {
  await planSession(deps, owner, {
    agent: { type: 'agent', id: f.agentId, ...(f.agentVersion !== null ? { version: f.agentVersion } : {}) },
    environment_id: f.environmentId,
    vault_ids: f.vaultIds,
    metadata: f.metadata,
    resources: f.resources as never,
    ...(f.budget
      ? { budget: { type: 'limit', max_list_cost: { amount: String(f.budget.amount), currency: f.budget.currency } } }
      : {}),
  });
}

const fieldsOfRow = (d: DeploymentRow): DeploymentFields => ({
  name: d.name,
  description: d.description,
  agentId: d.agent_id,
  agentVersion: d.agent_version,
  environmentId: d.environment_id,
  initialEvents: d.initial_events,
  resources: d.resources,
  vaultIds: d.vault_ids,
  metadata: d.metadata,
  budget:
    d.budget_amount !== null && d.budget_currency !== null
      ? { amount: d.budget_amount, currency: d.budget_currency }
      : null,
  schedule:
    d.schedule_expression !== null && d.schedule_timezone !== null
      ? { expression: d.schedule_expression, timezone: d.schedule_timezone }
      : null,
});

const agentOf = (a: z.infer<typeof AgentRefSchema>) =>
  typeof a === 'string' ? { agentId: a, agentVersion: null } : { agentId: a.id, agentVersion: a.version ?? null };

const archivedRefusal = (id: string) => badRequest(`deployment ${id} is archived and read-only`);

export function deploymentRoutes(app: ApiApp, deps: ApiDeps, client: Client): void {
  const { db } = deps;
  const policy = deps.deploymentSchedules ?? DEFAULT_SCHEDULE_POLICY;
  const show = async (workspaceId: string, id: string) =>
    toDeployment(deps, client, await deploymentRow(deps, workspaceId, id));

  app.post(
    '/v1/deployments',
    { schema: { operationId: 'createDeployment', body: DeploymentCreateSchema, response: { 200: DeploymentSchema } } },
    async (req) => {
      const p = req.body;
      const f: DeploymentFields = {
        name: p.name,
        description: p.description ?? null,
        ...agentOf(p.agent),
        environmentId: p.environment_id,
        initialEvents: p.initial_events,
        resources: p.resources ?? [],
        vaultIds: p.vault_ids ?? [],
        metadata: p.metadata ?? {},
        budget: p.budget ? moneyOf(p.budget) : null,
        schedule: p.schedule ? { expression: p.schedule.expression, timezone: p.schedule.timezone } : null,
      };
      await checkFields(deps, req, f);
      const id = newId('depl');
      await insertDeployment(db, req, id, f);
      try {
        await createDeploymentSchedule(
          client,
          { id, name: f.name, workspace: req.workspace, schedule: f.schedule, paused: false },
          policy,
        );
      } catch (e) {
        await removeDeploymentRow(db, id);
        throw e;
      }
      return show(req.workspaceId, id);
    },
  );

  app.get(
    '/v1/deployments/:deployment_id',
    { schema: { operationId: 'retrieveDeployment', params: DeploymentPath, response: { 200: DeploymentSchema } } },
    async (req) => show(req.workspaceId, req.params.deployment_id),
  );

  app.post(
    '/v1/deployments/:deployment_id',
    {
      schema: {
        operationId: 'updateDeployment',
        params: DeploymentPath,
        body: DeploymentUpdateSchema,
        response: { 200: DeploymentSchema },
      },
    },
    async (req) => {
      const d = await deploymentRow(deps, req.workspaceId, req.params.deployment_id);
      if (d.archived_at) throw archivedRefusal(d.id);
      const p = req.body;
      const now = fieldsOfRow(d);
      const f: DeploymentFields = {
        name: p.name ?? now.name,
        description: p.description === undefined ? now.description : p.description || null,
        ...(p.agent !== undefined ? agentOf(p.agent) : { agentId: now.agentId, agentVersion: now.agentVersion }),
        environmentId: p.environment_id ?? now.environmentId,
        initialEvents: p.initial_events ?? now.initialEvents,
        resources: p.resources === undefined ? now.resources : (p.resources ?? []),
        vaultIds: p.vault_ids === undefined ? now.vaultIds : (p.vault_ids ?? []),
        metadata: applyMetadataPatch(now.metadata, p.metadata),
        budget: p.budget === undefined ? now.budget : p.budget === null ? null : moneyOf(p.budget),
        schedule:
          p.schedule === undefined
            ? now.schedule
            : p.schedule === null
              ? null
              : { expression: p.schedule.expression, timezone: p.schedule.timezone },
      };
      await checkFields(deps, req, f);
      // The Schedule first: a spec Temporal refuses changes nothing here.
      await updateDeploymentSchedule(client, scheduleStateOf(d, f), policy);
      await updateDeployment(db, d.id, f);
      return show(req.workspaceId, d.id);
    },
  );

  app.get(
    '/v1/deployments',
    {
      schema: {
        operationId: 'listDeployments',
        querystring: DeploymentListQuerySchema,
        response: { 200: pageSchema(DeploymentSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      if (q.status !== undefined && q.include_archived)
        throw badRequest('status and include_archived cannot be combined: archived deployments report no status');
      const filters = filterDigest({
        agent_id: q.agent_id,
        gte: q['created_at[gte]'],
        lte: q['created_at[lte]'],
        include_archived: q.include_archived ?? false,
        status: q.status,
      });
      const rows = await listDeployments(
        db,
        req.workspaceId,
        {
          agentId: q.agent_id ?? null,
          createdGte: q['created_at[gte]'] ?? null,
          createdLte: q['created_at[lte]'] ?? null,
          includeArchived: q.include_archived ?? false,
          status: q.status ?? null,
        },
        cursorPos(q.page, filters) ?? null,
        q.limit + 1,
      );
      const page = toPage(rows, q.limit, (r) => r, filters);
      return {
        data: await Promise.all(page.data.map((r) => toDeployment(deps, client, r))),
        next_page: page.next_page,
      };
    },
  );

  app.post(
    '/v1/deployments/:deployment_id/archive',
    { schema: { operationId: 'archiveDeployment', params: DeploymentPath, response: { 200: DeploymentSchema } } },
    async (req) => {
      const d = await deploymentRow(deps, req.workspaceId, req.params.deployment_id);
      if (!d.archived_at) {
        // The Schedule goes first and for good: nothing fires once the row says archived.
        await deleteDeploymentSchedule(client, d.id);
        await archiveDeploymentRow(db, d.id);
      }
      return show(req.workspaceId, d.id);
    },
  );

  app.post(
    '/v1/deployments/:deployment_id/pause',
    { schema: { operationId: 'pauseDeployment', params: DeploymentPath, response: { 200: DeploymentSchema } } },
    async (req) => {
      const d = await deploymentRow(deps, req.workspaceId, req.params.deployment_id);
      if (d.archived_at) throw archivedRefusal(d.id);
      await pauseDeploymentSchedule(client, d.id, 'paused through the API');
      await setDeploymentPaused(db, d.id, { type: 'manual' });
      return show(req.workspaceId, d.id);
    },
  );

  app.post(
    '/v1/deployments/:deployment_id/unpause',
    { schema: { operationId: 'unpauseDeployment', params: DeploymentPath, response: { 200: DeploymentSchema } } },
    async (req) => {
      const d = await deploymentRow(deps, req.workspaceId, req.params.deployment_id);
      if (d.archived_at) throw archivedRefusal(d.id);
      await unpauseDeploymentSchedule(client, d.id, 'unpaused through the API');
      await setDeploymentPaused(db, d.id, null);
      return show(req.workspaceId, d.id);
    },
  );

  app.post(
    '/v1/deployments/:deployment_id/run',
    { schema: { operationId: 'runDeployment', params: DeploymentPath, response: { 200: DeploymentRunSchema } } },
    async (req) => {
      const d = await deploymentRow(deps, req.workspaceId, req.params.deployment_id);
      if (d.archived_at) throw archivedRefusal(d.id);
      // The same workflow the Schedule starts, started here so the run has its id and `manual` trigger from the
      // first; a paused deployment still runs when asked.
      const runId = newId('drun');
      const input: DeploymentRunInput = { deploymentId: d.id, manual: { runId } };
      const handle = await client.workflow.start(DEPLOYMENT_RUN_WORKFLOW, {
        taskQueue: BRAIN_TASK_QUEUE,
        workflowId: `${d.id}-manual-${runId}`,
        args: [input],
        memo: { deployment: d.id, name: d.name, workspace: d.workspace },
      });
      let timer: NodeJS.Timeout | undefined;
      const waited = await Promise.race([
        handle.result().then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), RUN_WAIT_MS))),
      ]).finally(() => clearTimeout(timer));
      const run = await findDeploymentRun(db, req.workspaceId, runId);
      if (!waited || !run || run.state === 'started')
        throw new ApiError(
          503,
          'overloaded_error',
          `run ${runId} of deployment ${d.id} has started but has not created its session yet; find it with deploymentRuns.list`,
          { headers: { 'x-should-retry': 'false' } },
        );
      return runOf(run);
    },
  );

  deploymentRunRoutes(app, deps);
}
