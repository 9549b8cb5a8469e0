// GET /v1/sessions: the workspace's sessions by creation (their index row's `pos`), each filter the SDK can send
// honoured, with `next_page` and `prev_page` cursors keyed by `pos`. A session's status lives in its workflow, not in
// the index, so with a status filter rows are read in batches until a page fills.
import { z } from 'zod';
import type { Db } from '../../storage/db';
import { listSessions, type SessionRow } from '../../storage/repos/sessions-repo';
import {
  IdSchema,
  PageQuerySchema,
  TimeQuerySchema,
  booleanQuery,
  repeated,
  decodeCursor,
  encodeCursor,
  filterDigest,
  type Cursor,
  type Order,
} from '../shared-fields';
import type { ApiApp } from '../route-context';
import { badRequest } from '../api-error';

export const STATUSES = ['rescheduling', 'running', 'idle', 'terminated'] as const;
export type ApiStatus = (typeof STATUSES)[number];

const StatusSchema = z.enum(STATUSES, { error: `must be one of ${STATUSES.join(', ')}` });

export const SessionListQuerySchema = PageQuerySchema.extend({
  limit: z.coerce
    .number({ error: 'limit must be an integer' })
    .int('limit must be an integer')
    .min(1, 'limit must be at least 1')
    .max(100, 'limit must be at most 100')
    .default(20),
  order: z.enum(['asc', 'desc'], { error: 'must be asc or desc' }).default('desc'),
  agent_id: IdSchema.optional(),
  agent_version: z.coerce
    .number({ error: 'agent_version must be an integer' })
    .int('agent_version must be an integer')
    .min(1, 'agent_version must be at least 1')
    .max(2 ** 31 - 1)
    .optional(),
  'created_at[gt]': TimeQuerySchema.optional(),
  'created_at[gte]': TimeQuerySchema.optional(),
  'created_at[lt]': TimeQuerySchema.optional(),
  'created_at[lte]': TimeQuerySchema.optional(),
  deployment_id: IdSchema.optional(),
  memory_store_id: IdSchema.optional(),
  include_archived: booleanQuery.optional(),
  'statuses[]': repeated(StatusSchema, STATUSES.length * 4).optional(),
});
type SessionListQuery = z.infer<typeof SessionListQuerySchema>;

export interface SessionListDeps<S extends { status: ApiStatus }> {
  db: Db;
  toSession(workspaceId: string, row: SessionRow): Promise<S>;
  response: z.ZodType;
}

/** Rows past `key` (exclusive) in `order`, the first `limit` of them. */
function rows(
  db: Db,
  workspaceId: string,
  q: SessionListQuery,
  key: number | undefined,
  order: Order,
  limit: number,
): Promise<SessionRow[]> {
  const filter = {
    agentId: q.agent_id ?? null,
    agentVersion: q.agent_version ?? null,
    includeArchived: q.include_archived ?? false,
    createdGt: q['created_at[gt]'] ?? null,
    createdGte: q['created_at[gte]'] ?? null,
    createdLt: q['created_at[lt]'] ?? null,
    createdLte: q['created_at[lte]'] ?? null,
    memoryStoreId: q.memory_store_id ?? null,
    deploymentId: q.deployment_id ?? null,
  };
  return listSessions(db, workspaceId, filter, key ?? null, order, limit);
}

const flip = (o: Order): Order => (o === 'asc' ? 'desc' : 'asc');
/** The key one step before `key` in `order`: a cursor past it includes `key` itself. */
const before = (key: number, order: Order) => (order === 'asc' ? key - 1 : key + 1);

export function sessionListRoute<S extends { status: ApiStatus }>(app: ApiApp, deps: SessionListDeps<S>): void {
  app.get(
    '/v1/sessions',
    {
      schema: {
        operationId: 'listSessions',
        querystring: SessionListQuerySchema,
        response: {
          200: z.object({
            data: z.array(deps.response),
            next_page: z.string().nullable(),
            prev_page: z.string().nullable(),
          }),
        },
      },
    },
    async (req) => {
      const q = req.query;
      if (q.agent_version !== undefined && q.agent_id === undefined)
        throw badRequest('agent_version filters by a version of agent_id: give agent_id with it');
      const statuses = q['statuses[]'] === undefined ? undefined : new Set(q['statuses[]']);
      const filters = filterDigest({
        agent_id: q.agent_id,
        agent_version: q.agent_version,
        gt: q['created_at[gt]'],
        gte: q['created_at[gte]'],
        lt: q['created_at[lt]'],
        lte: q['created_at[lte]'],
        deployment_id: q.deployment_id,
        memory_store_id: q.memory_store_id,
        include_archived: q.include_archived ?? false,
        statuses: statuses && [...statuses].sort(),
      });
      const cursor = decodeCursor(q.page, q.order, filters);

      // A prev_page reads backwards from its key, then shows the rows in the list's order.
      const scan = cursor?.back ? flip(q.order) : q.order;
      let key = cursor?.key;
      const data: { row: SessionRow; session: S }[] = [];
      let more = false;
      for (;;) {
        const batch = statuses ? 100 : q.limit + 1;
        const got = await rows(deps.db, req.workspaceId, q, key, scan, batch);
        for (const r of got) {
          const session = await deps.toSession(req.workspaceId, r);
          if (statuses && !statuses.has(session.status)) {
            key = r.pos;
            continue;
          }
          if (data.length === q.limit) {
            more = true;
            break;
          }
          data.push({ row: r, session });
          key = r.pos;
        }
        if (more || got.length < batch) break;
      }
      if (cursor?.back) data.reverse();
      const first = data[0]?.row.pos;
      const last = data[data.length - 1]?.row.pos;
      const cur = (c: Cursor) => encodeCursor(c, q.order, filters);
      let next: string | null;
      let prev: string | null;
      if (!cursor?.back) {
        next = more && last !== undefined ? cur({ key: last, back: false }) : null;
        // The first page has nothing before it; a later one points back at the rows before its first.
        prev = !cursor ? null : cur({ key: first ?? before(cursor.key, flip(q.order)), back: true });
      } else {
        prev = more && first !== undefined ? cur({ key: first, back: true }) : null;
        next = cur({ key: last ?? before(cursor.key, q.order), back: false });
      }
      return { data: data.map((d) => d.session), next_page: next, prev_page: prev };
    },
  );
}
