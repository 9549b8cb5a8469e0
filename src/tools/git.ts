// git_push and git_pull: the workspace's repository and its upstream, run on the hands host with credentials
// the sandbox never sees.
import { z } from 'zod';
import { oneLine, type ToolKind } from './kind';
import { shared } from '../session/shared';

/** A plain branch name: no option-like start, no `..`, `@{`, wildcard or refspec characters. */
export const BRANCH_NAME_RE = /^(?!.*\.\.)(?!\/)(?!.*\/$)(?!.*@\{)(?!-)[A-Za-z0-9._/-]{1,200}$/;

export const GitInputSchema = shared('git.GitInputSchema', () => z
  .object({
    branch: z.string().regex(BRANCH_NAME_RE, 'branch must be a plain branch name').optional(),
    force: z.boolean().optional(),
  })
  .strict());
export type GitInput = z.infer<typeof GitInputSchema>;

export const gitPush: ToolKind<GitInput> = {
  kind: 'git_push',
  runs: 'sandbox',
  needsRepo: true,
  input: GitInputSchema,
  summary: (name) => oneLine(name),
  spec: {
    name: 'git_push',
    description:
      "Pushes a branch of the workspace's repository to its upstream (origin). Commit first with bash. " +
      'The push runs outside your sandbox with credentials you never see. Default: the current branch.',
    input_schema: {
      type: 'object',
      properties: { branch: { type: 'string' }, force: { type: 'boolean', description: 'allow a non-fast-forward push' } },
    },
  },
};

export const gitPull: ToolKind<GitInput> = {
  kind: 'git_pull',
  runs: 'sandbox',
  needsRepo: true,
  input: GitInputSchema,
  summary: (name) => oneLine(name),
  spec: {
    name: 'git_pull',
    description:
      'Fetches a branch from the upstream (origin) into refs/remotes/origin/<branch> and fast-forwards the local branch to it. ' +
      'Default: the current branch.',
    input_schema: { type: 'object', properties: { branch: { type: 'string' } } },
  },
};
