// The work queue of self-hosted environments: work_items, the sessions tokens minted per claim (work_tokens), and who
// polls (work_pollers). Every time that decides a lease is the database's clock, so API processes on one database
// agree; a heartbeat's time is kept to the millisecond, the precision workers echo it back in.
import type { Queryable } from '../db';

export type WorkState = 'queued' | 'starting' | 'active' | 'stopping' | 'stopped';
export type WorkDataType = 'session' | 'healthcheck';

export interface WorkRow {
  id: string;
  workspace_id: string;
  environment_id: string;
  pos: number;
  data_type: WorkDataType;
  data_id: string;
  state: WorkState;
  metadata: Record<string, string>;
  created_at: Date;
  polled_at: Date | null;
  worker_id: string | null;
  claim: number;
  acknowledged_at: Date | null;
  started_at: Date | null;
  latest_heartbeat_at: Date | null;
  lease_ttl_seconds: number | null;
  lease_expires_at: Date | null;
  stop_requested_at: Date | null;
  stopped_at: Date | null;
  /** A starting, active or stopping item whose lease has run out (by the database's clock). */
  lapsed: boolean;
}

const COLUMNS = `id, workspace_id, environment_id, pos, data_type, data_id, state, metadata, created_at, polled_at,
  worker_id, claim, acknowledged_at, started_at, latest_heartbeat_at, lease_ttl_seconds, lease_expires_at,
  stop_requested_at, stopped_at, (lease_expires_at is not null and lease_expires_at < now()) as lapsed`;

/** Where an item is claimable: never polled, polled and not acked for `$reclaim` ms, or its lease lapsed. */
const CLAIMABLE = `((state = 'queued' and (polled_at is null or polled_at < now() - $2::int * interval '1 millisecond'))
  or (state in ('starting', 'active') and lease_expires_at < now()))`;

const MS_NOW = `date_trunc('milliseconds', now())`;

/** Queues an item; false when it is a session's and the session already has a live one (the unique index). */
export async function insertWork(
  q: Queryable,
  w: { id: string; workspaceId: string; environmentId: string; dataType: WorkDataType; dataId: string },
): Promise<boolean> {
  const rows = await q.query(
    `insert into work_items (id, workspace_id, environment_id, data_type, data_id, state)
       values ($1, $2, $3, $4, $5, 'queued') on conflict do nothing returning id`,
    [w.id, w.workspaceId, w.environmentId, w.dataType, w.dataId],
  );
  return rows.length > 0;
}

export async function findWork(q: Queryable, environmentId: string, id: string): Promise<WorkRow | undefined> {
  const [row] = await q.query<WorkRow>(`select ${COLUMNS} from work_items where id = $1 and environment_id = $2`, [
    id,
    environmentId,
  ]);
  return row;
}

/** The item, locked until the transaction `tx` ends. */
export async function lockWork(tx: Queryable, environmentId: string, id: string): Promise<WorkRow | undefined> {
  const [row] = await tx.query<WorkRow>(
    `select ${COLUMNS} from work_items where id = $1 and environment_id = $2 for update`,
    [id, environmentId],
  );
  return row;
}

/** The environment's items, newest first, before `pos` `before` (null: from the newest). */
export async function listWork(
  q: Queryable,
  environmentId: string,
  before: number | null,
  limit: number,
): Promise<WorkRow[]> {
  return q.query<WorkRow>(
    `select ${COLUMNS} from work_items where environment_id = $1 and ($2::bigint is null or pos < $2) order by pos desc limit $3`,
    [environmentId, before, limit],
  );
}

/** Stopping items whose lease ran out: their worker is gone, so they are stopped (at the lease's end). */
export async function stopLapsedStopping(q: Queryable, environmentId: string): Promise<void> {
  await q.query(
    `update work_items set state = 'stopped', stopped_at = lease_expires_at
      where environment_id = $1 and state = 'stopping' and lease_expires_at < now()`,
    [environmentId],
  );
}

/**
 * Claims the oldest claimable item of the environment, skipping rows another transaction holds: a new claim (the
 * counter bumped, so tokens of older claims end), back to `queued` until it is acked, with no heartbeat or lease.
 */
