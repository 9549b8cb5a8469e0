// /v1/environments/{id}/work: the work queue of a self-hosted environment, which the SDK's own worker
// (`client.beta.environments.work.worker`) polls with an environment key. A session that needs hands queues one item
// (enqueueSessionWork); a worker claims it with `poll`, which mints a sessions token for that claim and hands it out
// in the item's `secret`; `ack` starts the lease, each `heartbeat` extends it. A lease that runs out puts the item
// back: the next poll reclaims it, with a new claim whose token ends the old one's. The queue lives in the database
// only (rows claimed with FOR UPDATE SKIP LOCKED, long polls that re-read it), so API processes on one database serve
// one queue. A healthcheck item is queued when an environment key is made; it carries no secret (the worker
// heartbeats and stops it with its environment key), and the SDK's worker skips it and force-stops it, so it passes
// through `stopped`. Which credential reaches which route is src/api/principals.ts's.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config';
import type { Queryable } from '../storage/db';
import {
  ackWork,
  anyPoller,
  beatWork,
  claimWork,
  findWork,
  heldWork,
  insertWork,
  insertWorkToken,
  listWork,
  lockWork,
  pollingWorkers,
  recordPoller,
  setWorkMetadata,
  setWorkStopped,
  stopLapsedStopping,
  stopLiveSessionWork,
  workStats,
  type WorkRow,
} from '../storage/repos/work-repo';
import { ApiError, badRequest, conflict, notFound } from './api-error';
import { getEnvironment, type ApiEnvironment } from './environments';
import { hashOfSecret } from './environment-keys';
import { SESSIONS_TOKEN_PREFIX } from './principals';
import type { ApiApp, ApiDeps, WorkLease } from './route-context';
import {
  IdSchema,
  MetadataPatchSchema,
  PageQuerySchema,
  applyMetadataPatch,
  cursorPos,
  iso,
  isoOrNull,
  newId,
  pageSchema,
  toPage,
} from './shared-fields';

export const DEFAULT_WORK_LEASE: WorkLease = { ttlSeconds: 90, minTtlSeconds: 10, maxTtlSeconds: 600 };
/** How long an item polled and not acked stays pending before a poll may reclaim it, unless the poll says. */
export const DEFAULT_RECLAIM_MS = 5000;
/** How often a long poll re-reads the queue. */
const POLL_RECHECK_MS = 75;
/** `stats.workers_polling` counts the workers that polled this recently. */
const POLLING_WINDOW_SECONDS = 30;
/** The console's worker list shows the workers that polled this recently. */
const WORKERS_WINDOW_SECONDS = 300;

/** The leases from WORK_LEASE_TTL_SECONDS, _MIN_ and _MAX_: a minimum above the maximum is lowered to it, the default kept between. */
export function workLeaseFrom(
  config: Pick<Config, 'WORK_LEASE_TTL_SECONDS' | 'WORK_LEASE_MIN_TTL_SECONDS' | 'WORK_LEASE_MAX_TTL_SECONDS'>,
): WorkLease {
  const max = Number(config.WORK_LEASE_MAX_TTL_SECONDS);
  const min = Math.min(Number(config.WORK_LEASE_MIN_TTL_SECONDS), max);
  return { minTtlSeconds: min, maxTtlSeconds: max, ttlSeconds: clamp(Number(config.WORK_LEASE_TTL_SECONDS), min, max) };
}

const clamp = (v: number, min: number, max: number) => Math.min(max, Math.max(min, v));

const STATES = ['queued', 'starting', 'active', 'stopping', 'stopped'] as const;

export const WorkSchema = z
  .object({
    id: z.string(),
    type: z.literal('work'),
    acknowledged_at: z.string().nullable(),
    created_at: z.string(),
    data: z.discriminatedUnion('type', [
      z.object({ id: z.string(), type: z.literal('session') }),
      z.object({ id: z.string(), type: z.literal('healthcheck') }),
    ]),
    environment_id: z.string(),
    latest_heartbeat_at: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    secret: z.string().nullable(),
    started_at: z.string().nullable(),
    state: z.enum(STATES),
    stop_requested_at: z.string().nullable(),
    stopped_at: z.string().nullable(),
  })
  .meta({ id: 'SelfHostedWork' });
