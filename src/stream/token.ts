// Who may read a session's live stream: whoever holds the codec key, which already decrypts its history.
// The token is per session, so one leaked from a watcher's request opens no other session.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function streamToken(key: Buffer, sessionId: string): string {
  return createHmac('sha256', key).update(`managed-agents/stream/v1/${sessionId}`).digest('base64url');
}

/** True when `token` is the session's token under any of `keys` (every key of a rotation is accepted). */
export function tokenMatches(keys: Iterable<Buffer>, sessionId: string, token: string): boolean {
  const got = Buffer.from(token);
  for (const key of keys) {
    const want = Buffer.from(streamToken(key, sessionId));
    if (want.length === got.length && timingSafeEqual(want, got)) return true;
  }
  return false;
}

/** A worker's identity carries its stream endpoint, so a watcher finds it from the activity it is running. */
export function identityWithStream(base: string, url: string): string {
  return `${base} stream=${url}`;
}

export function streamUrlOf(identity: string | null | undefined): string | undefined {
  const m = /(?:^|\s)stream=(https?:\/\/\S+)/.exec(identity ?? '');
  return m?.[1];
}
