// The agent file (`--agent FILE`): one zod schema, extended as the platform grows.
import { z } from 'zod';

export const BUILTIN_TOOLS = ['session_events'] as const;

export const ModelRetrySchema = z
  .object({
    maxAttempts: z.number().int().min(1).max(100).default(10),
    initialIntervalMs: z.number().int().min(1).default(1000),
    backoffCoefficient: z.number().min(1).default(2),
    maximumIntervalMs: z.number().int().min(1).default(60_000),
  })
  .strict();

export const LimitsSchema = z
  .object({
    maxToolRoundsPerTurn: z.number().int().min(1).default(500),
    contextTokens: z.number().int().min(1000).default(150_000),
    maxOutputTokens: z.number().int().min(1).default(8192),
    /** A model call whose worker stops heartbeating for this long is retried elsewhere. */
    modelHeartbeatTimeoutMs: z.number().int().min(1000).default(10_000),
    modelRetry: ModelRetrySchema.default(ModelRetrySchema.parse({})),
  })
  .strict();

export const AgentSchema = z
  .object({
    name: z.string().min(1).max(100).default('default'),
    model: z.string().min(1),
    system: z.string().max(200_000).optional(),
    harness: z.string().regex(/^[a-z][a-z0-9-]*@\d+$/, 'harness is NAME@VERSION, e.g. default@1').default('default@1'),
    tools: z
      .array(z.enum(BUILTIN_TOOLS))
      .default([...BUILTIN_TOOLS])
      .refine((t) => new Set(t).size === t.length, 'tools must not repeat'),
    limits: LimitsSchema.default(LimitsSchema.parse({})),
  })
  .strict();

export type Agent = z.infer<typeof AgentSchema>;
export type AgentInput = z.input<typeof AgentSchema>;

export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/** The built-in default agent, used when no `--agent` file is given. */
export function defaultAgent(model: string = DEFAULT_MODEL): Agent {
  return AgentSchema.parse({ name: 'default', model });
}

/** Formats zod issues as one line per problem, naming the field. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}
