// Text PostgreSQL cannot store: NUL (refused in text and jsonb) and unpaired UTF-16 surrogates (refused as a jsonb
// escape, and turned into U+FFFD in text). Every request's body, query and path is checked once, before the route's
// own schema, so no route can store such a string and the client learns which field carried it.

// Without the `u` flag a pattern sees UTF-16 code units, so a lone half of a pair matches.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `s` holds a NUL or a surrogate without its pair. */
export function unstorable(s: string): boolean {
  return s.includes('\u0000') || LONE_SURROGATE.test(s);
}

/**
 * Where in `value` the first unstorable string is, as a JSON pointer (`/metadata/team`), and whether it is an object's
 * key there rather than a value; undefined when every string is storable. Walks without recursion, so a deeply
 * nested body cannot overflow the stack.
 */
export function findUnstorable(value: unknown): { pointer: string; key: boolean } | undefined {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'string') {
      if (unstorable(v)) return { pointer: at, key: false };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${at}/${i}`]);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (const [k] of entries) if (unstorable(k)) return { pointer: at, key: true };
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i][1], `${at}/${entries[i][0]}`]);
    }
  }
  return undefined;
}

export const UNSTORABLE_MESSAGE = 'must not contain NUL (\\u0000) or an unpaired surrogate (\\ud800-\\udfff)';
