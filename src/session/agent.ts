// The agent file (`--agent FILE`): one zod schema, extended as the platform grows.
import { z } from 'zod';
import { HARNESSES, harnessOf } from './harness';
import { ToolPolicySchema } from './policy';

import { WebFetchConfigSchema } from '../tools/web-fetch';
import {
  BUILTIN_TOOLS,
  SANDBOX_TOOLS,
  TOOL_KINDS,
  type BuiltinToolKind,
  type SandboxToolKind,
} from '../tools/registry';
import { formatIssues } from './issues';
import { RepoCredentialSchema, TaskQueueSchema, ToolNameSchema, VaultNameSchema, VaultRefSchema } from './identifiers';
import { shared } from './shared';

export { BUILTIN_TOOLS, SANDBOX_TOOLS, formatIssues, type SandboxToolKind };

export const ModelRetrySchema = shared('agent.ModelRetrySchema', () =>
  z
    .object({
      // The first retry comes soon (a call lost with its worker, or a dropped connection, is retried at once); the
      // backoff spreads the rest over about four minutes, as ten attempts from one second did.
      maxAttempts: z.number().int().min(1).max(100).default(12),
      initialIntervalMs: z.number().int().min(1).default(200),
      backoffCoefficient: z.number().min(1).default(2),
      maximumIntervalMs: z.number().int().min(1).default(60_000),
    })
    .strict(),
);

export const LimitsSchema = shared('agent.LimitsSchema', () =>
  z
    .object({
      maxToolRoundsPerTurn: z.number().int().min(1).default(500),
      contextTokens: z.number().int().min(1000).default(150_000),
      maxOutputTokens: z.number().int().min(1).default(8192),
      /** A model response that sends nothing (no first byte, no next event) for this long is abandoned and retried. */
      modelStreamIdleMs: z.number().int().min(1000).default(120_000),
      /**
       * A model call whose worker stops heartbeating for this long is retried elsewhere. The call heartbeats four
       * times per timeout; the server's load is one heartbeat per call per quarter of it (bench: crash_recovery).
       * At 1 s, a loaded 2-core machine timed out live calls (a standby worker's retries were retried again).
       */
      modelHeartbeatTimeoutMs: z.number().int().min(1000).default(2_000),
      modelRetry: ModelRetrySchema.default(ModelRetrySchema.parse({})),
      /**
       * How the model call runs. `activity` (absent: the default): an activity on the brain queue, retried on any
       * brain worker when its worker dies. `local`: a local activity, run by the worker that runs the workflow task,
       * inside that task: about one workflow task and one activity dispatch less per model call, but the task stays
       * open while the model answers, so a message, an interrupt or a reply to the update that started the turn waits
       * for the call to end (or for the task's heartbeat, every 8 s), and a worker that dies mid-call is noticed when the
       * workflow task times out (10 s), not by the peer watch (docs/guide/scaling.md).
       */
      modelCall: z.enum(['activity', 'local']).optional(),
      /** A hands host that stops heartbeating during a command for this long is treated as gone. */
      handsHeartbeatTimeoutMs: z.number().int().min(1000).default(5_000),
      /** A sandbox call that no worker of its host picks up within this long means the host is gone. */
      handsScheduleToStartMs: z.number().int().min(1000).default(10_000),
      /** Provisioning (image start, clone, setup commands) may take this long. */
      provisionTimeoutMs: z.number().int().min(1000).default(600_000),
      /** A run hands over to a new one (continue-as-new) past this many history events, or when Temporal suggests it. */
      historyEvents: z.number().int().min(100).max(10_000).default(5_000),
      /** ... or past this many history bytes. */
      historyBytes: z
        .number()
        .int()
        .min(64 * 1024)
        .max(40 * 1024 * 1024)
        .default(4 * 1024 * 1024),
      /** A run that took over children it cannot see close checks this often whether one closed without reporting. */
      subagentCheckMs: z.number().int().min(1000).default(60_000),
    })
    .strict(),
);

const EnvNameSchema = shared('agent.EnvNameSchema', () =>
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and underscores'),
);

