// MCP credentials: a static bearer token or an OAuth token set, from the session's named-secret vault or from its API
// vaults, refreshed with grant_type=refresh_token when it expires or the server answers 401, and stored back where
// it came from, under that store's lock, so a rotated single-use refresh token is never lost or sent twice.
import { z } from 'zod';
import type { McpServer } from '../session/agent';
import { refName, type SecretVault } from '../vault';
import { EgressRefusedError } from '../egress';
import { PlatformError } from '../session/platform-error';

/** Errors here never carry a secret in their message; callers still redact, in case a server echoes one. */
export class McpCredentialError extends PlatformError {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

const OAuthCredentialSchema = z.looseObject({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  token_url: z.url({ protocol: /^https?$/ }).optional(),
  client_id: z.string().min(1).optional(),
  client_secret: z.string().min(1).optional(),
  /** How client_secret reaches the token endpoint: in the form (the default) or as HTTP Basic. */
  token_endpoint_auth: z.enum(['none', 'client_secret_basic', 'client_secret_post']).optional(),
  scope: z.string().min(1).optional(),
  resource: z.string().min(1).optional(),
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
  if (!parsed.success)
    throw new McpCredentialError(
      `credential ${name} is not a valid MCP credential (check ${parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ')})`,
      true,
    );
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

/** Where one credential is kept: read it, and rewrite it under the store's lock. */
export interface CredentialSource {
  /** Names the credential in messages; never a secret. */
  readonly label: string;
  /** The same for every source of this credential in this process, to join refreshes. */
  readonly key: string;
  load(): Promise<McpCredential>;
  /** How this credential's token endpoint is reached; a tenant's (the API's vaults) goes through the egress gate. */
  readonly fetch?: typeof fetch;
  /**
   * Runs `fn` on the stored credential while no other process can update it, and stores what `fn` returns (nothing
   * when it returns undefined) before the lock is let go. Resolves to the credential stored afterwards.
   */
  update(fn: (cred: McpCredential) => Promise<McpCredential | undefined>): Promise<McpCredential>;
}

/** The API's vaults a session is bound to, as its agent file carries them on each MCP server. */
export type ApiVaultBinding = NonNullable<Extract<McpServer, { transport: 'http' }>['apiVaults']>;

/** Finds a session's credential for an MCP server among its API vaults (src/mcp/api-credentials.ts). */
export interface ApiCredentialLookup {
  /** The credential for `url` in the first of the binding's vaults that holds one, or undefined. */
  sourceFor(binding: ApiVaultBinding, url: string): Promise<CredentialSource | undefined>;
}

/** A credential held as one named secret (JSON, or a bare token) in a session's vault. */
function namedSecret(vault: SecretVault, vaultName: string, ref: string): CredentialSource {
  const name = refName(ref);
  const unavailable = (err: unknown) =>
    new McpCredentialError(`credential ${ref} is not available in vault ${vaultName}: ${(err as Error).message}`, true);
  return {
    label: ref,
    key: `vault\0${vaultName}\0${name}`,
    async load() {
      let raw: string;
      try {
        raw = await vault.resolve(vaultName, ref);
      } catch (err) {
        throw unavailable(err);
      }
      return parseCredential(raw, name);
    },
    async update(fn) {
      let raw: string;
      try {
        raw = await vault.update(vaultName, name, async (current) => {
          const next = await fn(parseCredential(current, name));
          return next && JSON.stringify(next);
        });
      } catch (err) {
        throw err instanceof McpCredentialError ? err : unavailable(err);
      }
      return parseCredential(raw, name);
    },
  };
}

export interface CredentialTarget {
  vault: string;
  server: McpServer;
}

/**
 * Reads and refreshes MCP credentials. Refreshes of one credential are joined within this process, and run under
 * the store's lock across processes: the lock holder looks again whether another worker has stored a newer token
 * before it spends the refresh token, since refresh tokens may be single-use.
 */
export class McpCredentials {
  private readonly inFlight = new Map<string, Promise<McpCredential>>();

  constructor(
    private readonly stores: { vault?: SecretVault; api?: ApiCredentialLookup },
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** Where the target server's credential lives, or undefined when it has none. */
  async source(t: CredentialTarget): Promise<CredentialSource | undefined> {
    const s = t.server;
    if (s.credential) {
      if (!this.stores.vault)
        throw new McpCredentialError(`this tools worker has no vault, so it cannot use ${s.credential}`, true);
      return namedSecret(this.stores.vault, t.vault, s.credential);
    }
    if (s.transport === 'http' && s.apiVaults) {
      if (!this.stores.api)
        throw new McpCredentialError("this tools worker cannot read the API's vaults (it has no database)", true);
      return this.stores.api.sourceFor(s.apiVaults, s.url);
    }
    return undefined;
  }

  /** A usable credential: the stored one, refreshed first if it has expired and can be. */
  async current(source: CredentialSource): Promise<McpCredential> {
    const cred = await source.load();
    return isExpired(cred) && canRefresh(cred) ? this.refresh(source, cred.access_token) : cred;
  }

  /** A credential whose access token is not `rejected`, refreshing it at its token_url if needed. */
  refresh(source: CredentialSource, rejected: string): Promise<McpCredential> {
    let pending = this.inFlight.get(source.key);
    if (!pending) {
      pending = source
        .update(async (cred) => {
          // Another worker refreshed it while this one waited for the lock: its token is the one to use.
          if (cred.access_token !== rejected && !isExpired(cred)) return undefined;
          if (!canRefresh(cred)) {
            throw new McpCredentialError(
              `credential ${source.label} was rejected or has expired, and it has no refresh_token and token_url to renew it`,
              true,
            );
          }
          return this.exchange(source, cred);
        })
        .finally(() => this.inFlight.delete(source.key));
      this.inFlight.set(source.key, pending);
    }
    return pending;
  }

  /** Spends the refresh token at the token endpoint; the new token set, or an error holding no secret. */
  private async exchange(source: CredentialSource, cred: McpCredential): Promise<McpCredential> {
    const label = source.label;
    const body = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: cred.refresh_token! });
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (cred.client_secret && cred.token_endpoint_auth === 'client_secret_basic') {
      // RFC 6749 2.3.1: both halves form-encoded before they are joined.
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(cred.client_id ?? '')}:${encodeURIComponent(cred.client_secret)}`).toString('base64')}`;
    } else {
      if (cred.client_id) body.set('client_id', cred.client_id);
      if (cred.client_secret) body.set('client_secret', cred.client_secret);
    }
    if (cred.scope) body.set('scope', cred.scope);
    if (cred.resource) body.set('resource', cred.resource);
    let res: Response;
    try {
      res = await (source.fetch ?? this.fetchImpl)(cred.token_url!, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      if (err instanceof EgressRefusedError)
        throw new McpCredentialError(`token endpoint for ${label}: ${err.message}`, true);
      throw new McpCredentialError(`token endpoint for ${label} is unreachable: ${(err as Error).message}`, false);
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) {
      // 400 and 401 (invalid_grant, invalid_client) will not change on retry; a 5xx or 429 may.
      const permanent = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
      const reason = /"error"\s*:\s*"([a-z_]{1,64})"/.exec(text)?.[1];
      throw new McpCredentialError(
        `token endpoint for ${label} refused the refresh (HTTP ${res.status}${reason ? ` ${reason}` : ''})`,
        permanent,
      );
    }
    let tokens: z.infer<typeof TokenResponseSchema>;
    try {
      tokens = TokenResponseSchema.parse(JSON.parse(text));
    } catch {
      throw new McpCredentialError(`token endpoint for ${label} answered without an access_token`, false);
    }
    const next: McpCredential = {
      ...cred,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token ?? cred.refresh_token,
      expires_at: tokens.expires_in !== undefined ? Math.floor(Date.now() / 1000 + tokens.expires_in) : undefined,
    };
    if (next.expires_at === undefined) delete next.expires_at;
    return next;
  }
}
