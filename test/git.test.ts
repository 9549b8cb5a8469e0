// Git without the token: a private repo over authenticated HTTP, cloned, pushed and pulled by the hands host
// while the sandbox never holds the token.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { endSignal } from '../src/session/contract';
import { FileVault } from '../src/vault';
import { loadConfig } from '../src/config';
import { mirrorPath } from '../src/sandbox/host-git';
import { allEvents, startHarness, startSession, type Harness } from './helpers/env';
import { bash, callTool } from './helpers/hands';
import { startGitServer, type GitServer } from './helpers/git-server';

const TOKEN = `ghp_${crypto.randomBytes(12).toString('hex')}`;
let h: Harness;
let git: GitServer;
let vaultDir: string;
let repoUrl: string;

beforeAll(async () => {
  git = await startGitServer([TOKEN]);
  repoUrl = git.createRepo('private.git', { 'README.md': '# private\n', 'src/app.txt': 'v1\n' });
  vaultDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-vault-'));
  const vault = new FileVault(vaultDir, crypto.randomBytes(32).toString('base64'));
  await vault.put('alice', 'git-token', TOKEN);
  await vault.put('mallory', 'git-token', 'ghp_wrong');
  h = await startHarness({ role: 'all', hostId: `test-git-${process.pid}`, vault });
});
afterAll(async () => {
  await h?.stop();
  await git?.stop();
  fs.rmSync(vaultDir, { recursive: true, force: true });
});

const agentFor = (vault: string) => ({
  vault,
  sandboxes: { main: { repo: { url: repoUrl, ref: 'main', credential: 'vault:git-token' } } },
  tools: ['bash' as const, 'git_push' as const, 'git_pull' as const, 'session_events' as const],
});

const upstreamLog = () => git.git('private.git', 'log', '--format=%s', 'main').trim().split('\n');

describe('git through the hands host', () => {
  it('clones a private repo, pushes a commit made in the sandbox, and pulls one made upstream', async () => {
    const handle = await startSession(h, { agent: agentFor('alice') });
    const cloned = await bash(
      h,
      handle,
      'cat README.md; git log --format=%s; git remote get-url origin; git config --list --show-origin | grep -ci token; env | grep -ci ghp_',
    );
    expect(cloned.output).toBe(`# private\ninitial\n${repoUrl}\n0\n0\n[exit 1]`);

    await bash(
      h,
      handle,
      'echo v2 > src/app.txt && git -c user.name=agent -c user.email=agent@example.com commit -qam "agent change"',
    );
    const pushed = await callTool(h, handle, 'git_push', {});
    expect(pushed.isError).toBe(false);
    expect(pushed.output).toMatch(/^pushed main \([0-9a-f]{12}\) to http:\/\/127\.0\.0\.1:\d+\/private\.git/);
    expect(upstreamLog()).toEqual(['agent change', 'initial']);
    expect((await bash(h, handle, 'git status -sb | head -1')).output).toBe('## main...origin/main\n[exit 0]');

    // Someone else pushes upstream; git_pull brings it into the workspace.
    git.commitUpstream('private.git', { NEWS: 'from upstream\n' }, 'upstream change');
    const pulled = await callTool(h, handle, 'git_pull', {});
    expect(pulled.isError).toBe(false);
    expect((await bash(h, handle, 'cat NEWS; git log --format=%s | head -1')).output).toBe(
      'from upstream\nupstream change\n[exit 0]',
    );

    // Every request upstream carried the token; the log of the session never does.
    expect(git.seen.some((s) => s.includes('Basic'))).toBe(true);
    expect(JSON.stringify(await allEvents(handle))).not.toContain(TOKEN);
    await handle.signal(endSignal, {});
  });

  it('returns a rejected push as a readable error without the token', async () => {
    const handle = await startSession(h, { agent: agentFor('alice') });
    await bash(h, handle, 'git -c user.name=a -c user.email=a@b commit -q --allow-empty -m "diverging change"');
    git.git(
      'private.git',
      'update-ref',
      'refs/heads/main',
      git.git('private.git', 'commit-tree', '-p', 'main', '-m', 'moved on', 'main^{tree}').trim(),
    );
    const rejected = await callTool(h, handle, 'git_push', {});
    expect(rejected.isError).toBe(true);
    expect(rejected.output).toMatch(/rejected by upstream/);
    expect(rejected.output).toMatch(/\[rejected\]|non-fast-forward|fetch first/);
    expect(rejected.output).not.toContain(TOKEN);
    await handle.signal(endSignal, {});
  });

  it('gives a clean error for a wrong token and for an expired one', async () => {
    const wrong = await startSession(h, { agent: agentFor('mallory') });
    const denied = await bash(h, wrong, 'ls');
    expect(denied).toMatchObject({ isError: true, error: { kind: 'infra' } });
    expect(denied.output).toMatch(/sandbox main could not be provisioned: .*upstream refused the credential/);
    expect(denied.output).not.toContain('ghp_wrong');
    await wrong.signal(endSignal, {});

    const handle = await startSession(h, { agent: agentFor('alice') });
    await bash(h, handle, 'git -c user.name=a -c user.email=a@b commit -q --allow-empty -m "late change"');
    git.tokens.delete(TOKEN);
    try {
      const expired = await callTool(h, handle, 'git_push', {});
      expect(expired.isError).toBe(true);
      expect(expired.output).toMatch(/upstream refused the credential/);
      expect(expired.output).not.toContain(TOKEN);
    } finally {
      git.tokens.add(TOKEN);
    }
    await handle.signal(endSignal, {});
  });

  it("refuses a credential that is not in the session's own vault", async () => {
    const handle = await startSession(h, { agent: agentFor('bob') });
    const r = await bash(h, handle, 'ls');
    expect(r).toMatchObject({ isError: true, error: { kind: 'infra' } });
    expect(r.output).toMatch(/no secret git-token in vault bob/);
    await handle.signal(endSignal, {});
  });

  it("keeps the host's git mirror while the sandbox lives and removes it when the sandbox is destroyed", async () => {
    const handle = await startSession(h, { agent: agentFor('alice') });
    const mirror = mirrorPath(path.join(loadConfig().dataDir, 'mirrors'), handle.workflowId, 'main');
    await bash(h, handle, 'git -c user.name=a -c user.email=a@b commit -q --allow-empty -m "through the mirror"');
    expect((await callTool(h, handle, 'git_push', { branch: 'main' })).isError).toBe(false);
    expect(fs.existsSync(path.join(mirror, 'HEAD'))).toBe(true);
    await handle.signal(endSignal, {});
    await handle.result();
    expect(fs.existsSync(mirror)).toBe(false);
  });
});
