// Approval policies: which tool calls a person must approve first. Pure, so the workflow decides with it.
import { z } from 'zod';
import { shared } from './shared';

/**
 * A pattern matched against the whole subject of a call (for bash, its command). `/.../flags` is a regular
 * expression (unanchored, as written); anything else is a glob, anchored at both ends, where `*` matches any
 * run of characters (spaces and slashes too) and `?` one character.
 */
export const PatternSchema = shared('policy.PatternSchema', () =>
  z
    .string()
    .min(1)
    .max(1000)
    .superRefine((p, ctx) => {
      const re = regexOf(p);
      if (re instanceof Error)
        ctx.addIssue({ code: 'custom', message: `invalid regular expression ${p}: ${re.message}` });
    }),
);

export const RulePolicySchema = shared('policy.RulePolicySchema', () =>
  z
    .object({
      /** What a call that matches no pattern gets. */
      default: z.enum(['allow', 'ask']).default('allow'),
      /** Calls matching any of these need approval (checked before `allow`). */
      ask: z.array(PatternSchema).default([]),
      /** Calls matching any of these run without approval (when no `ask` pattern matched). */
      allow: z.array(PatternSchema).default([]),
      /** The input field matched; default: `command` for bash-like inputs that have one, else the input as JSON. */
      field: z.string().min(1).max(100).optional(),
      /** An approval nobody decides within this many seconds is decided by `onTimeout`. */
      timeoutSeconds: z
        .number()
        .int()
        .min(1)
        .max(30 * 24 * 3600)
        .optional(),
      onTimeout: z.enum(['allow', 'deny']).default('deny'),
    })
    .strict(),
);

/**
 * `auto`: a judge model decides each call before it runs, allowing it or asking a person as `always_ask` does
 * (src/workflows/approvals.ts; docs/guide/approvals-and-client-tools.md).
 */
export const ToolPolicySchema = shared('policy.ToolPolicySchema', () =>
  z.union([z.enum(['always_allow', 'always_ask', 'auto']), RulePolicySchema]),
);
export type ToolPolicy = z.infer<typeof ToolPolicySchema>;
export type ToolPolicyInput = z.input<typeof ToolPolicySchema>;

/** The verdict for one call: `rule` says which part of the policy decided, as approval_requested.policy records it. */
export interface PolicyVerdict {
  /** For `auto`, false: whether the call asks is the judge's to say (`auto` is set). */
  ask: boolean;
  /** The policy is `auto`: a judge model decides the call before it runs. */
  auto?: boolean;
  rule: string;
  timeoutSeconds?: number;
  onTimeout: 'allow' | 'deny';
}

function regexOf(pattern: string): RegExp | Error | undefined {
  const m = /^\/(.*)\/([a-z]*)$/s.exec(pattern);
  if (!m) return undefined;
  try {
    return new RegExp(m[1], m[2]);
  } catch (err) {
    return err as Error;
  }
}

function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[\\s\\S]*')
    .replace(/\?/g, '[\\s\\S]');
  return new RegExp(`^${body}$`);
}

export function matchesPattern(pattern: string, subject: string): boolean {
  const re = regexOf(pattern);
  if (re instanceof Error) return false;
  return (re ?? globToRegExp(pattern)).test(subject);
}

/** The text a policy's patterns are matched against. */
export function policySubject(input: unknown, field?: string): string {
  const obj = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  const key = field ?? (typeof obj.command === 'string' ? 'command' : undefined);
  if (key === undefined) return JSON.stringify(input ?? {});
  const value = obj[key];
  return typeof value === 'string' ? value.trim() : JSON.stringify(value ?? null);
}

/** The policy of `tool`: its own, else for an MCP tool its server's (`mcp__<server>__*`; server names hold no `__`). */
export function policyFor(policies: Readonly<Record<string, ToolPolicy>>, tool: string): ToolPolicy | undefined {
  const server = /^mcp__(.+?)__/.exec(tool)?.[1];
  return policies[tool] ?? (server !== undefined ? policies[`mcp__${server}__*`] : undefined);
}

/** Decides whether one call of `tool` needs approval. A tool with no policy is always allowed. */
export function evaluatePolicy(tool: string, policy: ToolPolicy | undefined, input: unknown): PolicyVerdict {
  if (policy === undefined) return { ask: false, rule: `${tool}: no policy`, onTimeout: 'deny' };
  if (policy === 'always_allow') return { ask: false, rule: `${tool}: always_allow`, onTimeout: 'deny' };
  if (policy === 'always_ask') return { ask: true, rule: `${tool}: always_ask`, onTimeout: 'deny' };
  if (policy === 'auto') return { ask: false, auto: true, rule: `${tool}: auto`, onTimeout: 'deny' };
  const subject = policySubject(input, policy.field);
  const common = {
    onTimeout: policy.onTimeout,
    ...(policy.timeoutSeconds !== undefined ? { timeoutSeconds: policy.timeoutSeconds } : {}),
  };
  const asked = policy.ask.find((p) => matchesPattern(p, subject));
  if (asked !== undefined) return { ask: true, rule: `${tool}: ask ${JSON.stringify(asked)}`, ...common };
  const allowed = policy.allow.find((p) => matchesPattern(p, subject));
  if (allowed !== undefined) return { ask: false, rule: `${tool}: allow ${JSON.stringify(allowed)}`, ...common };
  return { ask: policy.default === 'ask', rule: `${tool}: default ${policy.default}`, ...common };
}
