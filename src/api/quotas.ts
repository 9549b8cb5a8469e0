// What one workspace may use: requests per key (per API process, @fastify/rate-limit), sessions open at once (exact
// across API processes: counted in PostgreSQL under a per-workspace advisory lock) and events per events.send.
import rateLimit from '@fastify/rate-limit';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Queryable } from '../storage/db';
import {
  SESSION_START_GRACE_SECONDS,
  countOpenSessions,
  lockSessionCount,
  markSessionsEnded,
  openSessions,
} from '../storage/repos/sessions-repo';
import type { ApiApp, ApiDeps, Quotas } from './route-context';

export type { Quotas };
import { ApiError } from './api-error';

export const DEFAULT_EVENTS_PER_SEND = 50;

const offOrCount = (v: string): number | undefined => (v === 'off' || Number(v) === 0 ? undefined : Number(v));

/** `N` a minute or `N/Ss` per S seconds; `0` or `off`: no limit. */
export function parseRateLimit(v: string): Quotas['rate'] {
  const m = /^(\d+)(?:\/(\d+)s)?$/.exec(v);
  if (!m || Number(m[1]) === 0) return undefined;
  return { max: Number(m[1]), windowMs: (m[2] ? Math.max(1, Number(m[2])) : 60) * 1000 };
}

export function quotasFrom(
  config: Pick<Config, 'API_RATE_LIMIT' | 'API_SESSION_QUOTA' | 'API_EVENTS_PER_SEND'>,
): Quotas {
  const sessions = offOrCount(config.API_SESSION_QUOTA);
  const rate = parseRateLimit(config.API_RATE_LIMIT);
  return {
    ...(rate ? { rate } : {}),
    ...(sessions ? { sessions } : {}),
    eventsPerSend: Number(config.API_EVENTS_PER_SEND),
  };
}

export const eventsPerSend = (deps: ApiDeps) => deps.quotas?.eventsPerSend ?? DEFAULT_EVENTS_PER_SEND;

/**
 * The request rate, keyed on the authenticated key's id: the plugin's hook runs on each route after the server's
 * auth hook, so one key over its limit leaves every other key alone. Requests without a key (the OpenAPI document,
 * the console's files, a refused key) are not counted. Over the limit: 429 `rate_limit_error` with `retry-after`.
 */
export async function registerRateLimit(app: ApiApp, quotas: Quotas | undefined): Promise<void> {
  const rate = quotas?.rate;
  if (!rate) return;
  await app.register(rateLimit, {
    global: true,
    max: rate.max,
    timeWindow: rate.windowMs,
    keyGenerator: (req) => req.apiKeyId ?? '',
    allowList: (req) => !req.apiKeyId,
    errorResponseBuilder: (_req, ctx) =>
      new ApiError(
        429,
        'rate_limit_error',
        `this API key is over its rate limit of ${ctx.max} requests per ${rate.windowMs / 1000} s (API_RATE_LIMIT); retry after ${ctx.after}`,
      ),
  });
}

/**
 * Runs `insert` (the new session's row) only if the workspace has a free slot, in one transaction holding the
 * workspace's lock, so that creates on any number of API processes never exceed the quota together. At the quota,
 * the open rows are checked against Temporal first: a session whose workflow has closed (ended, failed, terminated
 * outside the API) is marked ended and frees its slot. A refused create stores nothing.
 */
export async function withSessionSlot<T>(
  deps: ApiDeps,
  client: Client,
  workspaceId: string,
  insert: (tx: Queryable) => Promise<T>,
): Promise<T> {
  const quota = deps.quotas?.sessions;
  if (!quota) return insert(deps.db);
  return deps.db.transaction(async (tx) => {
    await lockSessionCount(tx, workspaceId);
    let open = await countOpenSessions(tx, workspaceId);
    if (open >= quota) {
      await markEnded(tx, client, workspaceId);
      open = await countOpenSessions(tx, workspaceId);
    }
    if (open >= quota) {
      throw new ApiError(
        429,
        'rate_limit_error',
        `this workspace has ${open} open sessions, its quota (API_SESSION_QUOTA ${quota}); end, archive or delete one first`,
        {
          headers: { 'x-should-retry': 'false' },
        },
      );
    }
    return insert(tx);
  });
}

/** Marks ended the open sessions whose workflows Temporal reports closed (or, past the grace, not found). */
async function markEnded(tx: Queryable, client: Client, workspaceId: string): Promise<void> {
  const rows = await openSessions(tx, workspaceId, SESSION_START_GRACE_SECONDS);
  const ended = (
    await Promise.all(
      rows.map(async (r) => {
        try {
          return (await client.workflow.getHandle(r.id).describe()).status.name === 'RUNNING' ? undefined : r.id;
        } catch (e) {
          if (e instanceof WorkflowNotFoundError) return r.old ? r.id : undefined;
          throw e;
        }
      }),
    )
  ).filter((id): id is string => id !== undefined);
  if (ended.length > 0) await markSessionsEnded(tx, ended);
}
