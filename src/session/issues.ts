// How a zod refusal reads: each issue as `path: message`, joined with `; `.
import type { z } from 'zod';

export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}
