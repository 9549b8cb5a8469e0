// Webhook endpoints, the event outbox and the delivery attempts (src/webhooks/).
import type { Queryable } from '../db';

export interface WebhookEndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  /** null: every event type. */
  event_types: string[] | null;
  secret_sealed: string;
  consecutive_failures: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const ENDPOINT_COLUMNS =
  'id, workspace_id, url, event_types, secret_sealed, consecutive_failures, disabled_at, disabled_reason, created_at, updated_at';

export async function insertWebhookEndpoint(
  db: Queryable,
  e: { id: string; workspaceId: string; url: string; eventTypes: string[] | null; secretSealed: string },
): Promise<void> {
  await db.query(
    'insert into webhook_endpoints (id, workspace_id, url, event_types, secret_sealed) values ($1, $2, $3, $4, $5)',
    [e.id, e.workspaceId, e.url, e.eventTypes === null ? null : JSON.stringify(e.eventTypes), e.secretSealed],
  );
}

export async function findWebhookEndpoint(db: Queryable, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db.query<WebhookEndpointRow>(`select ${ENDPOINT_COLUMNS} from webhook_endpoints where id = $1`, [
    id,
  ]);
  return row;
}

/** A workspace's endpoints (every workspace's when `workspaceId` is null), oldest first. */
export async function listWebhookEndpoints(db: Queryable, workspaceId: string | null): Promise<WebhookEndpointRow[]> {
  return db.query<WebhookEndpointRow>(
    `select ${ENDPOINT_COLUMNS} from webhook_endpoints where ($1::text is null or workspace_id = $1) order by pos`,
    [workspaceId],
  );
}

/** The enabled endpoints of a workspace that take events of `type`. */
export async function endpointsFor(db: Queryable, workspaceId: string, type: string): Promise<WebhookEndpointRow[]> {
  return db.query<WebhookEndpointRow>(
    `select ${ENDPOINT_COLUMNS} from webhook_endpoints
      where workspace_id = $1 and disabled_at is null and (event_types is null or event_types ? $2)
      order by pos`,
    [workspaceId, type],
  );
}

/** Removes an endpoint and its attempts; false when there was none. */
export async function deleteWebhookEndpoint(db: Queryable, id: string): Promise<boolean> {
  const gone = await db.query('delete from webhook_endpoints where id = $1 returning id', [id]);
  await db.query('delete from webhook_attempts where endpoint_id = $1', [id]);
  return gone.length > 0;
}

export async function setWebhookSecret(db: Queryable, id: string, secretSealed: string): Promise<boolean> {
  const rows = await db.query(
    'update webhook_endpoints set secret_sealed = $2, updated_at = now() where id = $1 returning id',
    [id, secretSealed],
  );
  return rows.length > 0;
}

/** Disables (with a reason) or enables an endpoint; enabling clears its failure count. */
export async function setWebhookDisabled(db: Queryable, id: string, reason: string | null): Promise<boolean> {
  const rows = await db.query(
    reason === null
      ? 'update webhook_endpoints set disabled_at = null, disabled_reason = null, consecutive_failures = 0, updated_at = now() where id = $1 returning id'
      : 'update webhook_endpoints set disabled_at = coalesce(disabled_at, now()), disabled_reason = $2, updated_at = now() where id = $1 returning id',
    reason === null ? [id] : [id, reason],
  );
  return rows.length > 0;
}

/** Disables an enabled endpoint with a reason; false when it was disabled already (or is gone). */
export async function disableWebhookIfEnabled(db: Queryable, id: string, reason: string): Promise<boolean> {
  const rows = await db.query(
    'update webhook_endpoints set disabled_at = now(), disabled_reason = $2, updated_at = now() where id = $1 and disabled_at is null returning id',
    [id, reason],
  );
  return rows.length > 0;
}

export interface WebhookEventRow {
  id: string;
  workspace_id: string;
  type: string;
  payload: unknown;
  created_at: Date;
}

/** Adds an event to the outbox; an id already there is left as it is (a retried write). */
export async function insertWebhookEvent(
  db: Queryable,
  e: { id: string; workspaceId: string; type: string; payload: unknown; createdAt: string },
): Promise<void> {
  await db.query(
    'insert into webhook_events (id, workspace_id, type, payload, created_at) values ($1, $2, $3, $4, $5) on conflict (id) do nothing',
    [e.id, e.workspaceId, e.type, JSON.stringify(e.payload), e.createdAt],
  );
}

export async function findWebhookEvent(db: Queryable, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = await db.query<WebhookEventRow>(
    'select id, workspace_id, type, payload, created_at from webhook_events where id = $1',
    [id],
  );
  return row;
}

/** The oldest events no delivery was started for yet. */
export async function unrelayedWebhookEvents(db: Queryable, limit: number): Promise<WebhookEventRow[]> {
  return db.query<WebhookEventRow>(
    'select id, workspace_id, type, payload, created_at from webhook_events where relayed_at is null order by pos limit $1',
    [limit],
  );
}

