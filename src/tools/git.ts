// git_push and git_pull: the workspace's repository and its upstream, run on the hands host with credentials
// the sandbox never sees.
import { z } from 'zod';
import { defineTool, oneLine } from './kind';
import { shared } from '../session/shared';

/** A plain branch name: no option-like start, no `..`, `@{`, wildcard or refspec characters. */
export const BRANCH_NAME_RE = /^(?!.*\.\.)(?!\/)(?!.*\/$)(?!.*@\{)(?!-)[A-Za-z0-9._/-]{1,200}$/;

const branch = () => z.string().regex(BRANCH_NAME_RE, 'branch must be a plain branch name').optional();

export const GitInputSchema = shared('git.GitInputSchema', () =>
  z
    .object({
      branch: branch(),
      force: z.boolean().describe('allow a non-fast-forward push').optional(),
    })
    .strict(),
);
export type GitInput = z.infer<typeof GitInputSchema>;

/** git_pull takes a branch only: force means nothing to a fast-forward. */
export const GitPullInputSchema = shared('git.GitPullInputSchema', () => z.object({ branch: branch() }).strict());
export type GitPullInput = z.infer<typeof GitPullInputSchema>;

export const gitPush = defineTool({
  kind: 'git_push',
  runs: 'sandbox',
  needsRepo: true,
  input: GitInputSchema,
  summary: (name) => oneLine(name),
  description:
    "Pushes a branch of the workspace's repository to its upstream (origin). Commit first with bash. " +
    'The push runs outside your sandbox with credentials you never see. Default: the current branch.',
});

export const gitPull = defineTool({
  kind: 'git_pull',
  runs: 'sandbox',
  needsRepo: true,
  input: GitPullInputSchema,
  summary: (name) => oneLine(name),
  description:
    'Fetches a branch from the upstream (origin) into refs/remotes/origin/<branch> and fast-forwards the local branch to it. ' +
    'Default: the current branch.',
});
