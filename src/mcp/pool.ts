// Connections to MCP servers, opened on first use and kept per (session, server) on this tools worker.
// The access token is added to each HTTP request here, so it lives only in this process and the vault.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_TOKEN_ENV, type McpServer } from '../session/agent';
import { canRefresh, secretsOf, type CredentialSource, type McpCredential, type McpCredentials } from './credentials';
import { findJail, jailedCommand, JailError, type JailOptions } from './jail';
import { EgressRefusedError, type EgressGate } from '../egress';

export interface McpTarget {
  sessionId: string;
  /** The session's vault: the only one its credentials resolve in. */
  vault: string;
  serverName: string;
  server: McpServer;
}

/** Mutable per connection: a refresh replaces the token without reconnecting. */
interface TokenSlot {
  token?: string;
  /** Every secret this connection's credential has held, refreshed ones included, for redaction by any caller. */
  secrets: Set<string>;
  refresh?: (rejected: string) => Promise<string>;
}

interface Entry {
  client: Client;
  slot: TokenSlot;
  /** The token a stdio server was started with: it reads it once, so a new token means a new process. */
  spawnedWith?: string;
  stderrTail: string;
  lastUsed: number;
  /** Calls in flight: a long tool call must not look idle to the sweeper. */
  busy: number;
  closed: boolean;
}

const CLIENT_INFO = { name: 'managed-agents', version: '0.1.0' };
const CONNECT_TIMEOUT_MS = 30_000;
const STDERR_TAIL = 2048;

/** The server answered with a JSON-RPC error: the connection itself is fine. */
export function isServerAnswer(err: unknown): err is McpError {
  return err instanceof McpError && err.code !== ErrorCode.ConnectionClosed && err.code !== ErrorCode.RequestTimeout;
}

/** A failure before the request reached a live server session: safe to send again on a new connection. */
function isStale(err: unknown): boolean {
  if (err instanceof StreamableHTTPError && err.code === 404) return true;
  const message = err instanceof Error ? err.message : '';
  const code = (err as { cause?: { code?: string } })?.cause?.code;
  return /not connected/i.test(message) || code === 'ECONNREFUSED';
}

function withBearer(fetchImpl: FetchLike, slot: TokenSlot): FetchLike {
  const send = (url: string | URL, init: RequestInit | undefined, token: string | undefined) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set('authorization', `Bearer ${token}`);
    return fetchImpl(url, { ...init, headers });
  };
  return async (url, init) => {
    const token = slot.token;
    const res = await send(url, init, token);
    if (res.status !== 401 || !token || !slot.refresh) return res;
    // The request was refused before it ran, so sending it again once with a fresh token is safe.
    await res.body?.cancel().catch(() => undefined);
    slot.token = await slot.refresh(token);
    return send(url, init, slot.token);
  };
}

