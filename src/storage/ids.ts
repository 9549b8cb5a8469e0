// Resource ids: a prefix and random characters, made where rows are written (the API, and repos that write rows
// of their own, such as a session's outputs).
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghijkmnopqrstuvwxyz';

/** A new opaque id such as `agent_011CZk…`: the prefix, then 24 random characters. */
export function newId(prefix: string): string {
  const bytes = randomBytes(24);
  let s = '';
  for (const b of bytes) s += ALPHABET[b % ALPHABET.length];
  return `${prefix}_01${s}`;
}
