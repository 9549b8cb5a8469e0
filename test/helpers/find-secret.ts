// Looks for a secret in text by decoding it, not by re-encoding the secret: URL and JSON escapes are undone
// first, then every run of hex or base64 characters is decoded at each alignment and searched. It shares no
// code with the redactor it checks.

/** Undoes %XX escapes (and `+` for a space) wherever they occur, as UTF-8. */
export function percentDecode(text: string): string {
  return text
    .replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'))
    .replace(/\+/g, ' ');
}

/** Undoes JSON string escapes, several levels deep. */
export function jsonUnescape(text: string): string {
  let out = text;
  for (let level = 0; level < 4; level++) {
    const next = out
      .replace(/\\u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
      .replace(/\\([\\"/])/g, '$1')
      .replace(/\\n/g, '\n')
      .replace(/\\t/g, '\t')
      .replace(/\\r/g, '\r');
    if (next === out) break;
    out = next;
  }
  return out;
}

function decodedRuns(text: string): Buffer[] {
  const out: Buffer[] = [];
  for (const run of text.match(/[0-9a-fA-F]{8,}/g) ?? []) {
    for (const skip of [0, 1])
      out.push(Buffer.from(run.slice(skip, skip + Math.floor((run.length - skip) / 2) * 2), 'hex'));
  }
  for (const run of text.match(/[A-Za-z0-9+/_-]{6,}/g) ?? []) {
    const std = run.replace(/-/g, '+').replace(/_/g, '/');
    for (let skip = 0; skip < 4; skip++) {
      const body = std.slice(skip);
      out.push(Buffer.from(body.slice(0, Math.floor(body.length / 4) * 4), 'base64'));
    }
  }
  return out;
}

/**
 * The ways `secret` can be read out of `text`: 'plain', or 'decoded' when some decoding of a run holds its
 * middle (all but its first and last byte, which an unaligned base64 run shares with its neighbours).
 */
export function findSecret(text: string, secret: string): string[] {
  const found = new Set<string>();
  const bytes = Buffer.from(secret, 'utf8');
  const middle = bytes.length >= 8 ? bytes.subarray(1, bytes.length - 1) : bytes;
  const variants = new Set([
    text,
    percentDecode(text),
    jsonUnescape(text),
    jsonUnescape(percentDecode(text)),
    percentDecode(jsonUnescape(text)),
  ]);
  for (const v of variants) {
    if (v.includes(secret)) found.add(v === text ? 'plain' : 'unescaped');
    for (const run of decodedRuns(v)) if (run.includes(middle)) found.add('decoded');
  }
  return [...found];
}
