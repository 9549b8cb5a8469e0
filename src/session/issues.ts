// How a zod refusal reads: each issue as `path: message`, joined with `; `.
import type { z } from 'zod';

export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}

/** The longest refusal a query answers with: Temporal cuts a longer failure message at its own limit (about 4,000 characters on Server 1.32). */
export const MAX_REFUSAL_CHARS = 1000;

/**
 * `what: issues`, cut at MAX_REFUSAL_CHARS with a line saying how long it was, so an argument with a huge unknown key
 * still gets a refusal that names the first fields and rules it broke, and the same text on every server.
 */
export function formatRefusal(what: string, error: z.ZodError): string {
  const full = `${what}: ${formatIssues(error)}`;
  if (full.length <= MAX_REFUSAL_CHARS) return full;
  const tail = `… (${full.length} characters in all)`;
  return full.slice(0, MAX_REFUSAL_CHARS - tail.length) + tail;
}