export async function claimWork(
  tx: Queryable,
  environmentId: string,
  reclaimOlderThanMs: number,
  workerId: string | null,
): Promise<WorkRow | undefined> {
  const [row] = await tx.query<WorkRow>(
    `update work_items set claim = claim + 1, state = 'queued', polled_at = now(), worker_id = $3,
        acknowledged_at = null, started_at = null, latest_heartbeat_at = null, lease_ttl_seconds = null,
        lease_expires_at = null
      where id = (select id from work_items where environment_id = $1 and ${CLAIMABLE}
                   order by pos limit 1 for update skip locked)
      returning ${COLUMNS}`,
    [environmentId, reclaimOlderThanMs, workerId],
  );
  return row;
}

export async function insertWorkToken(q: Queryable, hash: string, workId: string, claim: number): Promise<void> {
  await q.query('insert into work_tokens (hash, work_id, claim) values ($1, $2, $3)', [hash, workId, claim]);
}

export interface WorkTokenRow {
  work_id: string;
  environment_id: string;
  workspace_id: string;
  workspace: string;
  data_type: WorkDataType;
  data_id: string;
  /** The token's claim is the item's current one, the item is not stopped, and its lease has not run out. */
  live: boolean;
}

export async function findWorkToken(q: Queryable, hash: string): Promise<WorkTokenRow | undefined> {
  const [row] = await q.query<WorkTokenRow>(
    `select w.id as work_id, w.environment_id, w.workspace_id, ws.name as workspace, w.data_type, w.data_id,
            (t.claim = w.claim and w.state <> 'stopped'
              and (w.lease_expires_at is null or w.lease_expires_at >= now())) as live
       from work_tokens t
       join work_items w on w.id = t.work_id
       join workspaces ws on ws.id = w.workspace_id
      where t.hash = $1`,
    [hash],
  );
  return row;
}

/** Acks a claimed, queued item: `starting`, with a lease of `ttl` seconds. */
export async function ackWork(
  q: Queryable,
  environmentId: string,
  id: string,
  ttlSeconds: number,
): Promise<WorkRow | undefined> {
  const [row] = await q.query<WorkRow>(
    `update work_items set state = 'starting', acknowledged_at = now(), lease_ttl_seconds = $3,
        lease_expires_at = now() + $3::int * interval '1 second'
      where id = $1 and environment_id = $2 and state = 'queued' and polled_at is not null
      returning ${COLUMNS}`,
    [id, environmentId, ttlSeconds],
  );
  return row;
}

/**
 * Records a heartbeat on a locked item and extends its lease by `ttl` seconds: `starting` (or a claimed `queued`)
 * becomes `active`; `stopping` stays so.
 */
export async function beatWork(tx: Queryable, id: string, ttlSeconds: number): Promise<WorkRow> {
  const [row] = await tx.query<WorkRow>(
    `update work_items set latest_heartbeat_at = ${MS_NOW}, lease_ttl_seconds = $2,
        lease_expires_at = now() + $2::int * interval '1 second',
        state = case when state in ('queued', 'starting') then 'active' else state end,
        acknowledged_at = coalesce(acknowledged_at, now()),
        started_at = case when state in ('queued', 'starting') then now() else started_at end
      where id = $1 returning ${COLUMNS}`,
    [id, ttlSeconds],
  );
  return row;
}

/** Moves a locked item to `stopping` or `stopped`. */
export async function setWorkStopped(tx: Queryable, id: string, to: 'stopping' | 'stopped'): Promise<WorkRow> {
  const [row] = await tx.query<WorkRow>(
    `update work_items set state = $2::text, stop_requested_at = coalesce(stop_requested_at, now()),
        stopped_at = case when $2::text = 'stopped' then now() else stopped_at end
      where id = $1 returning ${COLUMNS}`,
    [id, to],
  );
  return row;
}

export async function setWorkMetadata(
  q: Queryable,
  environmentId: string,
  id: string,
  metadata: Record<string, string>,
): Promise<void> {
  await q.query('update work_items set metadata = $3 where id = $1 and environment_id = $2', [
    id,
    environmentId,
    metadata,
  ]);
}

/**
 * Live items (queued, starting, active) matching `where` go to `stopping`, or straight to `stopped` when no worker
 * ever acked them.
 */
async function stopLive(q: Queryable, where: string, param: string): Promise<void> {
  await q.query(
    `update work_items set
        state = case when acknowledged_at is null then 'stopped' else 'stopping' end,
        stop_requested_at = coalesce(stop_requested_at, now()),
        stopped_at = case when acknowledged_at is null then now() else stopped_at end
      where ${where} = $1 and state in ('queued', 'starting', 'active')`,
    [param],
  );
}