export const SandboxRecipeSchema = shared('agent.SandboxRecipeSchema', () =>
  z
    .object({
      /** Defaults to the hands host's SANDBOX_IMAGE. */
      image: z.string().min(1).optional(),
      resources: z
        .object({
          cpus: z.number().positive().max(64).default(1),
          memoryMb: z
            .number()
            .int()
            .min(16)
            .max(1024 * 1024)
            .default(1024),
          pidsLimit: z.number().int().min(8).max(1_000_000).default(256),
        })
        .strict()
        .default({ cpus: 1, memoryMb: 1024, pidsLimit: 256 }),
      workdir: z
        .string()
        .regex(/^\/[^\0]*$/, 'workdir must be an absolute path')
        .default('/workspace'),
      /** Non-secret environment for commands. Vault references are not resolved here. */
      env: z.record(EnvNameSchema, z.string().max(32_768)).default({}),
      repo: z
        .object({
          url: z
            .string()
            .min(1)
            .refine(
              (u) => !/^[a-z]+:\/\/[^/]*@/i.test(u),
              'the repo URL must not carry credentials; use credential: vault:<name>',
            ),
          ref: z.string().min(1).optional(),
          /** A commit to check out (detached) after cloning `ref` or the default branch. */
          commit: z
            .string()
            .regex(/^[0-9a-f]{40}$/, 'commit is a full 40-character SHA')
            .optional(),
          credential: RepoCredentialSchema.optional(),
          /** Where in the workspace the repository goes, relative to workdir; git_push and git_pull work there. */
          path: z
            .string()
            .regex(
              /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/,
              'path is a relative directory of letters, digits, dot, dash or underscore',
            )
            .refine(
              (p) => !p.split('/').some((part) => part === '.' || part === '..'),
              'path must not contain . or .. parts',
            )
            .optional(),
          /**
           * Set by the API (src/api/sessions/resources.ts): the URL came from a tenant, so every git connection to it
           * passes the egress gate (src/egress). An operator's agent file leaves it out and is trusted.
           */
          tenant: z.literal(true).optional(),
        })
        .strict()
        .optional(),
      setup: z.array(z.string().min(1)).default([]),
      /** `none` is the hardened default; anything else is a loosening that sandbox_provisioned records. */
      // `host` would put the Temporal frontend and the codec server on the sandbox's loopback: never offered.
      network: z.enum(['none', 'bridge']).default('none'),
      /** Turning the read-only root filesystem off is a loosening. */
      readOnlyRootfs: z.boolean().default(true),
      idleStopMinutes: z.number().min(0.01).default(10),
      commandTimeoutSeconds: z
        .number()
        .int()
        .min(1)
        .max(24 * 3600)
        .default(300),
    })
    .strict(),
);
export type SandboxRecipe = z.infer<typeof SandboxRecipeSchema>;

/** A tool entry: a plain name, or a sandbox tool bound to a named sandbox under a name of its own. */
export const ToolEntrySchema = shared('agent.ToolEntrySchema', () =>
  z.union([
    z.enum([...BUILTIN_TOOLS, ...SANDBOX_TOOLS]),
    z
      .object({
        name: ToolNameSchema,
        tool: z.enum(SANDBOX_TOOLS),
        sandbox: z.string().min(1),
      })
      .strict(),
  ]),
);
export type ToolEntry = z.infer<typeof ToolEntrySchema>;

const CredentialRefSchema = VaultRefSchema;

/** Headers that carry credentials come from `credential`, so they never sit in the agent file (or the history). */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);

/** The env var a stdio MCP server reads its access token from. */
export const MCP_TOKEN_ENV = 'MCP_ACCESS_TOKEN';

const McpHttpServerSchema = shared('agent.McpHttpServerSchema', () =>
  z
    .object({
      transport: z.literal('http'),
      url: z
        .url({ protocol: /^https?$/, error: 'url must be an http or https URL' })
        .refine(
          (u) => !/^[a-z]+:\/\/[^/]*@/i.test(u),
          'the MCP URL must not carry credentials; use credential: vault:<name>',
        ),
      credential: CredentialRefSchema.optional(),
      /**
       * Set by the API for a session created with vault_ids: the credential for this server's URL comes from the first
       * of these vaults (of this workspace only) that holds one. Ids only; the secrets stay sealed in the database.
       */
      apiVaults: z
        .object({
          workspaceId: z.string().min(1).max(128),
          vaultIds: z.array(z.string().min(1).max(128)).min(1).max(20),
        })
        .strict()
        .optional(),
      /** Non-secret headers sent with every request. */
      headers: z
        .record(
          z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'header names are letters, digits and -'),
          z.string().max(8192),
        )
        .refine(
          (h) => !Object.keys(h).some((k) => SECRET_HEADERS.has(k.toLowerCase())),
          'credentials go in credential: vault:<name>, not in headers',
        )
        .default({}),
      timeoutSeconds: z.number().int().min(1).max(3600).default(120),
      /**
       * Set by the API (src/api/agent-file.ts): the URL came from a tenant, so every connection to it passes the egress
       * gate (src/egress). An operator's agent file leaves it out and is trusted.
       */
      tenant: z.literal(true).optional(),
    })
    .strict()
    .refine((s) => !(s.credential && s.apiVaults), {
      path: ['apiVaults'],
      message: 'a server takes its credential from credential or from apiVaults, not both',
    }),
);

