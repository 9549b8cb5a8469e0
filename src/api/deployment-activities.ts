// The activities of a deployment's firing (deploymentRunWorkflow), run by tools workers, which hold the API's
// database and a Temporal client: record the run, create its session as `sessions.create` would, record how that
// went. A refusal the API would answer with a 4xx becomes the run's error, typed as the SDK types run errors; anything
// else (the database or Temporal out of reach) is thrown, and Temporal retries the activity.
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type {
  DeploymentRunActivities,
  DeploymentRunOutcome,
  StartedDeploymentRun,
} from '../session/deployment-contract';
import { Failure } from '../session/failure-types';
import type { ApiDeps } from './route-context';
import { ApiError } from './api-error';
import { getAgent } from './agents';
import { newId } from './shared-fields';
import { createSession, type SessionCreateParams } from './sessions/session-create';
import { findEnvironment } from '../storage/repos/environments-repo';
import { findVault } from '../storage/repos/vaults-repo';
import type { Queryable } from '../storage/db';
import { recordWebhookEvent, webhookEventId } from '../webhooks/webhook-events';
import {
  findDeploymentById,
  findDeploymentRunById,
  finishDeploymentRun,
  setDeploymentPaused,
  startDeploymentRunRow,
  type DeploymentRow,
} from '../storage/repos/deployments-repo';
import { pauseDeploymentSchedule } from './deployment-schedules';
import type { UserMessageParams } from './sessions/session-create';

/**
 * Run errors that pause a deployment when a scheduled firing records one (`paused_reason.error`): the deployment
 * cannot succeed again until someone changes it or what it names. Rate limits and rejected creates do not.
 */
const PAUSING_ERRORS = new Set([
  'environment_archived_error',
  'agent_archived_error',
  'environment_not_found_error',
  'vault_not_found_error',
  'vault_archived_error',
  'file_not_found_error',
  'memory_store_archived_error',
  'skill_not_found_error',
  'session_resource_not_found_error',
  'self_hosted_resources_unsupported_error',
  'mcp_egress_blocked_error',
  'unknown_error',
]);

const failed = (type: string, message: string): DeploymentRunOutcome => ({ error: { type, message } });

/** The session a deployment's firing creates, as `sessions.create` would take it. */
export function sessionParamsOf(d: DeploymentRow, agentVersion: number): SessionCreateParams {
  return {
    agent: { type: 'agent', id: d.agent_id, version: agentVersion },
    environment_id: d.environment_id,
    initial_events: d.initial_events as UserMessageParams[],
    vault_ids: d.vault_ids,
    title: d.name,
    metadata: d.metadata,
    resources: d.resources as SessionCreateParams['resources'],
    ...(d.budget_amount !== null && d.budget_currency !== null
      ? {
          budget: {
            type: 'limit' as const,
            max_list_cost: { amount: String(d.budget_amount), currency: d.budget_currency },
          },
        }
      : {}),
  };
}

/** A refusal of the session's creation as the run's error. */
function runErrorOf(e: ApiError): DeploymentRunOutcome {
  if (e.status === 429) return failed('session_rate_limited_error', e.message);
  if (e.status === 404) {
    if (/^file /.test(e.message)) return failed('file_not_found_error', e.message);
    if (/^skill /.test(e.message)) return failed('skill_not_found_error', e.message);
    return failed('session_resource_not_found_error', e.message);
  }
  if (/memory store .*archived/i.test(e.message)) return failed('memory_store_archived_error', e.message);
  if (/egress|not allowed to reach|refuses/i.test(e.message) && /mcp/i.test(e.message))
    return failed('mcp_egress_blocked_error', e.message);
  if (/self-hosted environment/.test(e.message)) return failed('self_hosted_resources_unsupported_error', e.message);
  return failed('session_creation_rejected_error', e.message);
}

/** What a deployment names, checked in the order a firing needs it; the run's error, or undefined when all is there. */
async function missingPart(
  deps: ApiDeps,
  d: DeploymentRow,
  agentVersion: number,
): Promise<DeploymentRunOutcome | undefined> {
  const agent = await getAgent(deps.db, d.workspace_id, d.agent_id, agentVersion).catch((e: unknown) => {
    if (e instanceof ApiError && e.status === 404) return undefined;
    throw e;
  });
  if (!agent) return failed('unknown_error', `agent ${d.agent_id} version ${agentVersion} no longer exists`);
  if (agent.archived_at)
    return failed(
      'agent_archived_error',
      `agent ${d.agent_id} is archived; the deployment cannot create sessions with it`,
    );
  const environment = await findEnvironment(deps.db, d.workspace_id, d.environment_id);
  if (!environment) return failed('environment_not_found_error', `environment ${d.environment_id} no longer exists`);
  if (environment.archived_at)
    return failed(
      'environment_archived_error',
      `environment ${d.environment_id} is archived; the deployment cannot create sessions in it`,
    );
  for (const v of d.vault_ids) {
    const vault = await findVault(deps.db, d.workspace_id, v);
    if (!vault) return failed('vault_not_found_error', `vault ${v} no longer exists`);
    if (vault.archived_at) return failed('vault_archived_error', `vault ${v} is archived`);
  }
  return undefined;
}