export class McpClientPool {
  private readonly entries = new Map<string, Entry>();
  private readonly connecting = new Map<string, Promise<Entry>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly credentials: McpCredentials,
    private readonly opts: {
      idleMs?: number;
      fetch?: FetchLike;
      log?: (msg: string) => void;
      /** How stdio servers are jailed: bubblewrap (found on PATH when not given), or `off` to run them bare. */
      jail?: JailOptions | 'off';
      /** What every connection to a tenant's server (`tenant: true`) goes through, redirects included. */
      egress?: EgressGate;
    } = {},
  ) {
    // Sessions end without telling the tools worker, so idle connections (and stdio processes) are closed.
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, this.idleMs));
    this.sweeper.unref();
  }

  private get idleMs() {
    return this.opts.idleMs ?? 10 * 60_000;
  }

  private key(t: McpTarget) {
    return JSON.stringify([t.sessionId, t.serverName, t.vault, t.server]);
  }

  /** How many connections are open, for tests and logs. */
  get size() {
    return this.entries.size;
  }

  /**
   * Runs `fn` on a connected client. Every secret the credential held or gained is added to `seen`, so the
   * caller can redact them from whatever it returns. A reused connection that turns out stale is replaced once.
   */
  async use<T>(target: McpTarget, fn: (client: Client) => Promise<T>, seen: Set<string>): Promise<T> {
    const source = await this.credentials.source(target);
    const cred = source && (await this.credentials.current(source));
    for (const s of secretsOf(cred)) seen.add(s);
    for (let attempt = 0; ; attempt++) {
      const key = this.key(target);
      let entry = this.entries.get(key);
      if (entry && target.server.transport === 'stdio' && entry.spawnedWith !== cred?.access_token) {
        await this.drop(key, entry);
        entry = undefined;
      }
      const reused = entry !== undefined;
      entry ??= await this.connect(key, target, source, cred);
      if (cred && target.server.transport === 'http' && entry.slot.token !== cred.access_token) {
        entry.slot.token = cred.access_token;
        for (const s of secretsOf(cred)) entry.slot.secrets.add(s);
      }
      entry.lastUsed = Date.now();
      entry.busy++;
      try {
        return await fn(entry.client);
      } catch (err) {
        if (isServerAnswer(err)) throw err;
        await this.drop(key, entry);
        if (reused && attempt === 0 && isStale(err)) continue;
        throw this.withStderr(err, entry);
      } finally {
        for (const s of entry.slot.secrets) seen.add(s);
        entry.busy--;
        entry.lastUsed = Date.now();
      }
    }
  }

  private connect(
    key: string,
    t: McpTarget,
    source: CredentialSource | undefined,
    cred: McpCredential | undefined,
  ): Promise<Entry> {
    let pending = this.connecting.get(key);
    if (!pending) {
      pending = this.connectNow(key, t, source, cred).finally(() => this.connecting.delete(key));
      this.connecting.set(key, pending);
    }
    return pending;
  }

  private async connectNow(
    key: string,
    t: McpTarget,
    source: CredentialSource | undefined,
    cred: McpCredential | undefined,
  ): Promise<Entry> {
    const slot: TokenSlot = { token: cred?.access_token, secrets: new Set(secretsOf(cred)) };
    if (source && cred && canRefresh(cred)) {
      slot.refresh = async (rejected) => {
        const next = await this.credentials.refresh(source, rejected);
        for (const s of secretsOf(next)) slot.secrets.add(s);
        return next.access_token;
      };
    }
    const client = new Client(CLIENT_INFO);
    const entry: Entry = { client, slot, stderrTail: '', lastUsed: Date.now(), busy: 0, closed: false };
    const server = t.server;
    if (server.transport === 'http') {
      if (server.tenant && !this.opts.egress)
        throw new EgressRefusedError(
          `egress refused ${server.url}: this tools worker has no egress gate for a tenant's server`,
          'scheme',
        );
      const base = server.tenant ? (this.opts.egress!.fetch as FetchLike) : (this.opts.fetch ?? fetch);
      const transport = new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: server.headers },
        fetch: withBearer(base, slot),
        // A tenant's redirects are the gate's to judge, each Location checked (and named when refused); an
        // operator's server keeps the SDK's default of following only within its origin.
        ...(server.tenant ? { redirectPolicy: 'follow' as const } : {}),
      });
      await this.start(client, transport, entry);
    } else {
      entry.spawnedWith = cred?.access_token;
      const jail = this.opts.jail ?? findJail([]);
      if (!jail)
        throw new JailError(
          "bwrap (Debian's bubblewrap) is not installed, so stdio MCP servers cannot be jailed; run `npm run setup`, or set MCP_STDIO_JAIL=off to run them unjailed",
        );
      const { command, args } =
        jail === 'off' ? { command: server.command, args: server.args } : jailedCommand(server, jail);
      const transport = new StdioClientTransport({
        command,
        args,
        // Only the SDK's short list of safe variables is inherited (never VAULT_KEY), plus the server's own.
        env: { ...server.env, ...(cred ? { [MCP_TOKEN_ENV]: cred.access_token } : {}) },
        stderr: 'pipe',
      });
      transport.stderr?.on('data', (chunk: Buffer) => {
        entry.stderrTail = tailLines(entry.stderrTail + chunk.toString('utf8'), STDERR_TAIL);
      });
      await this.start(client, transport, entry);
    }
    client.onclose = () => {
      entry.closed = true;
      if (this.entries.get(key) === entry) this.entries.delete(key);
    };
    this.entries.set(key, entry);
    this.opts.log?.(`mcp: connected to ${t.serverName} for session ${t.sessionId}`);
    return entry;
  }

  private async start(client: Client, transport: StreamableHTTPClientTransport | StdioClientTransport, entry: Entry) {
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw this.withStderr(err, entry);
    }
  }

  /** A stdio server's last words usually say why it failed; the caller redacts them. */
  private withStderr(err: unknown, entry: Entry): unknown {
    if (!entry.stderrTail.trim() || !(err instanceof Error)) return err;
    const out = new Error(`${err.message} (server stderr: ${tailLines(entry.stderrTail.trim(), 500)})`);
    Object.assign(out, { code: (err as { code?: unknown }).code, cause: err.cause });
    return out;
  }

  private async drop(key: string, entry: Entry) {
    if (this.entries.get(key) === entry) this.entries.delete(key);
    if (entry.closed) return;
    entry.closed = true;
    await entry.client.close().catch(() => undefined);
  }

  private sweep() {
    const cutoff = Date.now() - this.idleMs;
    for (const [key, entry] of this.entries)
      if (entry.busy === 0 && entry.lastUsed < cutoff) void this.drop(key, entry);
  }

  /** Closes every connection and stops every stdio server this pool started. */
  async closeAll() {
    clearInterval(this.sweeper);
    await Promise.all([...this.entries].map(([key, entry]) => this.drop(key, entry)));
  }
}

/** The last `max` characters, starting at a line boundary, so a secret is never cut into an unrecognisable piece. */
export function tailLines(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(-max);
  const nl = cut.indexOf('\n');
  return nl < 0 ? '' : cut.slice(nl + 1);
}
