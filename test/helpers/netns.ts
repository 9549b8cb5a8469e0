// A network namespace joined to this machine by a veth pair, routing only to one TCP port, and workers run inside it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { spawnWorker, type ChildWorker } from './child-worker';

const exec = promisify(execFile);

/** Runs `ip ARGS`; a failure carries ip's own message. */
export async function ip(...args: string[]): Promise<string> {
  try {
    return (await exec('ip', args)).stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`ip ${args.join(' ')} failed: ${(e.stderr || e.message).trim()}`);
  }
}

export interface Netns {
  name: string;
  /** The veth ends: `hostVeth` stays in this namespace, `nsVeth` lives in the new one. */
  hostVeth: string;
  nsVeth: string;
  hostIp: string;
  nsIp: string;
  /** The routing table, inside the namespace, that holds its only route. */
  table: number;
  /** Runs a command inside the namespace and returns its stdout. */
  exec(cmd: string, args: string[]): Promise<string>;
  /** Deletes the namespace and the veth pair; safe to call twice. */
  remove(): Promise<void>;
}

/** Deletes a namespace and a veth by name, ignoring what is already gone. */
async function removeNetns(name: string, hostVeth: string): Promise<void> {
  await ip('netns', 'del', name).catch(() => undefined);
  // Deleting the namespace destroys its veth end, and with it the pair; this is for a half-built setup.
  await ip('link', 'del', hostVeth).catch(() => undefined);
}

/**
 * Creates namespace `name` and a veth pair into it: this machine's end gets HOST/30 and the namespace's end
 * NS/30. The namespace has no IPv6, no default route and no route in its main table: one policy rule sends
 * TCP to HOST:`onlyTcpPort` out through the pair, and any other destination or port is unreachable. Without
 * `onlyTcpPort`, its main table routes to HOST (any port, either way) and nowhere else: a host of its own, with
 * its own loopback, like a container on a private network.
 * The /30 comes from the pid, so parallel test processes get different ones.
 */
export async function createNetns(opts: { name: string; onlyTcpPort?: number }): Promise<Netns> {
  const pid = process.pid;
  const hostVeth = `ma${pid}h`;
  const nsVeth = `ma${pid}n`;
  const base = (pid & 63) * 4;
  const subnet = `10.213.${(pid >> 6) & 255}`;
  const hostIp = `${subnet}.${base + 1}`;
  const nsIp = `${subnet}.${base + 2}`;
  const table = 100;
  const { name } = opts;
  const inNs = async (cmd: string, args: string[]) =>
    (await exec('ip', ['netns', 'exec', name, cmd, ...args], { timeout: 30_000 })).stdout;

  // A crashed earlier run with the same pid left these behind.
  await removeNetns(name, hostVeth);
  const taken = (await ip('-o', '-4', 'addr', 'show', 'to', `${subnet}.${base}/30`)).trim();
  if (taken) throw new Error(`the test subnet ${subnet}.${base}/30 is already in use on this machine: ${taken}`);

  try {
    await ip('netns', 'add', name);
  } catch (err) {
    throw new Error(
      `cannot create a network namespace (this test needs root, or CAP_SYS_ADMIN and CAP_NET_ADMIN): ${(err as Error).message}`,
    );
  }
  try {
    // No IPv6: a veth would otherwise get a link-local address that reaches this machine on any port.
    await inNs('sh', [
      '-c',
      '[ ! -d /proc/sys/net/ipv6 ] || { echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; }',
    ]);
    await ip('link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', nsVeth, 'netns', name);
    await ip('addr', 'add', `${hostIp}/30`, 'dev', hostVeth);
    await ip('link', 'set', hostVeth, 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    await ip('-n', name, 'addr', 'add', `${nsIp}/30`, 'dev', nsVeth, 'noprefixroute');
    await ip('-n', name, 'link', 'set', nsVeth, 'up');
    if (opts.onlyTcpPort === undefined)
      await ip('-n', name, 'route', 'add', `${hostIp}/32`, 'dev', nsVeth, 'src', nsIp);
    else {
      await ip('-n', name, 'route', 'add', `${hostIp}/32`, 'dev', nsVeth, 'src', nsIp, 'table', String(table));
      await ip(
        '-n',
        name,
        'rule',
        'add',
        'pref',
        '100',
        'to',
        `${hostIp}/32`,
        'ipproto',
        'tcp',
        'dport',
        String(opts.onlyTcpPort),
        'table',
        String(table),
      );
    }
  } catch (err) {
    await removeNetns(name, hostVeth);
    throw err;
  }
  return { name, hostVeth, nsVeth, hostIp, nsIp, table, exec: inNs, remove: () => removeNetns(name, hostVeth) };
}

const PROBE = `
const [host, port] = process.argv.slice(1);
const s = require('node:net').connect({ host, port: Number(port) });
s.setTimeout(5000, () => { process.stdout.write('timeout'); s.destroy(); });
s.on('connect', () => { process.stdout.write('connected'); s.destroy(); });
s.on('error', (e) => process.stdout.write(e.code || e.message));
`;

/** Opens a TCP connection to HOST:PORT, from inside `ns` if given: `connected`, the error code (ECONNREFUSED, ENETUNREACH, …) or `timeout`. */
export async function tcpProbe(host: string, port: number, ns?: string): Promise<string> {
  const argv = [process.execPath, '-e', PROBE, host, String(port)];
  const [cmd, ...args] = ns ? ['ip', 'netns', 'exec', ns, ...argv] : argv;
  return (await exec(cmd, args, { timeout: 30_000 })).stdout.trim();
}

/** Runs `agents worker --role ROLE` inside namespace `ns` (`ip netns exec` execs node, so the child is the worker). */
export function spawnWorkerInNetns(
  ns: string,
  env: Record<string, string | undefined>,
  role = 'hands',
): Promise<ChildWorker> {
  return spawnWorker(env, role, ['ip', 'netns', 'exec', ns]);
}
