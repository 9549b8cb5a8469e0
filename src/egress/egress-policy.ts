// The egress gate's decision, pure and synchronous: may a connection on a tenant's behalf go to this address and
// port, or to this URL? No resolution and no I/O here; resolve.ts resolves names and asks again for each address.
import net from 'node:net';
import os from 'node:os';
import { canonicalIp, refusedRange, RULE_WORDS, type RangeRule } from './ranges';

export type EgressRule = RangeRule | 'platform' | 'this-host' | 'scheme' | 'unresolvable';

export type Decision = { allowed: true; by?: string } | { allowed: false; rule: EgressRule; reason: string };

/** One EGRESS_ALLOW entry: a host (any port), a host and port, or a CIDR range (any port). */
export type AllowEntry =
  | { kind: 'host'; host: string; port?: number; text: string }
  | { kind: 'cidr'; list: net.BlockList; family: 4 | 6; text: string };

/** A listen address of the platform itself, refused unless EGRESS_ALLOW opens it. */
export interface OwnAddress {
  host: string;
  port: number;
  /** What listens there, e.g. `the API (API_LISTEN)`. */
  what: string;
}

export interface EgressPolicy {
  allow: AllowEntry[];
  own: OwnAddress[];
  /** The addresses of this host's own interfaces (os.networkInterfaces), refused on every port. */
  hostAddresses: Set<string>;
}

/** A host as the gate compares it: lower-case, no trailing dot, no brackets, an IP address in canonical form. */
export function normalHost(host: string): string {
  const h = host.toLowerCase().replace(/\.+$/, '');
  return canonicalIp(h) ?? h;
}

/** Parses one EGRESS_ALLOW entry, or says what is wrong with it. */
export function parseAllowEntry(raw: string): AllowEntry | { problem: string } {
  const text = raw.trim();
  const bad = { problem: `${JSON.stringify(text)} is not a host, host:port or CIDR range` };
  if (text.includes('/')) {
    const [addr, bits, ...rest] = text.split('/');
    const family = net.isIP(addr);
    const n = Number(bits);
    if (rest.length || !family || !/^\d{1,3}$/.test(bits) || n > (family === 4 ? 32 : 128)) return bad;
    const list = new net.BlockList();
    list.addSubnet(addr, n, family === 4 ? 'ipv4' : 'ipv6');
    return { kind: 'cidr', list, family: family as 4 | 6, text };
  }
  let host = text;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text);
  if (bracketed) {
    if (net.isIP(bracketed[1]) !== 6) return bad;
    host = bracketed[1];
    port = bracketed[2] === undefined ? undefined : Number(bracketed[2]);
  } else if (net.isIP(text) !== 6) {
    const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(text);
    if (!m) return bad;
    host = m[1];
    port = m[2] === undefined ? undefined : Number(m[2]);
  }
  if (port !== undefined && (port < 1 || port > 65535))
    return { problem: `${JSON.stringify(text)} has a port outside 1-65535` };
  let parsed: URL;
  try {
    parsed = new URL(`http://${net.isIP(host) === 6 ? `[${host}]` : host}/`);
  } catch {
    return bad;
  }
  if (parsed.username || parsed.password || parsed.port) return bad;
  return { kind: 'host', host: normalHost(parsed.hostname.replace(/^\[|\]$/g, '')), port, text };
}

/** Every entry of a comma-separated EGRESS_ALLOW, or the problems with it. */
export function parseAllowList(value: string | undefined): { entries: AllowEntry[]; problems: string[] } {
  const entries: AllowEntry[] = [];
  const problems: string[] = [];
  for (const part of (value ?? '').split(',')) {
    if (!part.trim()) continue;
    const e = parseAllowEntry(part);
    if ('problem' in e) problems.push(e.problem);
    else entries.push(e);
  }
  return { entries, problems };
}

/** A `HOST:PORT` (or URL) setting as an own address; undefined when it names no fixed port. */
export function ownAddress(value: string | undefined, what: string, defaultPort?: number): OwnAddress | undefined {
  if (!value || value === 'off') return undefined;
  let host: string;
  let port: number;
  try {
    const u = new URL(
      /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value.replace(/^[a-z][a-z0-9+.-]*:/i, 'http:') : `http://${value}`,
    );
    host = u.hostname.replace(/^\[|\]$/g, '');
    port = u.port ? Number(u.port) : (defaultPort ?? (/^https:/i.test(value) ? 443 : 80));
  } catch {
    return undefined;
  }
  return port > 0 ? { host: normalHost(host), port, what } : undefined;
}