export type ApiWork = z.infer<typeof WorkSchema>;

/** BetaWorkLeaseState: the lease as the server holds it. */
interface LeaseState {
  last_heartbeat: string | null;
  lease_extended: boolean;
  state: (typeof STATES)[number];
  ttl_seconds: number;
}

function toWork(r: WorkRow, secret: string | null = null): ApiWork {
  return {
    id: r.id,
    type: 'work',
    acknowledged_at: isoOrNull(r.acknowledged_at),
    created_at: iso(r.created_at),
    data: { id: r.data_id, type: r.data_type },
    environment_id: r.environment_id,
    latest_heartbeat_at: isoOrNull(r.latest_heartbeat_at),
    metadata: r.metadata,
    secret,
    started_at: isoOrNull(r.started_at),
    state: r.state,
    stop_requested_at: isoOrNull(r.stop_requested_at),
    stopped_at: isoOrNull(r.stopped_at),
  };
}

/** Queues one session work item unless the session already has a live one (queued/starting/active); idempotent under races. */
export async function enqueueSessionWork(
  db: Queryable,
  w: { workspaceId: string; environmentId: string; sessionId: string },
): Promise<void> {
  await insertWork(db, {
    id: newId('work'),
    workspaceId: w.workspaceId,
    environmentId: w.environmentId,
    dataType: 'session',
    dataId: w.sessionId,
  });
}

/** Moves the session's live items to stopping (stopped when never acked); for archive, delete and end. */
export async function stopSessionWork(db: Queryable, sessionId: string): Promise<void> {
  await stopLiveSessionWork(db, sessionId);
}

/** The environment, which must be self-hosted: only those have a queue. */
async function queueEnvironment(db: Queryable, workspaceId: string, id: string): Promise<ApiEnvironment> {
  const env = await getEnvironment(db, workspaceId, id);
  if (env.config.type !== 'self_hosted')
    throw badRequest(
      `environment ${id} is a ${env.config.type} environment; only self_hosted environments have a work queue`,
    );
  return env;
}

async function workOf(db: Queryable, environmentId: string, id: string): Promise<WorkRow> {
  const row = await findWork(db, environmentId, id);
  if (!row) throw notFound('work item', id);
  return row;
}

/** The base URL a worker should use for this API: as the request reached it. */
const baseUrlOf = (req: FastifyRequest) => `${req.protocol}://${req.host}`;

/** `secret`: base64url JSON of BetaWorkSecret, with a new sessions token for the claim. */
function newSecret(token: string, apiBaseUrl: string): string {
  return Buffer.from(JSON.stringify({ sessions_token: token, api_base_url: apiBaseUrl })).toString('base64url');
}

