// MCP credentials from the session's vault: a static bearer token or an OAuth token set, refreshed with
// grant_type=refresh_token when it expires or the server answers 401, and stored back in the same vault.
import { z } from 'zod';
import { refName, type FileVault } from '../vault';

/** Errors here never carry a secret in their message; callers still redact, in case a server echoes one. */
export class McpCredentialError extends Error {
  constructor(message: string, readonly permanent: boolean) {
    super(message);
  }
}

const OAuthCredentialSchema = z.looseObject({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  token_url: z.url({ protocol: /^https?$/ }).optional(),
  client_id: z.string().min(1).optional(),
  client_secret: z.string().min(1).optional(),
  /** Seconds since the epoch (milliseconds are accepted too), or an ISO 8601 time. */
  expires_at: z.union([z.number(), z.string()]).optional(),
});
export type McpCredential = z.infer<typeof OAuthCredentialSchema>;

const TokenResponseSchema = z.looseObject({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  expires_in: z.coerce.number().positive().optional(),
});

/** A token this close to its expiry is refreshed before use, so it does not lapse in flight. */
const EXPIRY_SKEW_MS = 30_000;

export function parseCredential(raw: string, name: string): McpCredential {
  const text = raw.trim();
  if (!text.startsWith('{')) return { access_token: text };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new McpCredentialError(`credential ${name} looks like JSON but does not parse`, true);
  }
  const parsed = OAuthCredentialSchema.safeParse(json);
  // Only the paths of the issues: their messages could quote a value.
  if (!parsed.success) throw new McpCredentialError(`credential ${name} is not a valid MCP credential (check ${parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ')})`, true);
  return parsed.data;
}

/** Every secret a credential holds, for redaction. */
export function secretsOf(cred: McpCredential | undefined): string[] {
  if (!cred) return [];
  return [cred.access_token, cred.refresh_token, cred.client_secret].filter((s): s is string => typeof s === 'string');
}

export function expiresAtMs(cred: McpCredential): number | undefined {
  const at = cred.expires_at;
  if (at === undefined) return undefined;
  if (typeof at === 'number') return at < 1e11 ? at * 1000 : at;
  const ms = Date.parse(at);
  return Number.isNaN(ms) ? undefined : ms;
}

export function isExpired(cred: McpCredential, now = Date.now()): boolean {
  const at = expiresAtMs(cred);
  return at !== undefined && at - EXPIRY_SKEW_MS <= now;
}

export function canRefresh(cred: McpCredential): boolean {
  return cred.refresh_token !== undefined && cred.token_url !== undefined;
}

/**
 * Reads and refreshes credentials in one vault store. Refreshes of the same credential are joined, and a
 * refresh first looks whether another worker has already stored a newer token, since refresh tokens may be
 * single-use.
 */
export class McpCredentials {
  private readonly inFlight = new Map<string, Promise<McpCredential>>();

  constructor(
    private readonly vault: FileVault,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** Resolves `ref` in the session's own vault only. */
  load(vault: string, ref: string): McpCredential {
    let raw: string;
    try {
      raw = this.vault.resolve(vault, ref);
    } catch (err) {
      throw new McpCredentialError(`credential ${ref} is not available in vault ${vault}: ${(err as Error).message}`, true);
    }
    return parseCredential(raw, refName(ref));
  }

  /** A usable credential: the stored one, refreshed first if it has expired and can be. */
  async current(vault: string, ref: string): Promise<McpCredential> {
    const cred = this.load(vault, ref);
    return isExpired(cred) && canRefresh(cred) ? this.refresh(vault, ref, cred.access_token) : cred;
  }

  /** A credential whose access token is not `rejected`, refreshing it at its token_url if needed. */
  refresh(vault: string, ref: string, rejected: string): Promise<McpCredential> {
    const key = `${vault}\0${ref}`;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.refreshNow(vault, ref, rejected).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async refreshNow(vault: string, ref: string, rejected: string): Promise<McpCredential> {
    const cred = this.load(vault, ref);
    if (cred.access_token !== rejected && !isExpired(cred)) return cred;
    if (!canRefresh(cred)) {
      throw new McpCredentialError(`credential ${ref} was rejected or has expired, and it has no refresh_token and token_url to renew it`, true);
    }
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: cred.refresh_token! });
    if (cred.client_id) body.set('client_id', cred.client_id);
    if (cred.client_secret) body.set('client_secret', cred.client_secret);
    let res: Response;
    try {
      res = await this.fetchImpl(cred.token_url!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new McpCredentialError(`token endpoint for ${ref} is unreachable: ${(err as Error).message}`, false);
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) {
      // 400 and 401 (invalid_grant, invalid_client) will not change on retry; a 5xx or 429 may.
      const permanent = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
      const reason = /"error"\s*:\s*"([a-z_]{1,64})"/.exec(text)?.[1];
      throw new McpCredentialError(`token endpoint for ${ref} refused the refresh (HTTP ${res.status}${reason ? ` ${reason}` : ''})`, permanent);
    }
    let tokens: z.infer<typeof TokenResponseSchema>;
    try {
      tokens = TokenResponseSchema.parse(JSON.parse(text));
    } catch {
      throw new McpCredentialError(`token endpoint for ${ref} answered without an access_token`, false);
    }
    const next: McpCredential = {
      ...cred,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token ?? cred.refresh_token,
      expires_at: tokens.expires_in !== undefined ? Math.floor(Date.now() / 1000 + tokens.expires_in) : undefined,
    };
    if (next.expires_at === undefined) delete next.expires_at;
    this.vault.put(vault, refName(ref), JSON.stringify(next));
    return next;
  }
}
