// The console's client of the public API, as the SDK calls it: the key travels in the x-api-key header (never in a
// URL), every error is the API's envelope, and the event stream is read with fetch() because EventSource cannot
// send headers.
import { parseFrames } from './event-stream';

export const BETA = 'managed-agents-2026-04-01';
/** Memory stores answer only requests that name their own beta (src/api/beta.ts); the SDK sends it for them. */
export const MEMORY_BETA = 'agent-memory-2026-07-22';
const KEY_SLOT = 'managed-agents.console.key';

export const keyStore = {
  get: (): string | null => sessionStorage.getItem(KEY_SLOT),
  set: (key: string) => sessionStorage.setItem(KEY_SLOT, key),
  clear: () => sessionStorage.removeItem(KEY_SLOT),
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Called when the API refuses the key (revoked, or another server's): the console signs out. */
let onUnauthorized: (message: string) => void = () => undefined;
export function whenUnauthorized(fn: (message: string) => void): void {
  onUnauthorized = fn;
}

/** The betas a request to `path` names: those its route family takes, as the SDK sends them. */
function betasFor(path: string): string {
  return /^\/v1\/memory_stores(\/|\?|$)/.test(path) ? `${BETA},${MEMORY_BETA}` : BETA;
}

function headers(key: string, json: boolean, path: string): Record<string, string> {
  return {
    'x-api-key': key,
    'anthropic-beta': betasFor(path),
    ...(json ? { 'content-type': 'application/json' } : {}),
  };
}

async function failure(res: Response): Promise<ApiError> {
  let type = 'api_error';
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = (await res.json()) as { error?: { type?: string; message?: string } };
    type = body.error?.type ?? type;
    message = body.error?.message ?? message;
  } catch {
    // Not the envelope (a proxy's page): the status line says enough.
  }
  const err = new ApiError(res.status, type, message);
  if (res.status === 401) onUnauthorized(message);
  return err;
}

export type Query = Record<string, string | number | string[] | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** One request with `key` (default: the signed-in one). */
export async function call<T>(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
  key = keyStore.get() ?? '',
): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headers(key, body !== undefined, path),
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

export interface Page<T> {
  data: T[];
  next_page: string | null;
}

/** Every item of a list, following `next_page`. */
export async function listAll<T>(path: string, query: Query = {}): Promise<T[]> {
  const out: T[] = [];
  let page: string | undefined;
  do {
    const r = await call<Page<T>>('GET', withQuery(path, { ...query, page }));
    out.push(...r.data);
    page = r.next_page ?? undefined;
  } while (page);
  return out;
}

/** Uploads one file (POST /v1/files, multipart with a `file` part) and answers its metadata. */
export async function uploadFile<T>(file: File): Promise<T> {
  const form = new FormData();
  form.append('file', file, file.name);
  // No content-type of our own: the browser writes the multipart boundary.
  const res = await fetch('/v1/files', {
    method: 'POST',
    headers: headers(keyStore.get() ?? '', false, '/v1/files'),
    body: form,
  });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

/**
 * Saves a file's content as `filename`. The key goes in a header, so a plain link cannot fetch it: the bytes are
 * fetched here and handed to the browser's download through a blob URL, released once the download has begun.
 */
export async function downloadFile(fileId: string, filename: string): Promise<void> {
  const path = `/v1/files/${encodeURIComponent(fileId)}/content`;
  const res = await fetch(path, { headers: headers(keyStore.get() ?? '', false, path) });
  if (!res.ok) throw await failure(res);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * Follows GET /v1/sessions/{id}/events/stream until it ends or `signal` aborts. `onOpen` runs once the server has
 * taken its place in the log (its first bytes), so a list read after it misses nothing the stream will not send.
 */
export async function followStream(
  sessionId: string,
  signal: AbortSignal,
  onOpen: () => void,
  onEvent: (e: unknown) => void,
): Promise<void> {
  const res = await fetch(`/v1/sessions/${encodeURIComponent(sessionId)}/events/stream`, {
    headers: { ...headers(keyStore.get() ?? '', false, '/v1/sessions'), accept: 'text/event-stream' },
    signal,
  });
  if (!res.ok || !res.body) throw await failure(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let opened = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    if (!opened) {
      opened = true;
      onOpen();
    }
    const { frames, rest } = parseFrames(buffer);
    buffer = rest;
    for (const f of frames) {
      if (f.event === 'ping') continue;
      const data = JSON.parse(f.data) as { error?: { message?: string } };
      if (f.event === 'error') throw new ApiError(500, 'api_error', data.error?.message ?? 'the event stream failed');
      onEvent(data);
    }
  }
}
