// The address ranges the egress gate refuses by default, and the one place an IP address is put in canonical form:
// an IPv4 address embedded in IPv6 (mapped, translated, NAT64, 6to4) is judged as the IPv4 address it reaches.
import net from 'node:net';

export type RangeRule =
  | 'unspecified'
  | 'loopback'
  | 'link-local'
  | 'private'
  | 'cgnat'
  | 'multicast'
  | 'reserved'
  | 'broadcast'
  | 'documentation';

interface Range {
  cidr: string;
  rule: RangeRule;
}

/** IANA's special-purpose registries, narrowed to what a tenant must never reach; the first match names the rule. */
const V4: Range[] = [
  { cidr: '0.0.0.0/8', rule: 'unspecified' },
  { cidr: '127.0.0.0/8', rule: 'loopback' },
  { cidr: '169.254.0.0/16', rule: 'link-local' },
  { cidr: '10.0.0.0/8', rule: 'private' },
  { cidr: '172.16.0.0/12', rule: 'private' },
  { cidr: '192.168.0.0/16', rule: 'private' },
  { cidr: '100.64.0.0/10', rule: 'cgnat' },
  { cidr: '192.0.0.0/24', rule: 'reserved' },
  { cidr: '192.0.2.0/24', rule: 'documentation' },
  { cidr: '198.51.100.0/24', rule: 'documentation' },
  { cidr: '203.0.113.0/24', rule: 'documentation' },
  { cidr: '192.88.99.0/24', rule: 'reserved' },
  { cidr: '198.18.0.0/15', rule: 'reserved' },
  { cidr: '224.0.0.0/4', rule: 'multicast' },
  { cidr: '255.255.255.255/32', rule: 'broadcast' },
  { cidr: '240.0.0.0/4', rule: 'reserved' },
];

const V6: Range[] = [
  { cidr: '::/128', rule: 'unspecified' },
  { cidr: '::1/128', rule: 'loopback' },
  // IPv4-compatible addresses (deprecated) and the discard prefix.
  { cidr: '::/96', rule: 'reserved' },
  { cidr: '100::/64', rule: 'reserved' },
  { cidr: 'fe80::/10', rule: 'link-local' },
  { cidr: 'fc00::/7', rule: 'private' },
  // Site-local (deprecated) and local-use NAT64 reach a private network.
  { cidr: 'fec0::/10', rule: 'private' },
  { cidr: '64:ff9b:1::/48', rule: 'private' },
  // IETF protocol assignments, Teredo among them (it carries an obfuscated IPv4 address).
  { cidr: '2001::/23', rule: 'reserved' },
  { cidr: '2001:db8::/32', rule: 'documentation' },
  { cidr: '3fff::/20', rule: 'documentation' },
  { cidr: 'ff00::/8', rule: 'multicast' },
];

function compile(ranges: Range[], family: 'ipv4' | 'ipv6') {
  return ranges.map((r) => {
    const [addr, bits] = r.cidr.split('/');
    const list = new net.BlockList();
    list.addSubnet(addr, Number(bits), family);
    return { ...r, list };
  });
}
const V4_LISTS = compile(V4, 'ipv4');
const V6_LISTS = compile(V6, 'ipv6');

/** The eight 16-bit groups of an IPv6 address. */
function groups(ip: string): number[] {
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1].split('.').map(Number);
    text = text.slice(0, -v4[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const fill = tail !== undefined ? Array(8 - h.length - t.length).fill('0') : [];
  return [...h, ...fill, ...t].map((g) => parseInt(g, 16));
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The address `ip` reaches, in canonical form: IPv4 dotted quad, or IPv6 compressed and lower-case. An IPv4
 * address inside IPv6 (::ffff:a.b.c.d, ::ffff:0:a.b.c.d, 64:ff9b::a.b.c.d, 2002:AABB:CCDD::) comes out as IPv4.
 * Undefined when `ip` is not an IP address.
 */
export function canonicalIp(ip: string): string | undefined {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = net.isIP(bare);
  if (family === 4) return bare.split('.').map(Number).join('.');
  if (family !== 6) return undefined;
  const g = groups(bare.toLowerCase());
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4Of(g[6], g[7]);
  if (g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0) return v4Of(g[6], g[7]);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4Of(g[6], g[7]);
  if (g[0] === 0x2002) return v4Of(g[1], g[2]);
  return compress(g);
}

function compress(g: number[]): string {
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i };
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

/** The refused range a canonical address falls in, or undefined for a public address. */
export function refusedRange(ip: string): Range | undefined {
  const family = net.isIP(ip);
  const lists = family === 4 ? V4_LISTS : family === 6 ? V6_LISTS : [];
  const hit = lists.find((r) => r.list.check(ip, family === 4 ? 'ipv4' : 'ipv6'));
  return hit && { cidr: hit.cidr, rule: hit.rule };
}

/** Words for a rule, as the refusal says them. */
export const RULE_WORDS: Record<RangeRule, string> = {
  unspecified: 'the unspecified address',
  loopback: 'a loopback address',
  'link-local': 'a link-local address (cloud metadata lives there)',
  private: 'a private address',
  cgnat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  broadcast: 'the broadcast address',
  documentation: 'a documentation address',
};
