// What every resource shares: ids, timestamps, metadata with its patch semantics, and cursor pages.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { badRequest } from './errors';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghijkmnopqrstuvwxyz';

/** A new opaque id such as `agent_011CZk…`: the prefix, then 24 random characters. */
export function newId(prefix: string): string {
  const bytes = randomBytes(24);
  let s = '';
  for (const b of bytes) s += ALPHABET[b % ALPHABET.length];
  return `${prefix}_01${s}`;
}

/** PostgreSQL's `integer`: versions and positions are stored as one, so a larger number is a 400, not a failed query. */
export const INT4_MAX = 2 ** 31 - 1;

/** Any id the routes accept in a path: long enough for ours, short and plain enough to never reach SQL oddly. */
export const IdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'ids are 1-128 letters, digits, dash or underscore');

export function iso(v: unknown): string {
  return (v instanceof Date ? v : new Date(String(v))).toISOString();
}
export const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : iso(v));

export const MetadataSchema = z
  .record(z.string().min(1, 'metadata keys must not be empty').max(64, 'metadata keys are at most 64 characters'), z.string().max(512, 'metadata values are at most 512 characters'))
  .refine((m) => Object.keys(m).length <= 16, 'metadata holds at most 16 keys');
export type Metadata = z.infer<typeof MetadataSchema>;

/** On update, metadata is a patch: a string upserts a key, `null` deletes it. */
export const MetadataPatchSchema = z.record(z.string().min(1).max(64, 'metadata keys are at most 64 characters'), z.string().max(512, 'metadata values are at most 512 characters').nullable());

export function applyMetadataPatch(current: Metadata, patch: Record<string, string | null> | null | undefined, deleteEmpty = false): Metadata {
  if (!patch) return current;
  const next: Metadata = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || (deleteEmpty && v === '')) delete next[k];
    else next[k] = v;
  }
  if (Object.keys(next).length > 16) throw badRequest('metadata holds at most 16 keys', 'invalid_metadata');
  return next;
}

/**
 * An RFC 3339 time in a query, as PostgreSQL can compare it: normalised to UTC, and refused (rather than failing the
 * query) when its offset or year is outside what a timestamp holds.
 */
export const TimeQuerySchema = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 time' })
  .transform((v) => new Date(v))
  .refine((d) => !Number.isNaN(d.getTime()) && d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999, 'must be an RFC 3339 time between the years 1 and 9999')
  .transform((d) => d.toISOString());

const booleanQuery = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');

export const PageQuerySchema = z.object({
  limit: z.coerce.number({ error: 'limit must be an integer' }).int('limit must be an integer').min(1, 'limit must be at least 1').max(1000, 'limit must be at most 1000').default(20),
  page: z.string().max(200).optional(),
  include_archived: booleanQuery.optional(),
});

/** `{data, next_page}`, the SDK's `PageCursor`. */
export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next_page: z.string().nullable() });
}

/** The position a `page` cursor continues after, or undefined for the first page. */
export function cursorPos(page: string | undefined): number | undefined {
  if (page === undefined || page === '') return undefined;
  try {
    const parsed = z.object({ p: z.number().int().positive().max(INT4_MAX) }).parse(JSON.parse(Buffer.from(page, 'base64url').toString('utf8')));
    return parsed.p;
  } catch {
    throw badRequest('page is not a cursor this API returned');
  }
}

/** Given rows fetched with `limit + 1`, newest first, the page and the cursor to the next one. */
export function toPage<R extends { pos: number }, T>(rows: R[], limit: number, map: (r: R) => T): { data: T[]; next_page: string | null } {
  const more = rows.length > limit;
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  return { data: shown.map(map), next_page: more && last ? Buffer.from(JSON.stringify({ p: last.pos })).toString('base64url') : null };
}
