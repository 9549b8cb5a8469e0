// The home directory kept for each sandbox a session paused (migration 18): a row with its size and chunk count,
// and its chunks, each already sealed by the caller. A sub-agent's sandboxes are its own session's (`<id>.<n>`).
import type { Queryable } from '../db';

export interface SandboxHomeRow {
  size_bytes: number;
  chunks: number;
  created_at: Date;
}

const KEY = 'session_id = $1 and sandbox_name = $2';

/** Removes the kept home of one sandbox. */
export async function deleteSandboxHome(q: Queryable, sessionId: string, name: string): Promise<void> {
  await q.query(`delete from sandbox_home_chunks where ${KEY}`, [sessionId, name]);
  await q.query(`delete from sandbox_homes where ${KEY}`, [sessionId, name]);
}

export async function insertSandboxHomeChunk(
  q: Queryable,
  sessionId: string,
  name: string,
  n: number,
  sealed: Uint8Array,
): Promise<void> {
  await q.query('insert into sandbox_home_chunks (session_id, sandbox_name, n, data) values ($1, $2, $3, $4)', [
    sessionId,
    name,
    n,
    Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength),
  ]);
}

/** Records the home whose chunks were inserted (in the same transaction). */
export async function insertSandboxHome(
  q: Queryable,
  sessionId: string,
  name: string,
  sizeBytes: number,
  chunks: number,
): Promise<void> {
  await q.query('insert into sandbox_homes (session_id, sandbox_name, size_bytes, chunks) values ($1, $2, $3, $4)', [
    sessionId,
    name,
    sizeBytes,
    chunks,
  ]);
}

export async function findSandboxHome(
  q: Queryable,
  sessionId: string,
  name: string,
): Promise<SandboxHomeRow | undefined> {
  const [row] = await q.query<SandboxHomeRow>(`select size_bytes, chunks, created_at from sandbox_homes where ${KEY}`, [
    sessionId,
    name,
  ]);
  return row ? { ...row, size_bytes: Number(row.size_bytes), created_at: new Date(row.created_at) } : undefined;
}

/** One sealed chunk of a kept home, or undefined when it is gone. */
export async function sandboxHomeChunk(
  q: Queryable,
  sessionId: string,
  name: string,
  n: number,
): Promise<Buffer | undefined> {
  const [row] = await q.query<{ data: string }>(
    `select encode(data, 'base64') as data from sandbox_home_chunks where ${KEY} and n = $3`,
    [sessionId, name, n],
  );
  return row ? Buffer.from(row.data, 'base64') : undefined;
}

/** Statements that remove a session's kept homes, its sub-agents' included (for the session's deletion). */
export const SESSION_HOME_ROWS: readonly string[] = [
  `delete from sandbox_home_chunks where session_id = $1 or session_id like $1 || '.%'`,
  `delete from sandbox_homes where session_id = $1 or session_id like $1 || '.%'`,
];