/** Claims one item (stopping items whose worker is gone are stopped first); a session's gets a new sessions token. */
async function claimOnce(
  deps: ApiDeps,
  environmentId: string,
  reclaimMs: number,
  workerId: string | null,
  apiBaseUrl: string,
): Promise<ApiWork | undefined> {
  return deps.db.transaction(async (tx) => {
    await stopLapsedStopping(tx, environmentId);
    const row = await claimWork(tx, environmentId, reclaimMs, workerId);
    if (!row) return undefined;
    if (row.data_type !== 'session') return toWork(row);
    const token = `${SESSIONS_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    await insertWorkToken(tx, hashOfSecret(token), row.id, row.claim);
    return toWork(row, newSecret(token, apiBaseUrl));
  });
}

/** The lease as the server holds it, for a refused heartbeat's 412. */
function leaseState(r: WorkRow, lease: WorkLease): LeaseState {
  return {
    last_heartbeat: isoOrNull(r.latest_heartbeat_at),
    lease_extended: false,
    state: r.state,
    ttl_seconds: r.lease_ttl_seconds ?? lease.ttlSeconds,
  };
}

function preconditionFailed(message: string, r: WorkRow, lease: WorkLease): ApiError {
  return new ApiError(412, 'invalid_request_error', message, {
    errorCode: 'heartbeat_precondition_failed',
    details: { current_state: leaseState(r, lease) },
    headers: { 'x-should-retry': 'false' },
  });
}

/** A query number: digits only, as a whole number. */
const intQuery = (field: string, min: number, max: number) =>
  z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce
      .number({ error: `${field} must be an integer` })
      .int(`${field} must be an integer`)
      .min(min, `${field} must be at least ${min}`)
      .max(max, `${field} must be at most ${max}`)
      .optional(),
  );

const NO_HEARTBEAT = 'NO_HEARTBEAT';
const ExpectedHeartbeatSchema = z.preprocess(
  (v) => (v === '' ? undefined : v),
  z
    .union([
      z.literal(NO_HEARTBEAT),
      z.iso.datetime({
        offset: true,
        error: `expected_last_heartbeat must be ${NO_HEARTBEAT} or the last_heartbeat a heartbeat returned`,
      }),
    ])
    .optional(),
);

const WorkerIdSchema = z
  .string()
  .min(1, 'Anthropic-Worker-ID must not be empty')
  .max(256, 'Anthropic-Worker-ID is at most 256 characters')
  .regex(/^[\x21-\x7e]+$/, 'Anthropic-Worker-ID is printable ASCII without spaces');

const EnvPath = z.object({ environment_id: IdSchema });
const WorkPath = z.object({ environment_id: IdSchema, work_id: IdSchema });

export function environmentWorkRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db } = deps;
  const lease = deps.workLease ?? DEFAULT_WORK_LEASE;

  app.get(
    '/v1/environments/:environment_id/work/poll',
    {
      schema: {
        operationId: 'pollEnvironmentWork',
        params: EnvPath,
        querystring: z.strictObject({
          block_ms: intQuery('block_ms', 1, 999),
          reclaim_older_than_ms: intQuery('reclaim_older_than_ms', 0, 86_400_000),
        }),
        response: { 200: WorkSchema.nullable() },
      },
    },
    async (req) => {
      const id = req.params.environment_id;
      const env = await queueEnvironment(db, req.workspaceId, id);
      const header = req.headers['anthropic-worker-id'];
      let workerId: string | null = null;
      if (header !== undefined) {
        const parsed = WorkerIdSchema.safeParse(Array.isArray(header) ? header.join(',') : header);
        if (!parsed.success) throw badRequest(`header Anthropic-Worker-ID: ${parsed.error.issues[0].message}`);
        workerId = parsed.data;
        await recordPoller(db, id, workerId);
      }
      // An archived environment hands out nothing; its live items were stopped when it was archived.
      if (env.archived_at) return null;
      const reclaimMs = req.query.reclaim_older_than_ms ?? DEFAULT_RECLAIM_MS;
      const deadline = Date.now() + (req.query.block_ms ?? 0);
      const apiBaseUrl = baseUrlOf(req);
      for (;;) {
        const work = await claimOnce(deps, id, reclaimMs, workerId, apiBaseUrl);
        if (work) return work;
        const left = deadline - Date.now();
        if (left <= 0 || req.socket.destroyed) return null;
        await sleep(Math.min(POLL_RECHECK_MS, left));
      }
    },
  );

  app.post(
    '/v1/environments/:environment_id/work/:work_id/ack',
    { schema: { operationId: 'ackEnvironmentWork', params: WorkPath, response: { 200: WorkSchema } } },
    async (req) => {
      const { environment_id: envId, work_id: workId } = req.params;
      await queueEnvironment(db, req.workspaceId, envId);
      const acked = await ackWork(db, envId, workId, lease.ttlSeconds);
      if (acked) return toWork(acked);
      const row = await workOf(db, envId, workId);
      // Acking twice is harmless: the item is already the worker's.
      if ((row.state === 'starting' || row.state === 'active') && !row.lapsed) return toWork(row);
      throw conflict(
        row.state === 'queued'
          ? `work item ${workId} has not been claimed; poll for it first`
          : `work item ${workId} is ${row.state}${row.lapsed ? ' and its lease has run out' : ''}; it cannot be acked`,
      );
    },
  );

  app.post(
    '/v1/environments/:environment_id/work/:work_id/heartbeat',
    {
      schema: {
        operationId: 'heartbeatEnvironmentWork',
        params: WorkPath,
        querystring: z.strictObject({
          // Any positive ask is taken, and clamped to the configured bounds.
          desired_ttl_seconds: intQuery('desired_ttl_seconds', 1, 2_147_483_647),
          expected_last_heartbeat: ExpectedHeartbeatSchema,
        }),
        response: {
          200: z.object({
            type: z.literal('work_heartbeat'),
            last_heartbeat: z.string(),
            lease_extended: z.boolean(),
            state: z.enum(STATES),
            ttl_seconds: z.number(),
          }),
        },
      },
    },
    async (req) => {
      const { environment_id: envId, work_id: workId } = req.params;
      await queueEnvironment(db, req.workspaceId, envId);
      const ttl = clamp(req.query.desired_ttl_seconds ?? lease.ttlSeconds, lease.minTtlSeconds, lease.maxTtlSeconds);
      const expected = req.query.expected_last_heartbeat;
      const tokenEnded = req.principal.kind === 'sessions_token' && !req.principal.live;
      const outcome = await db.transaction(async (tx) => {
        const row = await lockWork(tx, envId, workId);
        if (!row) throw notFound('work item', workId);
        if (tokenEnded)
          return {
            refused: preconditionFailed(`the lease of work item ${workId} this token was for has ended`, row, lease),
          };
        if (row.state === 'stopped') return { row, extended: false };
        if (row.state !== 'stopping') {
          if (row.state === 'queued' && row.polled_at === null)
            return { refused: preconditionFailed(`work item ${workId} has not been claimed`, row, lease) };
          if (row.lapsed)
            return { refused: preconditionFailed(`the lease of work item ${workId} has run out`, row, lease) };
          if (expected !== undefined) {
            const stored = row.latest_heartbeat_at;
            const matches =
              expected === NO_HEARTBEAT
                ? stored === null
                : stored !== null && new Date(expected).getTime() === new Date(stored).getTime();
            if (!matches)
              return {
                refused: preconditionFailed(
                  `expected_last_heartbeat ${expected} does not match the stored heartbeat; another worker may hold the lease`,
                  row,
                  lease,
                ),
              };
          }
        }
        return { row: await beatWork(tx, row.id, ttl), extended: true };
      });
      if ('refused' in outcome) throw outcome.refused;
      const { row, extended } = outcome;
      return {
        type: 'work_heartbeat' as const,
        last_heartbeat: row.latest_heartbeat_at ? iso(row.latest_heartbeat_at) : '',
        lease_extended: extended,
        state: row.state,
        ttl_seconds: extended ? ttl : (row.lease_ttl_seconds ?? lease.ttlSeconds),
      };
    },
  );

  app.post(
    '/v1/environments/:environment_id/work/:work_id/stop',
    {
      schema: {
        operationId: 'stopEnvironmentWork',
        params: WorkPath,
        body: z.strictObject({ force: z.boolean().optional() }).optional(),
        response: { 200: WorkSchema },
      },
    },
    async (req) => {
      const { environment_id: envId, work_id: workId } = req.params;
      await queueEnvironment(db, req.workspaceId, envId);
      const force = req.body?.force ?? false;
      const row = await db.transaction(async (tx) => {
        const r = await lockWork(tx, envId, workId);
        if (!r) throw notFound('work item', workId);
        if (r.state === 'stopped') throw conflict(`work item ${workId} is already stopped`);
        // Graceful only when a worker has the item: a stop of one never acked, or asked twice, is immediate.
        const now = force || r.state === 'stopping' || r.acknowledged_at === null;
        return setWorkStopped(tx, r.id, now ? 'stopped' : 'stopping');
      });
      return toWork(row);
    },
  );

  app.get(
    '/v1/environments/:environment_id/work',
    {
      schema: {
        operationId: 'listEnvironmentWork',
        params: EnvPath,
        querystring: PageQuerySchema,
        response: { 200: pageSchema(WorkSchema) },
      },
    },
    async (req) => {
      const id = req.params.environment_id;
      await queueEnvironment(db, req.workspaceId, id);
      const rows = await listWork(db, id, cursorPos(req.query.page) ?? null, req.query.limit + 1);
      return toPage(rows, req.query.limit, (r) => toWork(r));
    },
  );

  app.get(
    '/v1/environments/:environment_id/work/stats',
    {
      schema: {
        operationId: 'statsEnvironmentWork',
        params: EnvPath,
        response: {
          200: z.object({
            type: z.literal('work_queue_stats'),
            depth: z.number(),
            pending: z.number(),
            oldest_queued_at: z.string().nullable(),
            workers_polling: z.number().nullable(),
          }),
        },
      },
    },
    async (req) => {
      const id = req.params.environment_id;
      await queueEnvironment(db, req.workspaceId, id);
      const stats = await workStats(db, id, DEFAULT_RECLAIM_MS);
      const polling = await pollingWorkers(db, id, POLLING_WINDOW_SECONDS);
      return {
        type: 'work_queue_stats' as const,
        depth: stats.depth,
        pending: stats.pending,
        oldest_queued_at: isoOrNull(stats.oldest_queued_at),
        workers_polling: polling.length > 0 || (await anyPoller(db, id)) ? polling.length : null,
      };
    },
  );

  app.get(
    '/v1/environments/:environment_id/work/workers',
    {
      schema: {
        operationId: 'listEnvironmentWorkers',
        params: EnvPath,
        response: {
          200: z.object({
            data: z.array(
              z.object({ worker_id: z.string(), last_polled_at: z.string(), work_ids: z.array(z.string()) }),
            ),
          }),
        },
      },
    },
    async (req) => {
      const id = req.params.environment_id;
      await queueEnvironment(db, req.workspaceId, id);
      const workers = await pollingWorkers(db, id, WORKERS_WINDOW_SECONDS);
      const held = await heldWork(db, id);
      return {
        data: workers.map((w) => ({
          worker_id: w.worker_id,
          last_polled_at: iso(w.last_polled_at),
          work_ids: held.filter((h) => h.worker_id === w.worker_id).map((h) => h.id),
        })),
      };
    },
  );

  app.get(
    '/v1/environments/:environment_id/work/:work_id',
    { schema: { operationId: 'retrieveEnvironmentWork', params: WorkPath, response: { 200: WorkSchema } } },
    async (req) => {
      const { environment_id: envId, work_id: workId } = req.params;
      await queueEnvironment(db, req.workspaceId, envId);
      return toWork(await workOf(db, envId, workId));
    },
  );

  app.post(
    '/v1/environments/:environment_id/work/:work_id',
    {
      schema: {
        operationId: 'updateEnvironmentWork',
        params: WorkPath,
        body: z.strictObject({ metadata: MetadataPatchSchema }),
        response: { 200: WorkSchema },
      },
    },
    async (req) => {
      const { environment_id: envId, work_id: workId } = req.params;
      await queueEnvironment(db, req.workspaceId, envId);
      const row = await workOf(db, envId, workId);
      await setWorkMetadata(db, envId, workId, applyMetadataPatch(row.metadata, req.body.metadata));
      return toWork(await workOf(db, envId, workId));
    },
  );
}
