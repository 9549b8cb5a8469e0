// Input PostgreSQL cannot store: NUL (refused in text and jsonb), unpaired UTF-16 surrogates (refused as a jsonb
// escape, and turned into U+FFFD in text), and JSON nested deeper than anything the API takes (which would overflow
// a stack on the way to jsonb). Every request's body, query and path is checked once, before the route's own schema,
// so no route can store such a value and the client learns which field carried it.

// Without the `u` flag a pattern sees UTF-16 code units, so a lone half of a pair matches.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `s` holds a NUL or a surrogate without its pair. */
export function unstorable(s: string): boolean {
  return s.includes('\u0000') || LONE_SURROGATE.test(s);
}

/** Deeper than any schema the API takes (an input_schema nests a few levels), far shallower than a stack. */
export const MAX_DEPTH = 128;

interface At {
  up?: At;
  step: string;
  depth: number;
}

function pointer(at: At | undefined): string {
  const steps: string[] = [];
  for (let a = at; a; a = a.up) steps.push(a.step);
  return steps
    .reverse()
    .map((s) => `/${s}`)
    .join('');
}

export type Unstorable = { pointer: string; problem: 'text' | 'key' | 'depth' };

/**
 * Where in `value` the first unstorable part is, as a JSON pointer (`/metadata/team`), and what is wrong there: a
 * string, an object's key, or nesting past MAX_DEPTH; undefined when all is storable. Walks without recursion.
 */
export function findUnstorable(value: unknown): Unstorable | undefined {
  const stack: [unknown, At | undefined][] = [[value, undefined]];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    const depth = at?.depth ?? 0;
    if (typeof v === 'string') {
      if (unstorable(v)) return { pointer: pointer(at), problem: 'text' };
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_DEPTH) return { pointer: pointer(at), problem: 'depth' };
      const entries = Object.entries(v);
      if (!Array.isArray(v))
        for (const [k] of entries) if (unstorable(k)) return { pointer: pointer(at), problem: 'key' };
      for (let i = entries.length - 1; i >= 0; i--)
        stack.push([entries[i][1], { up: at, step: entries[i][0], depth: depth + 1 }]);
    }
  }
  return undefined;
}

const TEXT = 'must not contain NUL (\\u0000) or an unpaired surrogate (\\ud800-\\udfff)';

/** What the 400 says about `bad`, found at `field`. */
export function unstorableMessage(field: string, bad: Unstorable): string {
  const at = field.length > 200 ? `${field.slice(0, 200)}…` : field;
  if (bad.problem === 'depth') return `${at}: nested deeper than ${MAX_DEPTH} levels`;
  return `${at}: ${bad.problem === 'key' ? 'keys ' : ''}${TEXT}`;
}
