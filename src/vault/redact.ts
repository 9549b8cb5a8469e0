// Redaction of credentials from text bound for a model, an event or a log, in the encodings a tool might
// echo them in: plain, hex (any case), base64 and base64url at each of the three byte alignments, and
// URL-encoded or JSON-escaped copies of any of those.

export const REDACTED = '***';

/** Secrets shorter than this are left alone: redacting them would hit ordinary words. */
export const MIN_SECRET_LENGTH = 4;

/**
 * Encoded cores shorter than this are not redacted: a 4-byte secret base64-encoded at an odd offset leaves
 * only a few characters that depend on it alone, and removing those would mangle unrelated text.
 */
const MIN_CORE_LENGTH = 6;

const B64URL: Record<string, string> = { '+': '-', '/': '_' };

/**
 * The characters of base64(prefix + secret + suffix) that depend on the secret's bytes alone, for a prefix
 * of `offset` bytes (0, 1 or 2; longer prefixes repeat these three cases). A character covers six bits, so
 * the first and last characters of an unaligned secret also carry bits of its neighbours and are dropped.
 */
export function base64Core(secret: Buffer, offset: 0 | 1 | 2): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), secret])
    .toString('base64')
    .replace(/=+$/, '');
  const start = Math.ceil((8 * offset) / 6);
  const end = Math.floor((8 * (offset + secret.length)) / 6);
  return encoded.slice(start, end);
}

function escapeRegExp(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
}

function hexByte(b: number): string {
  const h = b.toString(16).padStart(2, '0');
  return [...h].map((c) => (/[a-f]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
}

/**
 * A pattern for one character of an encoded form, as it may appear after URL encoding (%XX in any case, and
 * `+` for a space) or JSON escaping (\uXXXX in any case, a backslash before it, repeated for each level).
 */
function flexibleChar(ch: string): string {
  const alternatives = [escapeRegExp(ch), [...Buffer.from(ch, 'utf8')].map((b) => `%${hexByte(b)}`).join('')];
  if (ch === ' ') alternatives.push('\\+');
  const units = [...Array(ch.length).keys()].map((i) => ch.charCodeAt(i));
  alternatives.push(
    units
      .map(
        (u) =>
          `\\\\+u${u
            .toString(16)
            .padStart(4, '0')
            .replace(/[a-f]/g, (c) => `[${c}${c.toUpperCase()}]`)}`,
      )
      .join(''),
  );
  const shortEscapes: Record<string, string> = { '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f' };
  if (shortEscapes[ch]) alternatives.push(`\\\\+${shortEscapes[ch]}`);
  // `\"`, `\\`, `\/` and the deeper levels of the same (`\\\"`, ...).
  return `(?:\\\\*(?:${alternatives.join('|')}))`;
}

function flexible(form: string): string {
  return [...form].map(flexibleChar).join('');
}

/** The encoded forms of one secret whose characters are case-sensitive. */
function caseSensitiveForms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms = [secret];
  for (const offset of [0, 1, 2] as const) {
    const core = base64Core(bytes, offset);
    if (core.length < MIN_CORE_LENGTH) continue;
    forms.push(
      core,
      core.replace(/[+/]/g, (c) => B64URL[c]),
    );
  }
  return [...new Set(forms)];
}

const cache = new Map<string, RegExp[]>();

function patternsFor(secret: string): RegExp[] {
  let patterns = cache.get(secret);
  if (!patterns) {
    const exact = caseSensitiveForms(secret)
      .sort((a, b) => b.length - a.length)
      .map(flexible);
    const hex = Buffer.from(secret, 'utf8').toString('hex');
    patterns = [new RegExp(exact.join('|'), 'g'), new RegExp(flexible(hex), 'gi')];
    if (cache.size > 1000) cache.clear();
    cache.set(secret, patterns);
  }
  return patterns;
}

/** Removes every occurrence of each secret, in any of the encodings above, from `text`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  // Longer secrets first, so one that contains another is removed whole.
  for (const s of [...new Set(secrets)].sort((a, b) => b.length - a.length)) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    for (const re of patternsFor(s)) {
      re.lastIndex = 0;
      out = out.replace(re, REDACTED);
    }
  }
  return out;
}
