// Host-side git for sandboxes: the token lives only in this process's memory and in the child git's
// environment. The workspace is hostile, so host git never runs in it: it works on a host-owned mirror and
// exchanges commits with the sandbox as bundles (plain data), with hooks, fsmonitor and helpers turned off.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { redact } from '../vault';
import { resourceName } from './names';
import { EgressRefusedError, type EgressGate } from '../egress';
import { PlatformError } from '../session/platform-error';

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Configuration that keeps any config, hook or helper but ours out of host-side git. */
const SAFE_ARGS = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'credential.helper=',
  '-c',
  'core.sshCommand=false',
  '-c',
  'protocol.ext.allow=never',
];

function gitEnv(token: string | undefined, home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    LANG: 'C',
  };
  if (token) {
    // Through the environment, not argv, so the token is not in any process's command line.
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  }
  return env;
}

/** `pre`: configuration before the command, such as the egress gate's pinned addresses. */
export async function hostGit(
  args: string[],
  opts: { cwd?: string; token?: string; pre?: string[] } = {},
): Promise<GitResult> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ma-git-home-'));
  try {
    return await new Promise<GitResult>((resolve, reject) => {
      const child = spawn('git', [...SAFE_ARGS, ...(opts.pre ?? []), ...args], {
        cwd: opts.cwd ?? home,
        env: gitEnv(opts.token, home),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => {
        const secrets = opts.token ? [opts.token] : [];
        resolve({ code: code ?? 1, stdout: redact(stdout, secrets), stderr: redact(stderr, secrets) });
      });
    });
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

export class GitError extends PlatformError {}

/** git's own words, led by a plain statement when upstream refused the credential. */
export function explain(r: GitResult): string {
  const text = (r.stderr || r.stdout).trim().slice(-2000);
  return AUTH_FAILURE.test(text) ? `upstream refused the credential (wrong, expired or missing token). ${text}` : text;
}

const AUTH_FAILURE = /Authentication failed|could not read Username|askpass|HTTP 40[13]|returned error: 40[13]/;

async function must(
  args: string[],
  opts: { cwd?: string; token?: string; pre?: string[] },
  what: string,
): Promise<GitResult> {
  const r = await hostGit(args, opts);
  if (r.code !== 0) throw new GitError(`${what} failed (exit ${r.code}): ${explain(r)}`);
  return r;
}

/** How host git reaches a repository: the URL to give it, and configuration for every command that talks to it. */
export interface Upstream {
  url: string;
  args: string[];
}

/**
 * The upstream of `repo`. A tenant's repository (`tenant: true`, from the API) is checked by the egress gate and
 * reached only at the addresses it checked, without redirects; a refusal is a GitError saying why.
 */
export async function upstreamOf(
  repo: { url: string; tenant?: true },
  gate: EgressGate | undefined,
): Promise<Upstream> {
  if (!repo.tenant) return { url: repo.url, args: [] };
  if (!gate)
    throw new GitError(`egress refused ${repo.url}: this hands host has no egress gate for a tenant's repository`);
  try {
    return await gate.gitArgs(repo.url);
  } catch (err) {
    if (err instanceof EgressRefusedError) throw new GitError(err.message);
    throw err;
  }
}

/** Creates or refreshes the host-side bare mirror of `upstream`. */
export async function syncMirror(mirror: string, upstream: Upstream, token?: string): Promise<void> {
  if (!fs.existsSync(path.join(mirror, 'HEAD'))) {
    fs.mkdirSync(mirror, { recursive: true, mode: 0o700 });
    await must(['init', '--quiet', '--bare', mirror], {}, 'git init');
    await must(['-C', mirror, 'remote', 'add', 'origin', upstream.url], {}, 'git remote add');
  }
  await must(
    ['-C', mirror, 'fetch', '--quiet', '--prune', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'],
    { token, pre: upstream.args },
    `git fetch from ${upstream.url}`,
  );
}

/** A working tree cloned from the mirror (no token needed), with origin pointing at the real upstream. */
export async function checkoutFromMirror(
  mirror: string,
  url: string,
  ref: string | undefined,
  dest: string,
  commit?: string,
): Promise<void> {
  await must(['clone', '--quiet', ...(ref ? ['--branch', ref] : []), '--', mirror, dest], {}, 'git clone');
  await must(['-C', dest, 'remote', 'set-url', 'origin', url], {}, 'git remote set-url');
  await must(['-C', dest, 'fetch', '--quiet', mirror, '+refs/heads/*:refs/remotes/origin/*'], {}, 'git fetch');
  if (commit)
    await must(['-C', dest, 'checkout', '--quiet', '--detach', commit], {}, `git checkout of commit ${commit}`);
}

/** Pushes the branch carried by `bundle` to upstream through the mirror. Returns git's report, redacted. */
export async function pushBundle(
  mirror: string,
  bundle: string,
  branch: string,
  token: string | undefined,
  force: boolean,
  upstream: Upstream,
): Promise<GitResult> {
  await must(['-C', mirror, 'bundle', 'verify', '--quiet', bundle], {}, 'git bundle verify');
  await must(
    ['-C', mirror, 'fetch', '--quiet', bundle, `+refs/heads/${branch}:refs/ma-push/${branch}`],
    {},
    'git fetch from the sandbox bundle',
  );
  return hostGit(
    ['-C', mirror, 'push', '--porcelain', 'origin', `${force ? '+' : ''}refs/ma-push/${branch}:refs/heads/${branch}`],
    { token, pre: upstream.args },
  );
}

export async function revParse(mirror: string, ref: string): Promise<string> {
  return (await must(['-C', mirror, 'rev-parse', '--verify', ref], {}, 'git rev-parse')).stdout.trim();
}

/** A bundle of one branch of the mirror, for the sandbox to fetch from. */
export async function bundleBranch(mirror: string, branch: string, out: string): Promise<void> {
  await must(['-C', mirror, 'bundle', 'create', out, `refs/heads/${branch}`], {}, 'git bundle create');
}

/** Removes the host-side mirror of a session sandbox's repo: its sandbox is destroyed, so nothing pushes through it again. */
export function removeMirror(dir: string | undefined, sessionId: string, name: string): void {
  fs.rmSync(mirrorPath(dir, sessionId, name), { recursive: true, force: true });
}

/**
 * The host-side bare mirror of a session sandbox's repo, under `dir` (default: the system temp dir). It is named
 * for the session and name the sandbox was made for, so a session it is handed to pushes through the same mirror,
 * and destroying the sandbox removes it.
 */
export function mirrorPath(dir: string | undefined, sessionId: string, name: string): string {
  return path.join(dir ?? path.join(os.tmpdir(), 'managed-agents-mirrors'), resourceName('mirror', sessionId, name));
}
