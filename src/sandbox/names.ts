// Names of host-side resources for a session's sandbox: Docker allows [a-zA-Z0-9_.-], and a hash keeps
// sanitised names unique (and keeps a hostile session id from steering a path).
import { createHash } from 'node:crypto';

export function resourceName(kind: string, sessionId: string, name: string): string {
  const safe = sessionId.replace(/[^a-zA-Z0-9_.-]/g, '_').slice(0, 60);
  const hash = createHash('sha256').update(`${sessionId}\0${name}`).digest('hex').slice(0, 8);
  return `ma-${kind}-${safe}-${name}-${hash}`;
}
