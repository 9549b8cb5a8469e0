// The egress gate's decision, over every spelling of an address and every refused range. Pure: nothing here
// connects anywhere, and names resolve through a resolver the test gives.
import {
  checkAddress,
  checkUrl,
  egressGate,
  makePolicy,
  parseAllowList,
  EgressGate,
  EgressRefusedError,
} from '../src/egress';
import { ConfigError, loadConfig } from '../src/config';

const open = makePolicy(undefined);

describe('the decision function', () => {
  it('refuses every spelling of loopback in a URL, as the address it names', () => {
    const spellings = [
      'http://127.0.0.1/',
      'http://127.1/',
      'http://127.0.1/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://017700000001/',
      'http://%31%32%37.0.0.1/',
      'http://[::1]/',
      'http://[0:0:0:0:0:0:0:1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]/',
      'http://[::ffff:0:127.0.0.1]/',
      'http://[64:ff9b::127.0.0.1]/',
      'http://[2002:7f00:1::]/',
      'http://localhost/',
      'http://localhost./',
      'http://LOCALHOST/',
      'http://api.localhost/',
      'https://127.0.0.1:8443/',
    ];
    for (const url of spellings) {
      const d = checkUrl(url, open);
      expect({ url, d }).toMatchObject({
        url,
        d: { allowed: false, rule: 'loopback', reason: expect.stringMatching(/loopback.*EGRESS_ALLOW can open it/) },
      });
    }
  });

  it('refuses the unspecified address in every spelling', () => {
    for (const url of ['http://0.0.0.0/', 'http://0/', 'http://[::]/', 'http://0x0/', 'http://[::ffff:0.0.0.0]/']) {
      expect(checkUrl(url, open)).toMatchObject({ allowed: false, rule: 'unspecified' });
    }
  });

  it('names the range each refused address falls in', () => {
    const cases: [string, string, string][] = [
      ['169.254.169.254', 'link-local', '169.254.0.0/16'],
      ['fe80::1', 'link-local', 'fe80::/10'],
      ['10.1.2.3', 'private', '10.0.0.0/8'],
      ['172.16.0.1', 'private', '172.16.0.0/12'],
      ['172.31.255.255', 'private', '172.16.0.0/12'],
      ['192.168.1.1', 'private', '192.168.0.0/16'],
      ['fd12:3456::1', 'private', 'fc00::/7'],
      ['fc00::1', 'private', 'fc00::/7'],
      ['100.64.0.1', 'cgnat', '100.64.0.0/10'],
      ['100.127.255.254', 'cgnat', '100.64.0.0/10'],
      ['224.0.0.1', 'multicast', '224.0.0.0/4'],
      ['239.255.255.250', 'multicast', '224.0.0.0/4'],
      ['ff02::1', 'multicast', 'ff00::/8'],
      ['255.255.255.255', 'broadcast', '255.255.255.255/32'],
      ['240.0.0.1', 'reserved', '240.0.0.0/4'],
      ['198.18.0.1', 'reserved', '198.18.0.0/15'],
      ['192.0.0.8', 'reserved', '192.0.0.0/24'],
      ['192.0.2.1', 'documentation', '192.0.2.0/24'],
      ['2001:db8::1', 'documentation', '2001:db8::/32'],
      ['::ffff:169.254.169.254', 'link-local', '169.254.0.0/16'],
      ['::ffff:a9fe:a9fe', 'link-local', '169.254.0.0/16'],
      ['::ffff:10.0.0.1', 'private', '10.0.0.0/8'],
      ['64:ff9b::10.0.0.1', 'private', '10.0.0.0/8'],
      ['2001::1', 'reserved', '2001::/23'],
      ['::1.2.3.4', 'reserved', '::/96'],
    ];
    for (const [ip, rule, cidr] of cases) {
      const d = checkAddress(ip, 80, open);
      expect({ ip, d }).toMatchObject({
        ip,
        d: { allowed: false, rule, reason: expect.stringContaining(`(${cidr})`) },
      });
    }
    expect(checkUrl('http://169.254.169.254/latest/meta-data/', open)).toMatchObject({
      allowed: false,
      rule: 'link-local',
      reason: expect.stringContaining('cloud metadata'),
    });
    expect(checkUrl('http://2852039166/', open)).toMatchObject({ allowed: false, rule: 'link-local' });
  });

  it('lets public addresses through, and leaves names to be resolved', () => {
    for (const ip of [
      '1.1.1.1',
      '8.8.8.8',
      '93.184.216.34',
      '172.32.0.1',
      '100.128.0.1',
      '192.169.0.1',
      '2606:4700::1111',
      '::ffff:1.1.1.1',
      '2a00:1450::1',
    ]) {
      expect({ ip, d: checkAddress(ip, 443, open) }).toEqual({ ip, d: { allowed: true } });
    }
    expect(checkUrl('https://mcp.example.com/mcp', open)).toEqual({
      allowed: 'resolve',
      host: 'mcp.example.com',
      port: 443,
    });
    expect(checkUrl('http://MCP.Example.com.:8080/', open)).toEqual({
      allowed: 'resolve',
      host: 'mcp.example.com',
      port: 8080,
    });
  });

  it('refuses schemes other than http and https', () => {
    for (const url of ['file:///etc/passwd', 'ftp://1.1.1.1/', 'gopher://1.1.1.1/', 'ssh://1.1.1.1/', 'not a url']) {
      expect(checkUrl(url, open)).toMatchObject({ allowed: false, rule: 'scheme' });
    }
  });

  it('opens exactly what EGRESS_ALLOW lists: a host on any port, a host:port, a CIDR range', () => {
    const policy = makePolicy('127.0.0.1:5000, mcp.internal, 10.1.0.0/16, [::1]:6000, git.internal:8443');
    expect(checkUrl('http://127.0.0.1:5000/', policy)).toEqual({ allowed: true, by: '127.0.0.1:5000' });
    expect(checkUrl('http://127.1:5000/', policy)).toEqual({ allowed: true, by: '127.0.0.1:5000' });
    expect(checkUrl('http://[::ffff:127.0.0.1]:5000/', policy)).toEqual({ allowed: true, by: '127.0.0.1:5000' });
    expect(checkUrl('http://127.0.0.1:5001/', policy)).toMatchObject({ allowed: false, rule: 'loopback' });
    expect(checkUrl('http://127.0.0.2:5000/', policy)).toMatchObject({ allowed: false, rule: 'loopback' });
    expect(checkUrl('http://[::1]:6000/', policy)).toEqual({ allowed: true, by: '[::1]:6000' });
    expect(checkUrl('http://[::1]:5000/', policy)).toMatchObject({ allowed: false, rule: 'loopback' });
    expect(checkUrl('http://mcp.internal:1234/', policy)).toEqual({ allowed: true, by: 'mcp.internal' });
    expect(checkUrl('http://MCP.internal./', policy)).toEqual({ allowed: true, by: 'mcp.internal' });
    expect(checkUrl('https://git.internal:8443/', policy)).toEqual({ allowed: true, by: 'git.internal:8443' });
    expect(checkUrl('https://git.internal/', policy)).toEqual({ allowed: 'resolve', host: 'git.internal', port: 443 });
    expect(checkAddress('10.1.200.3', 22, policy)).toEqual({ allowed: true, by: '10.1.0.0/16' });
    expect(checkAddress('10.2.0.1', 22, policy)).toMatchObject({ allowed: false, rule: 'private' });
  });

  it('refuses the platform’s own listen addresses and this host’s addresses unless opened', () => {
    const policy = makePolicy(
      undefined,
      [
        { host: '203.0.114.7', port: 7233, what: 'the Temporal frontend (TEMPORAL_ADDRESS)' },
        { host: 'temporal.internal', port: 7233, what: 'the Temporal frontend (TEMPORAL_ADDRESS)' },
      ],
      new Set(['198.51.99.4']),
    );
    expect(checkUrl('http://203.0.114.7:7233/', policy)).toMatchObject({
      allowed: false,
      rule: 'platform',
      reason: expect.stringContaining('TEMPORAL_ADDRESS'),
    });
    expect(checkUrl('http://203.0.114.7:7234/', policy)).toEqual({ allowed: true });
    expect(checkUrl('http://temporal.internal:7233/', policy)).toMatchObject({ allowed: false, rule: 'platform' });
    expect(checkAddress('198.51.99.4', 443, policy)).toMatchObject({ allowed: false, rule: 'this-host' });
    const opened = makePolicy('203.0.114.7:7233', policy.own, policy.hostAddresses);
    expect(checkUrl('http://203.0.114.7:7233/', opened)).toEqual({ allowed: true, by: '203.0.114.7:7233' });
  });
});

