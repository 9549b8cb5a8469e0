// Who a request is, and what it may reach: the one place credentials are told apart and scoped. Three credentials:
// - a workspace API key reaches its workspace;
// - an environment key (src/api/environment-keys.ts) reaches only its own environment's work queue: poll, ack,
//   heartbeat, stop and list; another environment is a 404, any other route a 403;
// - a sessions token, minted for one claim of one work item and carried in the item's `secret`, reaches only that
//   item's session: reading it and its events, posting tool results, ack/heartbeat/stop of its own item, and the
//   skills and memory stores mounted for the session (writes only to a read_write store). Another session, or a
//   store or skill not mounted, is a 404, as if it did not exist; any other route a 403. Once its claim has ended
//   (the lease ran out, the item was reclaimed or stopped) it gets 401 everywhere but heartbeat, which answers 412.
// Secrets are looked up by SHA-256 and never logged or echoed.
import type { FastifyRequest } from 'fastify';
import type { Db, Queryable } from '../storage/db';
import { authenticate as authenticateApiKey } from './workspace-keys';
import { ENVIRONMENT_KEY_PREFIX, authenticateEnvironmentKey, hashOfSecret } from './environment-keys';
import { findWorkToken } from '../storage/repos/work-repo';
import { ApiError } from './api-error';
import type { ApiApp, Principal } from './route-context';

/** The prefix of the sessions tokens a poll hands out in a work item's `secret`. */
export const SESSIONS_TOKEN_PREFIX = 'sk-ma-req-';

export interface Authenticated {
  principal: Principal;
  workspaceId: string;
  workspace: string;
}

function presentedKey(headers: FastifyRequest['headers']): string | undefined {
  const x = headers['x-api-key'];
  if (typeof x === 'string' && x) return x.trim();
  const auth = headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return m?.[1];
}

async function authenticateSessionsToken(db: Queryable, token: string): Promise<Authenticated | undefined> {
  if (!token.startsWith(SESSIONS_TOKEN_PREFIX) || token.length > 200) return undefined;
  const row = await findWorkToken(db, hashOfSecret(token));
  if (!row || row.data_type !== 'session') return undefined;
  return {
    principal: {
      kind: 'sessions_token',
      workId: row.work_id,
      environmentId: row.environment_id,
      sessionId: row.data_id,
      live: row.live,
    },
    workspaceId: row.workspace_id,
    workspace: row.workspace,
  };
}

/** The request's credential, or a 401 saying what is missing or wrong. */
export async function authenticateRequest(db: Db, req: FastifyRequest): Promise<Authenticated> {
  const key = presentedKey(req.headers);
  if (!key)
    throw new ApiError(
      401,
      'authentication_error',
      'an API key is required: send it as x-api-key or Authorization: Bearer',
    );
  if (key.startsWith(ENVIRONMENT_KEY_PREFIX)) {
    const env = await authenticateEnvironmentKey(db, key);
    if (env)
      return {
        principal: { kind: 'environment_key', keyId: env.keyId, environmentId: env.environmentId },
        workspaceId: env.workspaceId,
        workspace: env.workspace,
      };
  }
  if (key.startsWith(SESSIONS_TOKEN_PREFIX)) {
    const token = await authenticateSessionsToken(db, key);
    if (token) return token;
  }
  const api = await authenticateApiKey(db, key);
  if (api)
    return { principal: { kind: 'api_key', keyId: api.keyId }, workspaceId: api.workspaceId, workspace: api.workspace };
  throw new ApiError(401, 'authentication_error', 'invalid API key');
}

const WORK = '/v1/environments/:environment_id/work';
/** The work routes an environment key reaches, `METHOD url`. */
const ENVIRONMENT_KEY_ROUTES = new Set([
  `GET ${WORK}/poll`,
  `GET ${WORK}`,
  `POST ${WORK}/:work_id/ack`,
  `POST ${WORK}/:work_id/heartbeat`,
  `POST ${WORK}/:work_id/stop`,
]);
const TOKEN_WORK_ROUTES = new Set([
  `POST ${WORK}/:work_id/ack`,
  `POST ${WORK}/:work_id/heartbeat`,
  `POST ${WORK}/:work_id/stop`,
]);
const TOKEN_SESSION_ROUTES = new Set([
  'GET /v1/sessions/:session_id',
  'GET /v1/sessions/:session_id/events',
  'GET /v1/sessions/:session_id/events/stream',
  'POST /v1/sessions/:session_id/events',
]);
const TOKEN_SKILL_ROUTES = new Set([
  'GET /v1/skills/:skill_id',
  'GET /v1/skills/:skill_id/versions',
  'GET /v1/skills/:skill_id/versions/:version',
  'GET /v1/skills/:skill_id/versions/:version/content',
]);
const TOKEN_STORE_READS = new Set([
  'GET /v1/memory_stores/:memory_store_id',
  'GET /v1/memory_stores/:memory_store_id/memories',
  'GET /v1/memory_stores/:memory_store_id/memories/:memory_id',
  'GET /v1/memory_stores/:memory_store_id/memory_versions',
  'GET /v1/memory_stores/:memory_store_id/memory_versions/:memory_version_id',
]);
const TOKEN_STORE_WRITES = new Set([
  'POST /v1/memory_stores/:memory_store_id/memories',
  'POST /v1/memory_stores/:memory_store_id/memories/:memory_id',
  'DELETE /v1/memory_stores/:memory_store_id/memories/:memory_id',
]);