/**
 * The activities over the API's storage (`deps`, asked on each use: the dev stack's embedded database opens after
 * the workers) and `client`, which starts the sessions and pauses a deployment's Schedule.
 */
export function createDeploymentActivities(opts: {
  deps: () => ApiDeps | undefined;
  client: Client;
}): DeploymentRunActivities {
  const depsNow = (): ApiDeps => {
    const deps = opts.deps();
    if (!deps)
      throw ApplicationFailure.retryable(
        "this tools worker has no access to the API's database (DATABASE_URL); a deployment's firing needs it",
        Failure.Deployment.NoDatabase,
      );
    return deps;
  };
  return {
    async startDeploymentRun(input): Promise<StartedDeploymentRun | undefined> {
      const deps = depsNow();
      const d = await findDeploymentById(deps.db, input.deploymentId);
      if (!d || d.archived_at) return undefined;
      // The agent version this run uses: the pinned one, or the latest at the time of the firing.
      const version =
        d.agent_version ??
        (await getAgent(deps.db, d.workspace_id, d.agent_id).then(
          (a) => a.version,
          () => 1,
        ));
      const row = await startDeploymentRunRow(deps.db, {
        id: input.manual?.runId ?? newId('drun'),
        workspaceId: d.workspace_id,
        deploymentId: d.id,
        workflowId: input.workflowId,
        trigger: input.manual
          ? { type: 'manual' }
          : { type: 'schedule', scheduledAt: input.scheduledAt ? new Date(input.scheduledAt) : new Date() },
        agentId: d.agent_id,
        agentVersion: version,
      });
      // deployment_run.started, once per run whatever the retries (its id derives from the run's).
      await runWebhookEvent(deps.db, row, 'started');
      return { runId: row.id, finished: row.state !== 'started' };
    },

    async createDeploymentSession({ runId }): Promise<DeploymentRunOutcome> {
      const deps = depsNow();
      const run = await findDeploymentRunById(deps.db, runId);
      if (!run) throw ApplicationFailure.nonRetryable(`no deployment run ${runId}`, Failure.Deployment.UnknownRun);
      if (run.session_id) return { sessionId: run.session_id };
      const d = await findDeploymentById(deps.db, run.deployment_id);
      if (!d) return failed('unknown_error', `deployment ${run.deployment_id} no longer exists`);
      if (d.archived_at)
        return failed(
          'session_creation_rejected_error',
          `deployment ${d.id} was archived before its session was created`,
        );
      const missing = await missingPart(deps, d, run.agent_version);
      if (missing) return missing;
      try {
        const sessionId = await createSession(
          deps,
          opts.client,
          { workspaceId: d.workspace_id, workspace: d.workspace },
          sessionParamsOf(d, run.agent_version),
          { deploymentId: d.id },
        );
        return { sessionId };
      } catch (e) {
        if (e instanceof ApiError && e.status < 500) return runErrorOf(e);
        throw e;
      }
    },

    async finishDeploymentRun({ runId, outcome }): Promise<void> {
      const deps = depsNow();
      const run = await finishDeploymentRun(deps.db, runId, outcome);
      // deployment_run.succeeded or .failed, from the run as finished (a retry after a crash writes it then).
      if (run.state !== 'started') await runWebhookEvent(deps.db, run, run.state);
      if (run.trigger_type !== 'schedule' || !run.error_type || !PAUSING_ERRORS.has(run.error_type)) return;
      const d = await findDeploymentById(deps.db, run.deployment_id);
      if (!d || d.archived_at || d.paused_reason) return;
      await setDeploymentPaused(deps.db, d.id, { type: 'error', error: { type: run.error_type } });
      await pauseDeploymentSchedule(opts.client, d.id, `paused by run ${run.id}: ${run.error_type}`);
    },
  };
}

/** A run's webhook event, written to the outbox once: its id derives from the run and the state it reports. */
async function runWebhookEvent(
  db: Queryable,
  run: { id: string; workspace_id: string },
  state: 'started' | 'succeeded' | 'failed',
): Promise<void> {
  await recordWebhookEvent(db, {
    workspaceId: run.workspace_id,
    type: `deployment_run.${state}`,
    data: { id: run.id },
    id: webhookEventId(`${run.id}/${state}`),
  });
}
