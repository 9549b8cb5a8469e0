// /v1/deployment_runs: the record of each firing of a deployment, finished ones only (a run shows exactly one of
// `session_id` and `error`), newest first, with the filters the SDK sends.
import { z } from 'zod';
import {
  IdSchema,
  PageQuerySchema,
  TimeQuerySchema,
  booleanQuery,
  cursorPos,
  filterDigest,
  iso,
  pageSchema,
  toPage,
} from './shared-fields';
import type { ApiApp, ApiDeps } from './route-context';
import { notFound } from './api-error';
import { findDeploymentRun, listDeploymentRuns, type DeploymentRunRow } from '../storage/repos/deployments-repo';

export const DeploymentRunSchema = z
  .object({
    id: z.string(),
    type: z.literal('deployment_run'),
    deployment_id: z.string(),
    agent: z.object({ id: z.string(), type: z.literal('agent'), version: z.number() }),
    session_id: z.string().nullable(),
    error: z.object({ type: z.string(), message: z.string() }).nullable(),
    trigger_context: z.union([
      z.object({ type: z.literal('schedule'), scheduled_at: z.string() }),
      z.object({ type: z.literal('manual') }),
    ]),
    created_at: z.string(),
  })
  .meta({ id: 'DeploymentRun' });
export type ApiDeploymentRun = z.infer<typeof DeploymentRunSchema>;

export function runOf(r: DeploymentRunRow): ApiDeploymentRun {
  return {
    id: r.id,
    type: 'deployment_run',
    deployment_id: r.deployment_id,
    agent: { id: r.agent_id, type: 'agent', version: r.agent_version },
    session_id: r.session_id,
    error: r.error_type !== null ? { type: r.error_type, message: r.error_message ?? '' } : null,
    trigger_context:
      r.trigger_type === 'schedule' && r.scheduled_at
        ? { type: 'schedule', scheduled_at: iso(r.scheduled_at) }
        : { type: 'manual' },
    created_at: iso(r.created_at),
  };
}

const RunListQuerySchema = PageQuerySchema.extend({
  deployment_id: IdSchema.optional(),
  trigger_type: z.enum(['schedule', 'manual'], { error: 'trigger_type must be schedule or manual' }).optional(),
  has_error: booleanQuery.optional(),
  'created_at[gt]': TimeQuerySchema.optional(),
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lt]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
});

export function deploymentRunRoutes(app: ApiApp, { db }: ApiDeps): void {
  app.get(
    '/v1/deployment_runs/:deployment_run_id',
    {
      schema: {
        operationId: 'retrieveDeploymentRun',
        params: z.object({ deployment_run_id: IdSchema }),
        response: { 200: DeploymentRunSchema },
      },
    },
    async (req) => {
      const run = await findDeploymentRun(db, req.workspaceId, req.params.deployment_run_id);
      // A run still creating its session is not a record yet.
      if (!run || run.state === 'started') throw notFound('deployment run', req.params.deployment_run_id);
      return runOf(run);
    },
  );

  app.get(
    '/v1/deployment_runs',
    {
      schema: {
        operationId: 'listDeploymentRuns',
        querystring: RunListQuerySchema,
        response: { 200: pageSchema(DeploymentRunSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const filters = filterDigest({
        deployment_id: q.deployment_id,
        trigger_type: q.trigger_type,
        has_error: q.has_error,
        gt: q['created_at[gt]'],
        gte: q['created_at[gte]'],
        lt: q['created_at[lt]'],
        lte: q['created_at[lte]'],
      });
      const rows = await listDeploymentRuns(
        db,
        req.workspaceId,
        {
          deploymentId: q.deployment_id ?? null,
          triggerType: q.trigger_type ?? null,
          hasError: q.has_error ?? null,
          createdGt: q['created_at[gt]'] ?? null,
          createdGte: q['created_at[gte]'] ?? null,
          createdLt: q['created_at[lt]'] ?? null,
          createdLte: q['created_at[lte]'] ?? null,
        },
        cursorPos(q.page, filters) ?? null,
        q.limit + 1,
      );
      return toPage(rows, q.limit, runOf, filters);
    },
  );
}
