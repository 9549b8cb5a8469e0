// git_push and git_pull for a sandbox: commits cross between the workspace and the host-side mirror as
// bundles, and only the host talks to upstream, with a token the sandbox never sees.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SandboxProvider } from '../sandbox/provider';
import {
  bundleBranch,
  explain,
  mirrorPath,
  pushBundle,
  revParse,
  syncMirror,
  upstreamOf,
  GitError,
} from '../sandbox/host-git';
import type { EgressGate } from '../egress';
import { BRANCH_NAME_RE, type GitInput } from '../tools/git';
import { redact } from '../vault';
import type { GitContext, ToolOutput } from './hands-contract';

const BUNDLE_DIR = '/tmp/.ma-git';

/** `egress` checks a tenant's repository (from the API) before each fetch and push, and pins what it checked. */
export function createGitOps(provider: SandboxProvider, mirrorsDir: string | undefined, egress?: EgressGate) {
  /** Runs a script in the sandbox (with the workspace's own git config: harmless there, nothing to steal). */
  const inSandbox = async (sandboxId: string, key: string, script: string, env: Record<string, string>) =>
    provider.execute(sandboxId, { key, script, env, timeoutSeconds: 120, maxOutputBytes: 16 * 1024 });
  /** The same, in the repository's directory (workdir, or the recipe's `path` under it). */
  const inRepo = async (
    git: GitContext,
    sandboxId: string,
    key: string,
    script: string,
    env: Record<string, string>,
  ) =>
    git.repo.path
      ? inSandbox(sandboxId, key, `cd -- "$MA_REPO_DIR" || exit 3; ${script}`, { ...env, MA_REPO_DIR: git.repo.path })
      : inSandbox(sandboxId, key, script, env);

  const withTemp = async <T>(fn: (dir: string) => Promise<T>): Promise<T> => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ma-bundle-'));
    try {
      return await fn(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  /** The mirror of the sandbox as it was made, so one handed to another session keeps (and frees) the same one. */
  const mirrorOf = async (sandboxId: string, git: GitContext): Promise<string> => {
    const made = (await provider.origin(sandboxId)) ?? git;
    return mirrorPath(mirrorsDir, made.sessionId, made.name);
  };

  const fail = (message: string, token: string | undefined): ToolOutput => ({
    output: redact(message, token ? [token] : []),
    isError: true,
  });

  return {
    async push(
      sandboxId: string,
      toolUseId: string,
      git: GitContext,
      input: GitInput,
      token: string | undefined,
    ): Promise<ToolOutput> {
      const file = `${BUNDLE_DIR}/${toolUseId.replace(/[^A-Za-z0-9_.-]/g, '_')}.bundle`;
      const made = await inRepo(
        git,
        sandboxId,
        `${toolUseId}-bundle`,
        'b="$MA_BRANCH"; if [ -z "$b" ]; then b=$(git symbolic-ref --short -q HEAD) || { echo "not on a branch: name one"; exit 3; }; fi; ' +
          'git rev-parse -q --verify "refs/heads/$b" >/dev/null || { echo "no local branch $b"; exit 3; }; ' +
          'mkdir -p "$(dirname "$MA_FILE")" && git bundle create -q "$MA_FILE" "refs/heads/$b" >/dev/null 2>&1 || { echo "git bundle failed"; exit 4; }; echo "$b"',
        { MA_BRANCH: input.branch ?? '', MA_FILE: file },
      );
      if (made.exitCode !== 0) return fail(`git_push: ${made.output.trim()}`, token);
      // The sandbox reports the branch; it is hostile, so the name must be a plain branch before host git sees it.
      const branch = made.output.trim().split('\n').pop()!;
      if (!BRANCH_NAME_RE.test(branch))
        return fail(`git_push: ${JSON.stringify(branch.slice(0, 200))} is not a plain branch name`, token);
      const mirror = await mirrorOf(sandboxId, git);
      try {
        const upstream = await upstreamOf(git.repo, egress);
        await syncMirror(mirror, upstream, token);
        return await withTemp(async (dir) => {
          const bundle = path.join(dir, 'push.bundle');
          fs.writeFileSync(bundle, await provider.copyOut(sandboxId, file));
          const pushed = await pushBundle(mirror, bundle, branch, token, input.force === true, upstream);
          const report = (pushed.stdout + pushed.stderr).trim();
          if (pushed.code !== 0)
            return fail(`git_push of ${branch} was rejected by upstream: ${explain(pushed)}\n${report}`, token);
          const sha = await revParse(mirror, `refs/ma-push/${branch}`);
          await inRepo(
            git,
            sandboxId,
            `${toolUseId}-track`,
            'git update-ref "refs/remotes/origin/$MA_BRANCH" "$MA_SHA"',
            { MA_BRANCH: branch, MA_SHA: sha },
          );
          return {
            output: redact(
              `pushed ${branch} (${sha.slice(0, 12)}) to ${git.repo.url}\n${report}`,
              token ? [token] : [],
            ),
            isError: false,
          };
        });
      } catch (err) {
        if (err instanceof GitError) return fail(`git_push: ${err.message}`, token);
        throw err;
      }
    },

    async pull(
      sandboxId: string,
      toolUseId: string,
      git: GitContext,
      input: GitInput,
      token: string | undefined,
    ): Promise<ToolOutput> {
      let branch = input.branch;
      if (!branch) {
        const head = await inRepo(git, sandboxId, `${toolUseId}-head`, 'git symbolic-ref --short -q HEAD', {});
        if (head.exitCode !== 0) return fail('git_pull: not on a branch: name one', token);
        branch = head.output.trim();
        if (!BRANCH_NAME_RE.test(branch))
          return fail(`git_pull: ${JSON.stringify(branch.slice(0, 200))} is not a plain branch name`, token);
      }
      const mirror = await mirrorOf(sandboxId, git);
      try {
        await syncMirror(mirror, await upstreamOf(git.repo, egress), token);
        const name = `${toolUseId.replace(/[^A-Za-z0-9_.-]/g, '_')}.bundle`;
        await withTemp(async (dir) => {
          await bundleBranch(mirror, branch!, path.join(dir, name));
          await inSandbox(sandboxId, `${toolUseId}-dir`, 'mkdir -p "$MA_DIR"', { MA_DIR: BUNDLE_DIR });
          await provider.copyIn(sandboxId, BUNDLE_DIR, name, fs.readFileSync(path.join(dir, name)));
        });
        const merged = await inRepo(
          git,
          sandboxId,
          `${toolUseId}-merge`,
          'git fetch -q "$MA_FILE" "+refs/heads/$MA_BRANCH:refs/remotes/origin/$MA_BRANCH" && ' +
            'if git rev-parse -q --verify "refs/heads/$MA_BRANCH" >/dev/null; then ' +
            '[ "$(git symbolic-ref --short -q HEAD)" = "$MA_BRANCH" ] || git checkout -q "$MA_BRANCH"; git merge --ff-only "origin/$MA_BRANCH"; ' +
            'else git checkout -q -b "$MA_BRANCH" "origin/$MA_BRANCH" && echo "checked out $MA_BRANCH"; fi',
          { MA_FILE: `${BUNDLE_DIR}/${name}`, MA_BRANCH: branch },
        );
        return {
          output: redact(merged.output.trim() || `${branch} is up to date`, token ? [token] : []),
          isError: merged.exitCode !== 0,
        };
      } catch (err) {
        if (err instanceof GitError) return fail(`git_pull: ${err.message}`, token);
        throw err;
      }
    },
  };
}
