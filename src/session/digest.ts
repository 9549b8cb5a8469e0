// A digest of a stretch of the log, the same in the workflow sandbox and in activities: 64 bits of FNV-1a over
// the events' canonical JSON (keys sorted, so a copy parsed back from the archive digests the same). It lets an
// activity that reads events by query check them against the ones history committed.
import type { SessionEvent } from './events';

// The built-ins the digest uses, bound once: in a workflow's V8 context every read of a global name goes through
// the context's property interceptor, and the hash loop below read `Math` twice per character (about 2 ms for the
// 10,000 characters of the default tool specs in a `vm` context, against 18 us with `imul` bound).
const { imul } = Math;
const { isArray } = Array;
const { entries: entriesOf } = Object;
const { stringify } = JSON;

function canonical(value: unknown): string {
  if (isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = entriesOf(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, v]) => `${stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return stringify(value) ?? 'null';
}

export function eventsDigest(events: readonly SessionEvent[]): string {
  return valuesDigest(events);
}

/** The same digest over any JSON values (a model call's tool spec references carry one of their spec's). */
export function valuesDigest(values: readonly unknown[]): string {
  // Two 32-bit FNV-1a lanes with different offsets, over UTF-16 code units.
  let a = 0x811c9dc5;
  let b = 0x9e3779b9;
  for (const e of values) {
    const s = canonical(e);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      a = imul(a ^ c, 0x01000193);
      b = imul(b ^ c, 0x01000193) ^ (b >>> 13);
    }
    a = imul(a ^ 0x0a, 0x01000193);
    b = imul(b ^ 0x0a, 0x01000193);
  }
  return `${(a >>> 0).toString(16).padStart(8, '0')}${(b >>> 0).toString(16).padStart(8, '0')}`;
}
