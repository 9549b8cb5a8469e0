// Webhook endpoints: registration (URL, event types, a signing secret shown once), listing, removal, secret rotation
// and the recent attempts. The secret is kept only as a sealed box to the vault public key: the process that
// registers an endpoint can seal it but not open it, and only tools workers (VAULT_KEY) open it to sign.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db, Queryable } from '../storage/db';
import { newId } from '../storage/ids';
import {
  deleteWebhookEndpoint,
  disableWebhookIfEnabled,
  findWebhookEndpoint,
  insertWebhookEndpoint,
  listWebhookAttempts,
  listWebhookEndpoints,
  markEndpointsChanged,
  setWebhookDisabled,
  setWebhookSecret,
  type WebhookAttemptRow,
  type WebhookEndpointRow,
} from '../storage/repos/webhooks-repo';
import { openSecret, sealSecret, type SealBinding } from '../vault/sealed';
import { PlatformError } from '../session/platform-error';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhook-events';

/** A registration refused: its message names the field and what is wrong. */
export class WebhookInputError extends PlatformError {}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * An endpoint URL: https, or http to a loopback host (a local receiver, which the egress gate still refuses unless
 * EGRESS_ALLOW opens it). Whether the gate lets a delivery through is decided at each delivery.
 */
export const WebhookUrlSchema = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .superRefine((v, ctx) => {
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute URL, e.g. https://example.com/hooks' });
      return;
    }
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.test(u.hostname)))
      ctx.addIssue({ code: 'custom', message: 'must be https (http only for a loopback host)' });
    else if (u.username || u.password) ctx.addIssue({ code: 'custom', message: 'must not carry credentials' });
    else if (u.hash) ctx.addIssue({ code: 'custom', message: 'must not have a #fragment' });
  });

const known = new Set<string>(WEBHOOK_EVENT_TYPES);

/** Event types as given (`a,b`): each one the SDK declares; empty or absent means every type. */
export function parseEventTypes(raw: string | string[] | undefined): WebhookEventType[] | null {
  if (raw === undefined) return null;
  const list = (Array.isArray(raw) ? raw : raw.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  if (list.length === 0) return null;
  const unknown = list.filter((t) => !known.has(t));
  if (unknown.length > 0)
    throw new WebhookInputError(
      `events: unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the types are ${WEBHOOK_EVENT_TYPES.join(', ')}`,
    );
  return [...new Set(list)] as WebhookEventType[];
}

/** A new signing secret in the Standard Webhooks form: `whsec_` and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const binding = (endpointId: string): SealBinding => ({
  credentialId: endpointId,
  vaultId: 'webhooks',
  field: 'signing_secret',
});

/** The endpoint's signing secret, opened with VAULT_KEY (tools workers only). */
export function openSigningSecret(
  vaultKey: string,
  row: Pick<WebhookEndpointRow, 'id' | 'secret_sealed'>,
): Promise<string> {
  return openSecret(vaultKey, binding(row.id), row.secret_sealed);
}

export interface WebhookEndpointInfo {
  id: string;
  workspace_id: string;
  url: string;
  /** null: every type. */
  event_types: string[] | null;
  disabled: boolean;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: string;
}

export const endpointInfo = (r: WebhookEndpointRow): WebhookEndpointInfo => ({
  id: r.id,
  workspace_id: r.workspace_id,
  url: r.url,
  event_types: r.event_types,
  disabled: r.disabled_at !== null,
  disabled_reason: r.disabled_reason,
  consecutive_failures: r.consecutive_failures,
  created_at: new Date(r.created_at).toISOString(),
});

/** Registers an endpoint; returns its id and its signing secret, which is not shown again. */
export async function addWebhookEndpoint(
  db: Db,
  vaultPublicKey: string,
  e: { workspaceId: string; url: string; events?: string | string[] },
): Promise<{ id: string; secret: string }> {
  const url = WebhookUrlSchema.safeParse(e.url);
  if (!url.success) throw new WebhookInputError(`url: ${url.error.issues[0].message}`);
  const eventTypes = parseEventTypes(e.events);
  const id = newId('whep');
  const secret = newSigningSecret();
  const secretSealed = await sealSecret(vaultPublicKey, binding(id), secret);
  // The endpoint and its mark for the relay's announcement commit together.
  await db.transaction(async (tx) => {
    await insertWebhookEndpoint(tx, { id, workspaceId: e.workspaceId, url: url.data, eventTypes, secretSealed });
    await markEndpointsChanged(tx, e.workspaceId);
  });
  return { id, secret };
}

/**
 * Applies `change` to the endpoint and marks its workspace's endpoints changed, in one transaction, so that no change
 * goes unannounced (src/webhooks/status-announce.ts); false when there is no endpoint.
 */
function changeEndpoint(db: Db, id: string, change: (tx: Queryable) => Promise<boolean>): Promise<boolean> {
  return db.transaction(async (tx) => {
    const endpoint = await findWebhookEndpoint(tx, id);
    if (!endpoint || !(await change(tx))) return false;
    await markEndpointsChanged(tx, endpoint.workspace_id);
    return true;
  });
}

export async function listEndpoints(db: Queryable, workspaceId: string | null): Promise<WebhookEndpointInfo[]> {
  return (await listWebhookEndpoints(db, workspaceId)).map(endpointInfo);
}

export async function removeWebhookEndpoint(db: Db, id: string): Promise<boolean> {
  return changeEndpoint(db, id, (tx) => deleteWebhookEndpoint(tx, id));
}

/** A new signing secret for the endpoint; deliveries from now on are signed with it. Undefined: no such endpoint. */
export async function rotateWebhookSecret(
  db: Queryable,
  vaultPublicKey: string,
  id: string,
): Promise<{ id: string; secret: string } | undefined> {
  if (!(await findWebhookEndpoint(db, id))) return undefined;
  const secret = newSigningSecret();
  return (await setWebhookSecret(db, id, await sealSecret(vaultPublicKey, binding(id), secret)))
    ? { id, secret }
    : undefined;
}

/** Turns an endpoint back on (its failure count cleared), or off with the operator's reason. */
export function setEndpointEnabled(db: Db, id: string, enabled: boolean, reason = 'disabled by the operator') {
  return changeEndpoint(db, id, (tx) => setWebhookDisabled(tx, id, enabled ? null : reason));
}

/**
 * Disables an endpoint that keeps failing, as an operator's `disable` would: its workspace's sessions are told, so
 * they stop reporting status changes that no enabled endpoint takes. Only the first of concurrent failures does it.
 */
export function disableFailingEndpoint(db: Db, id: string, reason: string) {
  return changeEndpoint(db, id, (tx) => disableWebhookIfEnabled(tx, id, reason));
}

export interface WebhookAttemptInfo {
  event_id: string;
  event_type: string;
  attempt: number;
  at: string;
  outcome: WebhookAttemptRow['outcome'];
  status_code: number | null;
  error: string | null;
}

/** The endpoint's newest attempts, newest first. */
export async function recentAttempts(db: Queryable, endpointId: string, limit = 50): Promise<WebhookAttemptInfo[]> {
  return (await listWebhookAttempts(db, endpointId, limit)).map((a) => ({
    event_id: a.event_id,
    event_type: a.event_type,
    attempt: a.attempt,
    at: new Date(a.at).toISOString(),
    outcome: a.outcome,
    status_code: a.status_code,
    error: a.error,
  }));
}
