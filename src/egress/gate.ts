// The egress gate: every connection made on a tenant's behalf goes through one of its doors. A name is resolved
// once per connection, each address it resolves to is checked, and the socket goes to an address that was checked,
// so a DNS answer that changes between check and connect (rebinding) reaches nothing. fetch follows redirects
// itself and checks each Location before it connects; git gets the checked addresses pinned with CURLOPT_RESOLVE.
import dns from 'node:dns';
import net from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { checkAddress, checkUrl, normalHost, urlPort, type EgressPolicy, type EgressRule } from './egress-policy';
import { PlatformError } from '../session/platform-error';

/** A connection the gate refused; its message says what and why, and never holds anything the target sent. */
export class EgressRefusedError extends PlatformError {
  constructor(
    message: string,
    readonly rule: EgressRule,
  ) {
    super(message);
    this.name = 'EgressRefusedError';
  }
}

const RESOLVE_TIMEOUT_MS = 10_000;
const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export type Resolver = (host: string) => Promise<string[]>;

/** The system resolver (getaddrinfo, as connect itself would use), bounded in time. */
export function systemResolver(timeoutMs = RESOLVE_TIMEOUT_MS): Resolver {
  return (host) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(Object.assign(new Error(`resolving ${host} took longer than ${timeoutMs} ms`), { code: 'ETIMEOUT' })),
        timeoutMs,
      );
    });
    return Promise.race([
      dns.promises.lookup(host, { all: true, verbatim: true }).then((list) => list.map((a) => a.address)),
      timeout,
    ]).finally(() => clearTimeout(timer));
  };
}

/**
 * A resolver that sends no DNS query (EGRESS_DNS=off): `localhost` names are loopback, as the gate refuses them
 * anyway, and every other name is unresolvable, so a tenant URL must name an address EGRESS_ALLOW opens.
 */
export const noLookupResolver: Resolver = async (host) => {
  if (/(^|\.)localhost\.?$/i.test(host)) return ['127.0.0.1', '::1'];
  throw new Error('EGRESS_DNS=off: no name is looked up');
};

const shown = (host: string, port: number) => `${net.isIP(host) === 6 ? `[${host}]` : host}:${port}`;

export class EgressGate {
  private agent?: Agent;

  constructor(
    readonly policy: EgressPolicy,
    private readonly resolver: Resolver = systemResolver(),
  ) {}