const McpStdioServerSchema = shared('agent.McpStdioServerSchema', () =>
  z
    .object({
      transport: z.literal('stdio'),
      /** Runs on the tools worker's host, never in a sandbox. */
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      /** Non-secret environment; the credential's access token arrives as MCP_ACCESS_TOKEN. */
      env: z
        .record(EnvNameSchema, z.string().max(32_768))
        .refine((e) => !(MCP_TOKEN_ENV in e), `${MCP_TOKEN_ENV} is set from credential`)
        .default({}),
      credential: CredentialRefSchema.optional(),
      timeoutSeconds: z.number().int().min(1).max(3600).default(120),
    })
    .strict(),
);

export const McpServerSchema = shared('agent.McpServerSchema', () =>
  z.discriminatedUnion('transport', [McpHttpServerSchema, McpStdioServerSchema]),
);
export type McpServer = z.infer<typeof McpServerSchema>;

/** Server names are part of model tool names (mcp__<server>__<tool>), so `__` would make them ambiguous. */
const MCP_SERVER_NAME = /^(?!.*__)[a-zA-Z0-9_-]{1,40}$/;

// Names are checked here rather than as the record's key schema, so the error says what a good name is.
const McpServersSchema = shared('agent.McpServersSchema', () =>
  z.record(z.string(), McpServerSchema).superRefine((servers, ctx) => {
    for (const name of Object.keys(servers)) {
      if (!MCP_SERVER_NAME.test(name))
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'MCP server names are 1-40 letters, digits, _ or -, without __',
        });
    }
  }),
);

/** A tool the calling application runs: the session offers it to the model and waits for `submitToolResult`. */
export const ClientToolSchema = shared('agent.ClientToolSchema', () =>
  z
    .object({
      name: ToolNameSchema,
      description: z.string().min(1).max(10_000),
      input_schema: z
        .object({
          type: z.literal('object'),
          properties: z.record(z.string(), z.unknown()).default({}),
          required: z.array(z.string()).optional(),
        })
        .passthrough(),
      /**
       * `environment`: a toolset tool of a self-hosted environment, run by the operator's worker from the session's
       * work queue. The session does not wait on a person for it (its state stays running), and an answer that does
       * not come within `timeoutSeconds` becomes an error result.
       */
      runsIn: z.literal('environment').optional(),
      /** Seconds the session waits for the answer before it appends an error result; absent: no limit. */
      timeoutSeconds: z.number().int().min(1).max(86_400).optional(),
    })
    .strict(),
);
export type ClientTool = z.infer<typeof ClientToolSchema>;

export const DEFAULT_TOOLS: ToolEntry[] = ['bash', 'str_replace_based_edit_tool', 'session_events'];

const SUBAGENT_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/**
 * A sub-agent the model may start with spawn_agent {agent: NAME}: fields that replace the parent's (limits are
 * merged key by key). The child keeps the parent's vault. `taskQueue` puts the child's brain on its own workers.
 * Each entry is checked as a whole agent when the parent's agent file is parsed.
 */
export const SubagentSchema = shared('agent.SubagentSchema', () =>
  z
    .object({
      name: z.string().min(1).max(100).optional(),
      model: z.string().min(1).optional(),
      system: z.string().max(200_000).optional(),
      provision: z.enum(['lazy', 'eager']).optional(),
      tools: z.array(ToolEntrySchema).optional(),
      sandboxes: z.record(z.string(), z.unknown()).optional(),
      limits: z.record(z.string(), z.unknown()).optional(),
      promptCaching: z.boolean().optional(),
      mcpServers: z.record(z.string(), z.unknown()).optional(),
      taskQueue: TaskQueueSchema.optional(),
    })
    .strict(),
);
export type Subagent = z.infer<typeof SubagentSchema>;

