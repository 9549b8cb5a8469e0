// The webhook activities, run by tools workers (they hold the API's database, VAULT_KEY and the egress gate): one
// delivery attempt, signed under the Standard Webhooks scheme and sent through the gate, recorded whatever happens;
// and a session's status change written to the outbox.
import { Webhook } from 'standardwebhooks';
import type { Db } from '../storage/db';
import {
  findWebhookEndpoint,
  findWebhookEvent,
  recordWebhookAttempt,
  sessionWorkspace,
} from '../storage/repos/webhooks-repo';
import { EgressRefusedError, type EgressGate } from '../egress';
import { disableFailingEndpoint, openSigningSecret } from './endpoints';
import { recordWebhookEvent, webhookEventId, type WebhookEventInput, type WebhookEventType } from './webhook-events';

/** What the delivery workflow runs (src/workflows/webhook-delivery.ts), and with what. */
export interface WebhookDeliveryInput {
  eventId: string;
  endpointId: string;
  /** Seconds to wait before each retry; its length is the number of retries. */
  retryDelaysSeconds: number[];
  /** Consecutive failed attempts after which the endpoint is disabled. */
  disableAfter: number;
}

export interface WebhookDeliveryResult {
  outcome: DeliveryOutcome;
  attempts: number;
}

/**
 * `delivered`: a 2xx answer. `failed`: another answer or a connection error (retried). `refused`: the egress gate
 * refused the URL, nothing was sent. `gone`: the endpoint or event no longer exists. `disabled`: the endpoint is off.
 */
export type DeliveryOutcome = 'delivered' | 'failed' | 'refused' | 'gone' | 'disabled';

export interface DeliverWebhookInput {
  eventId: string;
  endpointId: string;
  attempt: number;
  disableAfter: number;
}

/** The session events whose data is the session's id alone, which the session workflow reports. */
export const SESSION_STATUS_EVENT_TYPES = [
  'session.status_run_started',
  'session.status_idled',
  'session.requires_action',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.budget_reached',
] as const satisfies readonly WebhookEventType[];
export type SessionStatusEventType = (typeof SESSION_STATUS_EVENT_TYPES)[number];

/** A session's status change, as the session workflow reports it: `key` names the change within the session. */
export interface SessionWebhookEventInput {
  sessionId: string;
  type: SessionStatusEventType;
  key: string;
}

/** How long one POST may take, headers and all, before it counts as a failure. */
export const DELIVERY_TIMEOUT_MS = 15_000;

const MAX_ERROR_CHARS = 300;

export interface WebhookActivityDeps {
  /** The API's database, asked on each use (the dev stack opens it after the workers). */
  apiDb: () => Db | undefined;
  vaultKey: () => string;
  egress: EgressGate;
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').slice(0, MAX_ERROR_CHARS);

/** Why a fetch failed, in words: its cause's code and message (a refused connection, a reset, a timeout). */
function fetchError(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`;
  const cause = e.cause?.code ?? e.cause?.message;
  return oneLine(cause ? `${e.message}: ${cause}` : e.message);
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const db = () => {
    const d = deps.apiDb();
    if (!d) throw new Error("webhooks need the API's database (DATABASE_URL) on the tools worker");
    return d;
  };

  return {
    /** One attempt: signed, sent through the gate (or refused by it, sending nothing), and recorded. */
    async deliverWebhook(input: DeliverWebhookInput): Promise<{ outcome: DeliveryOutcome; status?: number }> {
      const q = db();
      const endpoint = await findWebhookEndpoint(q, input.endpointId);
      const event = await findWebhookEvent(q, input.eventId);
      if (!endpoint || !event) return { outcome: 'gone' };
      if (endpoint.disabled_at) return { outcome: 'disabled' };
      const record = async (
        outcome: 'delivered' | 'failed' | 'refused',
        status: number | null,
        error: string | null,
      ) => {
        const failures = await recordWebhookAttempt(q, {
          endpoint_id: endpoint.id,
          event_id: event.id,
          event_type: event.type,
          attempt: input.attempt,
          status_code: status,
          outcome,
          error,
        });
        if (outcome !== 'delivered' && failures >= input.disableAfter)
          await disableFailingEndpoint(
            q,
            endpoint.id,
            `${failures} consecutive failed attempts; the last: ${status !== null ? `HTTP ${status}` : error}`,
          );
      };
      // Refused before anything connects: the name is resolved and every address checked (EGRESS_ALLOW).
      const refusal = await deps.egress.refusal(endpoint.url);
      if (refusal) {
        await record('refused', null, oneLine(refusal.message));
        return { outcome: 'refused' };
      }
      const body = JSON.stringify(event.payload);
      const secret = await openSigningSecret(deps.vaultKey(), endpoint);
      const now = new Date();
      const signature = new Webhook(secret).sign(event.id, now, body);
      let status: number;
      try {
        const res = await deps.egress.fetch(endpoint.url, {
          method: 'POST',
          body,
          redirect: 'manual',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'managed-agents-webhooks/1',
            'webhook-id': event.id,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signature,
          },
          signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
        });
        status = res.status;
        await res.body?.cancel().catch(() => undefined);
      } catch (err) {
        if (err instanceof EgressRefusedError) {
          await record('refused', null, oneLine(err.message));
          return { outcome: 'refused' };
        }
        await record('failed', null, fetchError(err));
        return { outcome: 'failed' };
      }
      const ok = status >= 200 && status < 300;
      await record(ok ? 'delivered' : 'failed', status, ok ? null : `HTTP ${status}`);
      return { outcome: ok ? 'delivered' : 'failed', status };
    },

    /**
     * Writes a session's status change to the outbox under an id derived from the session and `key`, so a retried
     * call records it once. A session the API does not know (one started from the command line) records nothing.
     */
    async recordSessionWebhookEvent(input: SessionWebhookEventInput): Promise<{ eventId?: string }> {
      const q = db();
      const workspaceId = await sessionWorkspace(q, input.sessionId);
      if (!workspaceId) return {};
      const id = webhookEventId(`${input.sessionId}/${input.key}`);
      await recordWebhookEvent(q, {
        workspaceId,
        type: input.type,
        data: { id: input.sessionId },
        id,
      } as WebhookEventInput);
      return { eventId: id };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