  /**
   * The addresses a connection to `host` on `port` may use: an IP host if it passes; a name's resolved addresses
   * that pass. Refuses (EgressRefusedError) when none does, or when the name does not resolve.
   */
  async addresses(host: string, port: number): Promise<string[]> {
    const bare = host.replace(/^\[|\]$/g, '');
    const first = checkUrl(`http://${net.isIP(bare) === 6 ? `[${bare}]` : bare}:${port}/`, this.policy);
    if (first.allowed === false)
      throw new EgressRefusedError(`egress refused ${shown(bare, port)}: ${first.reason}`, first.rule);
    if (first.allowed === true && net.isIP(bare)) return [bare];
    const name = normalHost(bare);
    let resolved: string[];
    try {
      resolved = await this.resolver(name);
    } catch (err) {
      throw new EgressRefusedError(
        `egress refused ${shown(name, port)}: the name does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        'unresolvable',
      );
    }
    // A name the operator opened by name may resolve anywhere; otherwise each address answers for itself.
    if (first.allowed === true) return resolved;
    const refusals: string[] = [];
    const passed = resolved.filter((a) => {
      const d = checkAddress(a, port, this.policy);
      if (!d.allowed) refusals.push(d.reason);
      return d.allowed;
    });
    if (passed.length === 0) {
      const rule = resolved.map((a) => checkAddress(a, port, this.policy)).find((d) => !d.allowed);
      throw new EgressRefusedError(
        `egress refused ${shown(name, port)}: it resolves to ${refusals.length ? refusals.join('; ') : 'no address'}`,
        rule && !rule.allowed ? rule.rule : 'unresolvable',
      );
    }
    return passed;
  }

  /** The refusal of a URL decided without resolving it (an IP host, a refused or loopback name), or undefined. */
  literalRefusal(url: string | URL): EgressRefusedError | undefined {
    let u: URL;
    try {
      u = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return new EgressRefusedError(`egress refused ${JSON.stringify(String(url).slice(0, 200))}: not a URL`, 'scheme');
    }
    const d = checkUrl(u, this.policy);
    return d.allowed === false
      ? new EgressRefusedError(
          `egress refused ${shown(u.hostname.replace(/^\[|\]$/g, ''), urlPort(u))}: ${d.reason}`,
          d.rule,
        )
      : undefined;
  }

  /** Checks a URL as a connection to it would be checked, resolving its name; the reason it is refused, or undefined. */
  async refusal(url: string | URL): Promise<EgressRefusedError | undefined> {
    const early = this.literalRefusal(url);
    if (early) return early;
    const u = typeof url === 'string' ? new URL(url) : url;
    try {
      await this.addresses(u.hostname, urlPort(u));
      return undefined;
    } catch (err) {
      if (err instanceof EgressRefusedError) return err;
      throw err;
    }
  }

  /** The undici dispatcher whose every socket goes to an address the gate checked. */
  dispatcher(): Agent {
    if (this.agent) return this.agent;
    const base = buildConnector({});
    const connect: buildConnector.connector = (opts, callback) => {
      const port = opts.port ? Number(opts.port) : opts.protocol === 'https:' ? 443 : 80;
      this.addresses(opts.hostname, port).then(
        ([address]) =>
          base(
            {
              ...opts,
              hostname: address,
              servername: opts.servername || (net.isIP(opts.hostname) ? undefined : opts.hostname),
            },
            callback,
          ),
        (err: Error) => callback(err, null),
      );
    };
    this.agent = new Agent({ connect });
    return this.agent;
  }

  /**
   * fetch through the gate. Redirects are followed here, each Location checked before anything connects to it;
   * one to a refused target throws, its response discarded. Credentials are not carried to another origin.
   */
  readonly fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    let url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    let method = (init.method ?? 'GET').toUpperCase();
    let body = init.body;
    const headers = new Headers(init.headers);
    const follow = init.redirect !== 'manual' && init.redirect !== 'error';
    for (let hop = 0; ; hop++) {
      const refused = checkUrl(url, this.policy);
      if (refused.allowed === false)
        throw new EgressRefusedError(
          `egress refused ${hop ? 'a redirect to ' : ''}${shown(url.hostname.replace(/^\[|\]$/g, ''), urlPort(url))}: ${refused.reason}`,
          refused.rule,
        );
      let res: Response;
      try {
        res = (await undiciFetch(url, {
          ...(init as object),
          method,
          body,
          headers,
          redirect: 'manual',
          dispatcher: this.dispatcher(),
        } as never)) as unknown as Response;
      } catch (err) {
        const cause = (err as { cause?: unknown }).cause;
        if (cause instanceof EgressRefusedError)
          throw hop
            ? new EgressRefusedError(
                cause.message.replace(/^egress refused /, 'egress refused a redirect to '),
                cause.rule,
              )
            : cause;
        throw err;
      }
      const location = res.headers.get('location');
      if (!REDIRECTS.has(res.status) || !location || !follow) {
        if (REDIRECTS.has(res.status) && init.redirect === 'error')
          throw new TypeError(`redirect from ${url.origin} refused (redirect: error)`);
        return res;
      }
      await res.body?.cancel().catch(() => undefined);
      if (hop >= MAX_REDIRECTS)
        throw new EgressRefusedError(`egress refused ${url.origin}: more than ${MAX_REDIRECTS} redirects`, 'scheme');
      const next = new URL(location, url);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = undefined;
        for (const h of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'])
          headers.delete(h);
      } else if (body instanceof ReadableStream) {
        throw new EgressRefusedError(
          `egress refused a redirect to ${next.origin}: a streamed body cannot be sent again`,
          'scheme',
        );
      }
      if (next.origin !== url.origin)
        for (const h of ['authorization', 'cookie', 'proxy-authorization']) headers.delete(h);
      url = next;
    }
  };

  /**
   * Arguments for a host git talking to `url`: its checked addresses pinned (http.curloptResolve, under both
   * spellings of the name, with and without a trailing dot), redirects not followed, and only http(s) allowed;
   * and the URL to give git.
   */
  async gitArgs(url: string): Promise<{ args: string[]; url: string }> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new EgressRefusedError(`egress refused the repository URL: only http(s) URLs are allowed for it`, 'scheme');
    }
    const d = checkUrl(u, this.policy);
    if (d.allowed === false)
      throw new EgressRefusedError(
        `egress refused ${shown(u.hostname.replace(/^\[|\]$/g, ''), urlPort(u))}: ${d.reason}`,
        d.rule,
      );
    const port = urlPort(u);
    const args = [
      '-c',
      'http.followRedirects=false',
      '-c',
      'protocol.allow=never',
      '-c',
      'protocol.http.allow=always',
      '-c',
      'protocol.https.allow=always',
    ];
    const host = u.hostname.replace(/^\[|\]$/g, '');
    // Resolved once: the addresses checked are the addresses git connects to.
    const addresses = (await this.addresses(host, port)).map((a) => (net.isIP(a) === 6 ? `[${a}]` : a)).join(',');
    // git is handed the URL as WHATWG spelled it, so curl reads the host the gate checked (127.1 becomes 127.0.0.1).
    if (net.isIP(host)) return { args, url: u.href };
    const names = new Set([host, host.replace(/\.+$/, ''), `${host.replace(/\.+$/, '')}.`]);
    for (const name of names) args.push('-c', `http.curloptResolve=${name}:${port}:${addresses}`);
    return { args, url: u.href };
  }

  async close(): Promise<void> {
    await this.agent?.close();
    this.agent = undefined;
  }
}