export const stopLiveSessionWork = (q: Queryable, sessionId: string) =>
  stopLive(q, `data_type = 'session' and data_id`, sessionId);
export const stopLiveEnvironmentWork = (q: Queryable, environmentId: string) =>
  stopLive(q, 'environment_id', environmentId);

export interface WorkStatsRow {
  depth: number;
  pending: number;
  oldest_queued_at: Date | null;
}

/** Depth (claimable, not pending), pending (polled, not acked, within `reclaim` ms) and the oldest of both. */
export async function workStats(
  q: Queryable,
  environmentId: string,
  reclaimOlderThanMs: number,
): Promise<WorkStatsRow> {
  const [row] = await q.query<{ depth: number | string; pending: number | string; oldest_queued_at: Date | null }>(
    `with live as (
       select created_at, ${CLAIMABLE} as claimable,
              (state = 'queued' and polled_at is not null and polled_at >= now() - $2::int * interval '1 millisecond') as pending
         from work_items where environment_id = $1 and state in ('queued', 'starting', 'active'))
     select count(*) filter (where claimable) as depth, count(*) filter (where pending) as pending,
            min(created_at) filter (where claimable or pending) as oldest_queued_at
       from live`,
    [environmentId, reclaimOlderThanMs],
  );
  return { depth: Number(row.depth), pending: Number(row.pending), oldest_queued_at: row.oldest_queued_at };
}

export async function recordPoller(q: Queryable, environmentId: string, workerId: string): Promise<void> {
  await q.query(
    `insert into work_pollers (environment_id, worker_id, last_polled_at) values ($1, $2, now())
       on conflict (environment_id, worker_id) do update set last_polled_at = now()`,
    [environmentId, workerId],
  );
}

/** Workers that polled within `seconds`, most recent first. */
export async function pollingWorkers(
  q: Queryable,
  environmentId: string,
  seconds: number,
): Promise<{ worker_id: string; last_polled_at: Date }[]> {
  return q.query<{ worker_id: string; last_polled_at: Date }>(
    `select worker_id, last_polled_at from work_pollers
      where environment_id = $1 and last_polled_at >= now() - $2::int * interval '1 second'
      order by last_polled_at desc, worker_id`,
    [environmentId, seconds],
  );
}

/** Whether any worker of the environment ever sent its id with a poll. */
export async function anyPoller(q: Queryable, environmentId: string): Promise<boolean> {
  return (await q.query('select 1 from work_pollers where environment_id = $1 limit 1', [environmentId])).length > 0;
}

/** The starting and active items each worker holds. */
export async function heldWork(q: Queryable, environmentId: string): Promise<{ worker_id: string; id: string }[]> {
  return q.query<{ worker_id: string; id: string }>(
    `select worker_id, id from work_items
      where environment_id = $1 and state in ('starting', 'active') and worker_id is not null
        and lease_expires_at >= now() order by pos`,
    [environmentId],
  );
}

/** Whether the environment has a live healthcheck item. */
export async function liveHealthcheck(q: Queryable, environmentId: string): Promise<boolean> {
  return (
    (
      await q.query(
        `select 1 from work_items where environment_id = $1 and data_type = 'healthcheck'
            and state in ('queued', 'starting', 'active') limit 1`,
        [environmentId],
      )
    ).length > 0
  );
}

/** Removes an environment's queue: its items, their tokens, its pollers and its keys. */
export async function deleteEnvironmentWork(q: Queryable, environmentId: string): Promise<void> {
  await q.query('delete from work_tokens where work_id in (select id from work_items where environment_id = $1)', [
    environmentId,
  ]);
  await q.query('delete from work_items where environment_id = $1', [environmentId]);
  await q.query('delete from work_pollers where environment_id = $1', [environmentId]);
  await q.query('delete from environment_keys where environment_id = $1', [environmentId]);
}

/** The statements that remove a session's work items and their tokens (sessions-repo.ts runs them on delete). */
export const SESSION_WORK_ROWS: readonly string[] = [
  `delete from work_tokens where work_id in (select id from work_items where data_type = 'session' and data_id = $1)`,
  `delete from work_items where data_type = 'session' and data_id = $1`,
];
