// Webhook events: the SDK's typed events (`client.beta.webhooks.unwrap`), recorded into the outbox in the transaction
// of the change they report. The outbox is never the only record: each event reports a row or a session log entry.
import { createHash } from 'node:crypto';
import type { BetaWebhookEvent, BetaWebhookEventData } from '@anthropic-ai/sdk/resources/beta/webhooks';
import type { Queryable } from '../storage/db';
import { newId } from '../storage/ids';
import { insertWebhookEvent } from '../storage/repos/webhooks-repo';

export type WebhookEventType = BetaWebhookEventData['type'];

/** Every event type the SDK declares, in its order; an endpoint may subscribe to any of them. */
export const WEBHOOK_EVENT_TYPES = [
  'session.created',
  'session.pending',
  'session.running',
  'session.idled',
  'session.requires_action',
  'session.archived',
  'session.deleted',
  'session.status_rescheduled',
  'session.status_run_started',
  'session.status_idled',
  'session.status_terminated',
  'session.thread_created',
  'session.thread_idled',
  'session.thread_terminated',
  'session.outcome_evaluation_ended',
  'vault.created',
  'vault.archived',
  'vault.deleted',
  'vault_credential.created',
  'vault_credential.archived',
  'vault_credential.deleted',
  'vault_credential.refresh_failed',
  'session.updated',
  'agent.created',
  'agent.archived',
  'agent.deleted',
  'deployment.paused',
  'deployment_run.failed',
  'deployment.created',
  'deployment.updated',
  'deployment.unpaused',
  'agent.updated',
  'deployment.archived',
  'deployment_run.started',
  'deployment.deleted',
  'deployment_run.succeeded',
  'environment.created',
  'environment.updated',
  'environment.archived',
  'environment.deleted',
  'memory_store.created',
  'memory_store.archived',
  'memory_store.deleted',
  'session.budget_reached',
  'user_profile.enforcement_action_opened',
  'user_profile.enforcement_action_resolved',
  'user_profile.program_status_updated',
  'external_key.failed',
  'external_key.recovered',
  'external_storage.failed',
  'external_storage.recovered',
] as const satisfies readonly WebhookEventType[];

// Both ways: a type the SDK adds and this list lacks fails to compile.
type Missing = Exclude<WebhookEventType, (typeof WEBHOOK_EVENT_TYPES)[number]>;
const complete: [Missing] extends [never] ? true : Missing = true;
void complete;

/** The types this platform emits today (docs/guide/webhooks.md lists the rest and why). */
export const EMITTED_EVENT_TYPES: readonly WebhookEventType[] = [
  'session.created',
  'session.status_run_started',
  'session.status_idled',
  'session.requires_action',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.budget_reached',
  'session.updated',
  'session.archived',
  'session.deleted',
  'agent.created',
  'agent.updated',
  'agent.archived',
  'environment.created',
  'environment.updated',
  'environment.archived',
  'environment.deleted',
  'vault.created',
  'vault.archived',
  'vault.deleted',
  'vault_credential.created',
  'vault_credential.archived',
  'vault_credential.deleted',
  'memory_store.created',
  'memory_store.archived',
  'memory_store.deleted',
  'deployment_run.started',
  'deployment_run.succeeded',
  'deployment_run.failed',
];

/** The one organization of a self-hosted platform, as every event's `organization_id` names it. */
export const ORGANIZATION_ID = 'org_self_hosted';

type Workspaced = Extract<BetaWebhookEventData, { workspace_id: string }>;
type DataOf<T extends Workspaced['type']> = Omit<
  Extract<Workspaced, { type: T }>,
  'type' | 'organization_id' | 'workspace_id'
>;

/** One event to record: its type and the fields of its data besides type, organization and workspace. */
export type WebhookEventInput = {
  [T in Workspaced['type']]: {
    workspaceId: string;
    type: T;
    data: DataOf<T>;
    /** A stable id for an event that may be recorded twice (a retried activity); a new one when absent. */
    id?: string;
    /** When it happened; now when absent. */
    at?: Date;
  };
}[Workspaced['type']];

/** A stable event id for `key`: the same key always names the same event. */
export function webhookEventId(key: string): string {
  return `wevt_01${createHash('sha256').update(key).digest('base64url').slice(0, 24)}`;
}

/** The body a delivery of the event carries, as `unwrap` parses it. */
export function webhookEventBody(e: WebhookEventInput & { id: string; at: Date }): BetaWebhookEvent {
  return {
    id: e.id,
    type: 'event',
    created_at: e.at.toISOString(),
    data: {
      ...e.data,
      type: e.type,
      organization_id: ORGANIZATION_ID,
      workspace_id: e.workspaceId,
    } as BetaWebhookEventData,
  };
}

/**
 * Records an event in the outbox, in `db`'s transaction when it is one: the relay (src/webhooks/outbox-relay.ts) starts its
 * deliveries once that commits. Returns the event's id.
 */
export async function recordWebhookEvent(db: Queryable, e: WebhookEventInput): Promise<string> {
  const id = e.id ?? newId('wevt');
  const at = e.at ?? new Date();
  const payload = webhookEventBody({ ...e, id, at });
  await insertWebhookEvent(db, {
    id,
    workspaceId: e.workspaceId,
    type: e.type,
    payload,
    createdAt: payload.created_at,
  });
  return id;
}