export async function markWebhookEventRelayed(db: Queryable, id: string): Promise<void> {
  await db.query('update webhook_events set relayed_at = now() where id = $1', [id]);
}

/** A workspace's events, newest first (for tests and the operator). */
export async function listWebhookEvents(db: Queryable, workspaceId: string, limit: number): Promise<WebhookEventRow[]> {
  return db.query<WebhookEventRow>(
    'select id, workspace_id, type, payload, created_at from webhook_events where workspace_id = $1 order by pos desc limit $2',
    [workspaceId, limit],
  );
}

export interface WebhookAttemptRow {
  id: number;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  at: Date;
  status_code: number | null;
  outcome: 'delivered' | 'failed' | 'refused';
  error: string | null;
}

/**
 * Records one attempt and keeps the endpoint's run of failures: reset by a delivery, counted up by anything else.
 * Returns the run of failures after this attempt.
 */
export async function recordWebhookAttempt(db: Queryable, a: Omit<WebhookAttemptRow, 'id' | 'at'>): Promise<number> {
  await db.query(
    'insert into webhook_attempts (endpoint_id, event_id, event_type, attempt, status_code, outcome, error) values ($1, $2, $3, $4, $5, $6, $7)',
    [a.endpoint_id, a.event_id, a.event_type, a.attempt, a.status_code, a.outcome, a.error],
  );
  const [row] = await db.query<{ consecutive_failures: number }>(
    a.outcome === 'delivered'
      ? 'update webhook_endpoints set consecutive_failures = 0 where id = $1 returning consecutive_failures'
      : 'update webhook_endpoints set consecutive_failures = consecutive_failures + 1 where id = $1 returning consecutive_failures',
    [a.endpoint_id],
  );
  return row?.consecutive_failures ?? 0;
}

/** An endpoint's newest attempts, newest first. */
export async function listWebhookAttempts(
  db: Queryable,
  endpointId: string,
  limit: number,
): Promise<WebhookAttemptRow[]> {
  return db.query<WebhookAttemptRow>(
    'select id, endpoint_id, event_id, event_type, attempt, at, status_code, outcome, error from webhook_attempts where endpoint_id = $1 order by id desc limit $2',
    [endpointId, limit],
  );
}

/** The workspace of an API session, or undefined for a session the API does not know. */
export async function sessionWorkspace(db: Queryable, sessionId: string): Promise<string | undefined> {
  const [row] = await db.query<{ workspace_id: string }>('select workspace_id from sessions where id = $1', [
    sessionId,
  ]);
  return row?.workspace_id;
}

/** Removes an event the change it reported was undone before its deliveries started. */
export async function deleteWebhookEvent(db: Queryable, id: string): Promise<void> {
  await db.query('delete from webhook_events where id = $1 and relayed_at is null', [id]);
}

/** Notes that the workspace's endpoints changed, for the relay to tell its sessions (in the change's transaction). */
export async function markEndpointsChanged(db: Queryable, workspaceId: string): Promise<void> {
  await db.query(
    `insert into webhook_announcements (workspace_id, changed_at) values ($1, clock_timestamp())
       on conflict (workspace_id) do update set changed_at = clock_timestamp()`,
    [workspaceId],
  );
}

/**
 * Workspaces whose endpoint changes are not announced yet, with the change each announcement answers (as text, which
 * keeps the database's microseconds that a Date would drop).
 */
export async function pendingAnnouncements(
  db: Queryable,
  limit: number,
): Promise<{ workspace_id: string; changed_at: string }[]> {
  return db.query(
    `select workspace_id, changed_at::text as changed_at from webhook_announcements
      where announced_at is null or announced_at < changed_at order by webhook_announcements.changed_at limit $1`,
    [limit],
  );
}

export async function markAnnounced(db: Queryable, workspaceId: string, changedAt: string): Promise<void> {
  await db.query('update webhook_announcements set announced_at = $2::timestamptz where workspace_id = $1', [
    workspaceId,
    changedAt,
  ]);
}

/**
 * Whether an enabled endpoint of the workspace takes any of `types`, and when that was read (ms since the epoch, the
 * database's clock), so that a session told twice keeps the newer word.
 */
export async function endpointsTakeAny(
  db: Queryable,
  workspaceId: string,
  types: readonly string[],
): Promise<{ on: boolean; at: number }> {
  const [row] = await db.query<{ on: boolean; at: number }>(
    `select exists (
        select 1 from webhook_endpoints
         where workspace_id = $1 and disabled_at is null and (event_types is null or event_types ?| $2::text[])
      ) as on, (extract(epoch from clock_timestamp()) * 1000)::float8 as at`,
    [workspaceId, [...types]],
  );
  return { on: row.on, at: Number(row.at) };
}