export const AgentSchema = shared('agent.AgentSchema', () =>
  z
    .object({
      name: z.string().min(1).max(100).default('default'),
      model: z.string().min(1),
      system: z.string().max(200_000).optional(),
      harness: z
        .string()
        .regex(/^[a-z][a-z0-9-]*@\d+$/, 'harness is NAME@VERSION, e.g. default@1')
        .refine((h) => harnessOf(h) !== undefined, {
          error: (i) => `unknown harness ${String(i.input)}; this version knows ${Object.keys(HARNESSES).join(', ')}`,
        })
        .default('default@1'),
      provision: z.enum(['lazy', 'eager']).default('lazy'),
      tools: z.array(ToolEntrySchema).default(DEFAULT_TOOLS),
      sandboxes: z
        .record(
          z.string().regex(/^[a-z][a-z0-9-]{0,30}$/, 'sandbox names are lowercase letters, digits and -'),
          SandboxRecipeSchema,
        )
        .default({ main: SandboxRecipeSchema.parse({}) }),
      limits: LimitsSchema.default(LimitsSchema.parse({})),
      /** Cache breakpoints on the stable prefix and the rolling end of the conversation. */
      promptCaching: z.boolean().default(true),
      /** The one vault this session's credentials come from. */
      vault: VaultNameSchema.default('default'),
      /** MCP servers whose tools are offered as mcp__<server>__<tool>; reached only from tools workers. */
      mcpServers: McpServersSchema.default({}),
      /** Sub-agents spawn_agent may start by name; without a name the child is this agent minus spawn_agent. */
      subagents: z
        .record(
          z.string().regex(SUBAGENT_NAME, 'sub-agent names are lowercase letters, digits, _ or -'),
          SubagentSchema,
        )
        .default({}),
      /**
       * A coordinator's roster: the agents `delegate` may start session threads of, by name, each a whole agent
       * file of its own (checked when a thread starts). Empty: not a coordinator.
       */
      roster: z
        .array(
          z
            .object({
              name: z.string().min(1).max(256),
              description: z.string().max(2048).optional(),
              agentId: z.string().max(200).optional(),
              version: z.number().int().min(1).optional(),
              agent: z.record(z.string(), z.unknown()),
            })
            .strict(),
        )
        .max(20)
        .default([]),
      /** Tools the calling application runs (`submitToolResult`). */
      clientTools: z.array(ClientToolSchema).max(100).default([]),
      /** Per-tool approval policies, keyed by the name the model calls (an `mcp__<server>__<tool>` name too). */
      policies: z.record(z.string(), ToolPolicySchema).default({}),
      /** Offers web_fetch, run on a tools worker through the egress gate; absent: not offered. */
      webFetch: WebFetchConfigSchema.optional(),
      /** The judge of calls under the `auto` policy; absent: the agent's model, with the worker's timeout. */
      judge: z
        .object({
          /** The judge's model (default: the agent's). */
          model: z.string().min(1).optional(),
          /** A judge that has not answered within this long escalates the call to a person (default: 60 s). */
          timeoutMs: z.number().int().min(1000).max(600_000).optional(),
        })
        .strict()
        .optional(),
    })
    .strict()
    .superRefine((agent, ctx) => {
      for (const name of Object.keys(agent.subagents)) {
        const child = AgentSchema.safeParse(childAgentInput(agent as Agent, name));
        if (!child.success)
          ctx.addIssue({
            code: 'custom',
            path: ['subagents', name],
            message: `sub-agent ${name} is not a valid agent: ${formatIssues(child.error)}`,
          });
      }
      const names = new Set<string>();
      agent.tools.forEach((t, i) => {
        const bound = resolveTool(t);
        if (names.has(bound.name))
          ctx.addIssue({ code: 'custom', path: ['tools', i], message: `tool ${bound.name} is listed twice` });
        names.add(bound.name);
        if (bound.sandbox !== undefined && !(bound.sandbox in agent.sandboxes))
          ctx.addIssue({
            code: 'custom',
            path: ['tools', i],
            message: `tool ${bound.name} is bound to sandbox ${bound.sandbox}, which is not declared under sandboxes`,
          });
        else if (TOOL_KINDS[bound.kind].needsRepo && !agent.sandboxes[bound.sandbox!].repo)
          ctx.addIssue({
            code: 'custom',
            path: ['tools', i],
            message: `tool ${bound.name} needs a repo on sandbox ${bound.sandbox}`,
          });
      });
      if (agent.webFetch) {
        if (names.has('web_fetch'))
          ctx.addIssue({ code: 'custom', path: ['webFetch'], message: 'tool web_fetch is declared twice' });
        names.add('web_fetch');
      }
      agent.clientTools.forEach((t, i) => {
        if (names.has(t.name))
          ctx.addIssue({
            code: 'custom',
            path: ['clientTools', i, 'name'],
            message: `tool ${t.name} is declared twice`,
          });
        if (t.name.startsWith('mcp__'))
          ctx.addIssue({
            code: 'custom',
            path: ['clientTools', i, 'name'],
            message: 'mcp__ names belong to MCP servers',
          });
        names.add(t.name);
      });
      for (const name of Object.keys(agent.policies)) {
        if (!names.has(name) && !name.startsWith('mcp__'))
          ctx.addIssue({
            code: 'custom',
            path: ['policies', name],
            message: `policy for ${name}, which is not a declared tool, client tool or mcp__ tool`,
          });
      }
    }),
);