/** The tool results a sessions token may post to its session's events. */
const TOKEN_EVENT_TYPES = new Set(['user.tool_result', 'user.custom_tool_result']);

const notFound = (what: string, id: string) => new ApiError(404, 'not_found_error', `${what} ${id} not found`);

async function mountAccess(
  db: Queryable,
  sessionId: string,
  kind: 'skill' | 'memory_store',
  refId: string,
): Promise<'read_write' | 'read_only' | undefined> {
  const rows = await db.query<{ access: 'read_write' | 'read_only' }>(
    'select access from session_mounts where session_id = $1 and kind = $2 and ref_id = $3',
    [sessionId, kind, refId],
  );
  if (rows.length === 0) return undefined;
  return rows.some((r) => r.access === 'read_write') ? 'read_write' : 'read_only';
}

/**
 * Whether the request's principal may reach its route: nothing for an API key; for the others, a 401, 403 or 404
 * as the header comment says. Runs in the auth hook, after the route is matched (its URL pattern and params known).
 */
export async function authorizeRequest(db: Db, req: FastifyRequest, p: Principal): Promise<void> {
  if (p.kind === 'api_key') return;
  const route = `${req.method} ${req.routeOptions.url ?? ''}`;
  const params = (req.params ?? {}) as Record<string, string>;
  if (p.kind === 'environment_key') {
    if (!ENVIRONMENT_KEY_ROUTES.has(route))
      throw new ApiError(
        403,
        'permission_error',
        "an environment key reaches only its environment's work queue (poll, ack, heartbeat, stop, list)",
      );
    if (params.environment_id !== p.environmentId) throw notFound('environment', params.environment_id);
    return;
  }
  // A sessions token.
  const heartbeat = route === `POST ${WORK}/:work_id/heartbeat`;
  if (!p.live && !heartbeat)
    throw new ApiError(
      401,
      'authentication_error',
      "this sessions token's claim has ended: the work item's lease ran out, or it was reclaimed or stopped",
    );
  if (TOKEN_WORK_ROUTES.has(route)) {
    if (params.environment_id !== p.environmentId) throw notFound('environment', params.environment_id);
    if (params.work_id !== p.workId) throw notFound('work item', params.work_id);
    return;
  }
  if (TOKEN_SESSION_ROUTES.has(route)) {
    if (params.session_id !== p.sessionId) throw notFound('session', params.session_id);
    return;
  }
  if (TOKEN_SKILL_ROUTES.has(route)) {
    if (!(await mountAccess(db, p.sessionId, 'skill', params.skill_id))) throw notFound('skill', params.skill_id);
    return;
  }
  const read = TOKEN_STORE_READS.has(route);
  if (read || TOKEN_STORE_WRITES.has(route)) {
    const access = await mountAccess(db, p.sessionId, 'memory_store', params.memory_store_id);
    if (!access) throw notFound('memory store', params.memory_store_id);
    if (!read && access !== 'read_write')
      throw new ApiError(
        403,
        'permission_error',
        `memory store ${params.memory_store_id} is mounted read_only for this session; a sessions token cannot write it`,
      );
    return;
  }
  throw new ApiError(
    403,
    'permission_error',
    "a sessions token reaches only its session: reading it and its events, posting tool results, its work item's ack, heartbeat and stop, and the skills and memory stores mounted for it",
  );
}

/**
 * What a sessions token may post to its session's events: tool results only. Checked once the body is parsed, before
 * the route stores anything.
 */
export function registerPrincipalChecks(app: ApiApp): void {
  app.addHook('preHandler', async (req) => {
    if (req.principal?.kind !== 'sessions_token') return;
    if (req.method !== 'POST' || req.routeOptions.url !== '/v1/sessions/:session_id/events') return;
    const events = (req.body as { events?: unknown } | undefined)?.events;
    if (!Array.isArray(events)) return;
    for (const [i, e] of events.entries()) {
      const type = (e as { type?: unknown } | null)?.type;
      if (typeof type !== 'string' || !TOKEN_EVENT_TYPES.has(type))
        throw new ApiError(
          403,
          'permission_error',
          `events.${i}: a sessions token may send only user.tool_result and user.custom_tool_result events`,
        );
    }
  });
}
