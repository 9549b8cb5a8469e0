// Session thread ids: the primary thread's is derived from the session's id, so the API and the workflow name it
// alike without storing it; a child thread's is drawn by the coordinator's workflow when it starts the thread.
const PREFIX = 'sthr_';

/** The id of a session's primary thread (the coordinator's own). */
export function primaryThreadId(sessionId: string): string {
  return `${PREFIX}${sessionId.replace(/^sesn_/, '').replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** A child thread's id from a random uuid (the workflow's `uuid4`, the same on every replay). */
export function childThreadId(uuid: string): string {
  return `${PREFIX}${uuid.replace(/-/g, '')}`;
}
