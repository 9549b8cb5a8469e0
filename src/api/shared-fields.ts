// What every resource shares: ids, timestamps, metadata with its patch semantics, and cursor pages.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { badRequest } from './api-error';

export { newId } from '../storage/ids';

/** PostgreSQL's `integer`: versions and positions are stored as one, so a larger number is a 400, not a failed query. */
export const INT4_MAX = 2 ** 31 - 1;

/** Any id the routes accept in a path: long enough for ours, short and plain enough to never reach SQL oddly. */
export const IdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'ids are 1-128 letters, digits, dash or underscore');

export function iso(v: unknown): string {
  return (v instanceof Date ? v : new Date(String(v))).toISOString();
}
export const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v));

export const MetadataSchema = z
  .record(
    z.string().min(1, 'metadata keys must not be empty').max(64, 'metadata keys are at most 64 characters'),
    z.string().max(512, 'metadata values are at most 512 characters'),
  )
  .refine((m) => Object.keys(m).length <= 16, 'metadata holds at most 16 keys');
export type Metadata = z.infer<typeof MetadataSchema>;

/** On update, metadata is a patch: a string upserts a key, `null` deletes it. */
export const MetadataPatchSchema = z.record(
  z.string().min(1).max(64, 'metadata keys are at most 64 characters'),
  z.string().max(512, 'metadata values are at most 512 characters').nullable(),
);

export function applyMetadataPatch(
  current: Metadata,
  patch: Record<string, string | null> | null | undefined,
  deleteEmpty = false,
): Metadata {
  if (!patch) return current;
  const next: Metadata = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || (deleteEmpty && v === '')) delete next[k];
    else next[k] = v;
  }
  if (Object.keys(next).length > 16) throw badRequest('metadata holds at most 16 keys', 'invalid_metadata');
  return next;
}

export const booleanQuery = z
  .enum(['true', 'false'], { error: 'must be true or false' })
  .transform((v) => v === 'true');

/** A cursor as sent: long enough for ours, short enough to never cost anything to refuse. */
const PageParamSchema = z.string().max(512, 'page is not a cursor this API returned');

/** `limit` and `page`, and nothing else: a parameter a list does not take is refused by name, never dropped. */
export const PageQuerySchema = z.strictObject({
  limit: z.coerce
    .number({ error: 'limit must be an integer' })
    .int('limit must be an integer')
    .min(1, 'limit must be at least 1')
    .max(1000, 'limit must be at most 1000')
    .default(20),
  page: PageParamSchema.optional(),
});
/** A list of resources that can be archived. */
export const ArchivableQuerySchema = PageQuerySchema.extend({ include_archived: booleanQuery.optional() });

/** A repeatable query parameter (`types[]=a&types[]=b`): one value arrives as a string, several as an array. */
export const repeated = <T extends z.ZodType>(item: T, max: number) =>
  z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(item).max(max));

/**
 * An RFC 3339 time in a `created_at[...]` filter, as PostgreSQL can compare it: normalised to UTC, and refused
 * (rather than failing the query) when its offset or year is outside what a timestamp holds.
 */
export const TimeQuerySchema = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 time such as 2026-04-01T00:00:00Z' })
  .transform((v) => new Date(v))
  .refine(
    (d) => !Number.isNaN(d.getTime()) && d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999,
    'must be an RFC 3339 time between the years 1 and 9999',
  )
  .transform((d) => d.toISOString());

/** `{data, next_page}`, the SDK's `PageCursor`. */
export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_page: z.string().nullable() });
}

export type Order = 'asc' | 'desc';

/**
 * The one cursor codec. A cursor names the row a page continues from by its stable key (a position that never moves
 * once written, such as a row's `pos` or an event's place in the log), never by an offset, so appends in either order
 * neither repeat nor skip a row. It carries the order and the filters it was returned for (a digest), which must be
 * sent again with it, and whether it points backwards (`prev_page`). `id` is an optional check of the row's identity.
 */
const CursorSchema = z.strictObject({
  k: z.number().int().min(-1).max(INT4_MAX),
  o: z.enum(['asc', 'desc']),
  b: z.literal(1).optional(),
  f: z.string().max(32).optional(),
  i: z.string().max(64).optional(),
});

export interface Cursor {
  /** The key the page continues after (next) or before (prev), exclusive. */
  key: number;
  /** Points to the rows before `key` in the order: a `prev_page`. */
  back: boolean;
  id?: string;
}

/** A short digest of the filters a cursor was returned for; undefined entries do not count. */
export function filterDigest(filters: Record<string, unknown>): string | undefined {
  const defined = Object.entries(filters)
    .filter(([, v]) => v !== undefined && v !== null)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  if (defined.length === 0) return undefined;
  return createHash('sha256').update(JSON.stringify(defined)).digest('base64url').slice(0, 12);
}

export function encodeCursor(c: Cursor, order: Order, filters?: string): string {
  return Buffer.from(
    JSON.stringify({
      k: c.key,
      o: order,
      ...(c.back ? { b: 1 } : {}),
      ...(filters ? { f: filters } : {}),
      ...(c.id ? { i: c.id } : {}),
    }),
  ).toString('base64url');
}

/** The cursor `page` holds, checked against the request's order and filters; undefined for the first page. */
export function decodeCursor(page: string | undefined, order: Order, filters?: string): Cursor | undefined {
  if (page === undefined || page === '') return undefined;
  let c: z.infer<typeof CursorSchema>;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(page)) throw new Error('not base64url');
    c = CursorSchema.parse(JSON.parse(Buffer.from(page, 'base64url').toString('utf8')));
  } catch {
    throw badRequest('page is not a cursor this API returned');
  }
  if (c.o !== order)
    throw badRequest(`page was returned for order=${c.o}; send order=${c.o} with it, or leave out page to start over`);
  if (c.f !== filters)
    throw badRequest(
      'page was returned for other filters; send the same filters with it, or leave out page to start over',
    );
  return { key: c.k, back: c.b === 1, ...(c.i ? { id: c.i } : {}) };
}

/** The position a `page` cursor of a newest-first list continues after, or undefined for the first page. */
export function cursorPos(page: string | undefined, filters?: string): number | undefined {
  const c = decodeCursor(page, 'desc', filters);
  if (c?.back) throw badRequest('page is not a cursor this API returned');
  return c?.key;
}

/** Given rows fetched newest first with `limit + 1`, the page and the cursor to the next one. */
export function toPage<R extends { pos: number }, T>(
  rows: R[],
  limit: number,
  map: (r: R) => T,
  filters?: string,
): { data: T[]; next_page: string | null } {
  const more = rows.length > limit;
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  return {
    data: shown.map(map),
    next_page: more && last ? encodeCursor({ key: last.pos, back: false }, 'desc', filters) : null,
  };
}