/** The addresses of this host's network interfaces. */
export function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) out.add(normalHost(a.address.split('%')[0]));
  return out;
}

export function makePolicy(
  allow: string | undefined,
  own: (OwnAddress | undefined)[] = [],
  hostAddresses: Set<string> = new Set(),
): EgressPolicy {
  const { entries, problems } = parseAllowList(allow);
  if (problems.length) throw new Error(`EGRESS_ALLOW: ${problems.join('; ')}`);
  return { allow: entries, own: own.filter((o): o is OwnAddress => o !== undefined), hostAddresses };
}

const hostPort = (host: string, port: number) => `${net.isIP(host) === 6 ? `[${host}]` : host}:${port}`;

/** The entry that opens `host` (a normal host) on `port`, if any. */
function allowedBy(policy: EgressPolicy, host: string, port: number): string | undefined {
  const family = net.isIP(host);
  for (const e of policy.allow) {
    if (e.kind === 'host' && e.host === host && (e.port === undefined || e.port === port)) return e.text;
    if (e.kind === 'cidr' && family === e.family && e.list.check(host, family === 4 ? 'ipv4' : 'ipv6')) return e.text;
  }
  return undefined;
}

const OPEN_HINT = 'EGRESS_ALLOW can open it';

/** Whether a connection may go to `ip` on `port`: any spelling of an IP address, judged as the address it names. */
export function checkAddress(ip: string, port: number, policy: EgressPolicy): Decision {
  const addr = canonicalIp(ip);
  if (!addr) return { allowed: false, rule: 'unresolvable', reason: `${ip} is not an IP address` };
  const by = allowedBy(policy, addr, port);
  if (by) return { allowed: true, by };
  const own = policy.own.find((o) => o.host === addr && o.port === port);
  if (own)
    return {
      allowed: false,
      rule: 'platform',
      reason: `${hostPort(addr, port)} is ${own.what}, the platform's own address; ${OPEN_HINT}`,
    };
  const range = refusedRange(addr);
  if (range)
    return {
      allowed: false,
      rule: range.rule,
      reason: `${addr} is ${RULE_WORDS[range.rule]} (${range.cidr}); ${OPEN_HINT}`,
    };
  if (policy.hostAddresses.has(addr))
    return { allowed: false, rule: 'this-host', reason: `${addr} is an address of this host; ${OPEN_HINT}` };
  return { allowed: true };
}

/** A URL's decision before any resolution: `resolve` means its host is a name to resolve and check address by address. */
export type UrlDecision = Decision | { allowed: 'resolve'; host: string; port: number };

/** The port a URL connects to. */
export function urlPort(u: URL): number {
  return u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
}

/**
 * The decision for an http(s) URL: WHATWG parsing turns every IPv4 spelling (127.1, 2130706433, 0x7f000001, 0177.0.0.1)
 * into the dotted quad, and an IP host is judged at once. A name is refused when it is the platform's own, or a
 * loopback name (localhost and *.localhost, RFC 6761); an allowed name is open; any other name must be resolved.
 */
export function checkUrl(url: string | URL, policy: EgressPolicy): UrlDecision {
  let u: URL;
  try {
    u = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return { allowed: false, rule: 'scheme', reason: `${JSON.stringify(String(url).slice(0, 200))} is not a URL` };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return { allowed: false, rule: 'scheme', reason: `${u.protocol} URLs are not allowed: only http and https` };
  const port = urlPort(u);
  const raw = u.hostname.replace(/^\[|\]$/g, '');
  if (canonicalIp(raw)) return checkAddress(raw, port, policy);
  const host = normalHost(raw);
  const by = allowedBy(policy, host, port);
  if (by) return { allowed: true, by };
  const own = policy.own.find((o) => o.host === host && o.port === port);
  if (own)
    return {
      allowed: false,
      rule: 'platform',
      reason: `${hostPort(host, port)} is ${own.what}, the platform's own address; ${OPEN_HINT}`,
    };
  if (host === 'localhost' || host.endsWith('.localhost'))
    return { allowed: false, rule: 'loopback', reason: `${host} is a loopback name; ${OPEN_HINT}` };
  return { allowed: 'resolve', host, port };
}