export type Agent = z.infer<typeof AgentSchema>;
export type AgentInput = z.input<typeof AgentSchema>;

/**
 * The agent a child session runs: the parent's, without spawn_agent and sub-agents (so children do not spawn
 * further unless an entry lists spawn_agent itself), with the named entry's fields on top.
 */
export function childAgentInput(parent: Agent, name?: string): Record<string, unknown> {
  const { taskQueue: _queue, limits, ...entry } = (name !== undefined ? parent.subagents[name] : undefined) ?? {};
  return {
    ...parent,
    name: name ?? parent.name,
    tools: parent.tools.filter((t) => t !== 'spawn_agent'),
    subagents: {},
    roster: [],
    ...entry,
    limits: { ...parent.limits, ...(limits ?? {}) },
  };
}

export interface BoundTool {
  /** The name the model sees. */
  name: string;
  kind: BuiltinToolKind | SandboxToolKind;
  /** The sandbox a sandbox tool runs in. */
  sandbox?: string;
}

/** A plain sandbox tool name binds to the sandbox `main`. */
export function resolveTool(entry: ToolEntry): BoundTool {
  if (typeof entry !== 'string') return { name: entry.name, kind: entry.tool, sandbox: entry.sandbox };
  if ((SANDBOX_TOOLS as readonly string[]).includes(entry))
    return { name: entry, kind: entry as SandboxToolKind, sandbox: 'main' };
  return { name: entry, kind: entry as BuiltinToolKind };
}

/**
 * Tools the platform adds to an API session's agent for its repository (git_push, git_pull) and its roster
 * (delegate, message_thread), not from the agent's own tool configuration: a mid-session update of that
 * configuration keeps them.
 */
const PLATFORM_TOOLS: readonly string[] = ['git_push', 'git_pull', 'delegate', 'message_thread'];

/** An agent's tool configuration as `sessions.update` replaces it mid-session (built by the API like its create). */
export const AgentToolsSchema = shared('agent.AgentToolsSchema', () =>
  z
    .object({
      tools: z.array(z.unknown()),
      clientTools: z.array(z.unknown()),
      mcpServers: z.record(z.string(), z.unknown()),
      policies: z.record(z.string(), z.unknown()),
      webFetch: z.record(z.string(), z.unknown()).optional(),
    })
    .strict(),
);
export type AgentTools = z.infer<typeof AgentToolsSchema>;

/** `agent` with its tool configuration replaced by `parts`, the platform's own tools kept; throws if it is invalid. */
export function withAgentTools(agent: Agent, parts: AgentTools): Agent {
  const kept = agent.tools.filter((t) => typeof t === 'string' && PLATFORM_TOOLS.includes(t));
  const { webFetch: _w, ...rest } = agent;
  return AgentSchema.parse({
    ...rest,
    tools: [...parts.tools, ...kept],
    clientTools: parts.clientTools,
    mcpServers: parts.mcpServers,
    policies: parts.policies,
    ...(parts.webFetch ? { webFetch: parts.webFetch } : {}),
  });
}

export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/** The built-in default agent, used when no `--agent` file is given. */
export function defaultAgent(model: string = DEFAULT_MODEL): Agent {
  return AgentSchema.parse({ name: 'default', model });
}

/** Formats zod issues as one line per problem, naming the field. */

/** What a recipe turns off of the hardened defaults, as recorded in sandbox_provisioned.loosened. */
export function loosenings(recipe: SandboxRecipe): string[] {
  const out: string[] = [];
  if (recipe.network !== 'none') out.push(`network:${recipe.network}`);
  if (!recipe.readOnlyRootfs) out.push('readOnlyRootfs:false');
  return out;
}