describe('EGRESS_ALLOW in the configuration', () => {
  it('accepts hosts, host:port and CIDR entries and names each bad one', () => {
    expect(
      loadConfig({ EGRESS_ALLOW: 'mcp.internal:8080, 10.0.0.0/8,127.0.0.1:9000,[::1]:7000,fd00::/8' }).EGRESS_ALLOW,
    ).toBeDefined();
    expect(parseAllowList('a.b:1,10.0.0.0/8').entries).toHaveLength(2);
    let err: unknown;
    try {
      loadConfig({ EGRESS_ALLOW: 'ok.internal,10.0.0.0/33,host:99999,http://x/,a b' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toContain('EGRESS_ALLOW "10.0.0.0/33" is not a host, host:port or CIDR range');
    expect(message).toContain('"host:99999" has a port outside 1-65535');
    expect(message).toContain('"http://x/" is not a host');
    expect(message).toContain('"a b" is not a host');
    expect(message).not.toContain('ok.internal');
  });
});

describe('resolution through the gate', () => {
  it('checks every address a name resolves to and connects only to one it checked', async () => {
    const answers: Record<string, string[]> = {
      'rebind.test': ['127.0.0.1'],
      'metadata.test': ['169.254.169.254'],
      'mixed.test': ['10.0.0.5', '93.184.216.34'],
      'public.test': ['93.184.216.34'],
    };
    const gate = new EgressGate(
      makePolicy(undefined),
      async (host) => answers[host] ?? Promise.reject(Object.assign(new Error('nx'), { code: 'ENOTFOUND' })),
    );
    await expect(gate.addresses('rebind.test', 80)).rejects.toThrow(
      /egress refused rebind\.test:80: it resolves to 127\.0\.0\.1 is a loopback address/,
    );
    await expect(gate.addresses('metadata.test', 80)).rejects.toMatchObject({ rule: 'link-local' });
    await expect(gate.addresses('mixed.test', 80)).resolves.toEqual(['93.184.216.34']);
    await expect(gate.addresses('public.test', 443)).resolves.toEqual(['93.184.216.34']);
    await expect(gate.addresses('nowhere.test', 80)).rejects.toMatchObject({
      rule: 'unresolvable',
      message: expect.stringContaining('does not resolve (ENOTFOUND)'),
    });
    const refused = await gate.refusal('http://rebind.test/');
    expect(refused).toBeInstanceOf(EgressRefusedError);
    // git is pinned to the checked address under both spellings of the name, and never follows a redirect.
    const pinned = await gate.gitArgs('https://public.test./repo.git');
    expect(pinned.args).toEqual(
      expect.arrayContaining([
        'http.followRedirects=false',
        'http.curloptResolve=public.test:443:93.184.216.34',
        'http.curloptResolve=public.test.:443:93.184.216.34',
      ]),
    );
    await expect(gate.gitArgs('http://0x7f000001/repo.git')).rejects.toMatchObject({ rule: 'loopback' });
    await expect(gate.gitArgs('file:///srv/repo.git')).rejects.toMatchObject({ rule: 'scheme' });
  });

  it('with EGRESS_DNS=off looks up no name: a name is unresolvable, localhost stays loopback, an opened address passes', async () => {
    const gate = await egressGate({
      EGRESS_DNS: 'off',
      EGRESS_ALLOW: '203.0.113.9:8080',
      TEMPORAL_ADDRESS: 'localhost:7233',
    });
    await expect(gate.addresses('tracker.internal', 443)).rejects.toMatchObject({
      rule: 'unresolvable',
      message: expect.stringContaining('EGRESS_DNS=off'),
    });
    await expect(gate.addresses('localhost', 80)).rejects.toMatchObject({ rule: 'loopback' });
    await expect(gate.addresses('203.0.113.9', 8080)).resolves.toEqual(['203.0.113.9']);
    expect(loadConfig({ EGRESS_DNS: 'off' }).EGRESS_DNS).toBe('off');
    expect(() => loadConfig({ EGRESS_DNS: 'sometimes' })).toThrow(ConfigError);
  });
});
