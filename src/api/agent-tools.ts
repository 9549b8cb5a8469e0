// An agent's tools: the built-in toolset, MCP toolsets and custom tools, as given (params) and as resolved (stored
// and returned). web_fetch follows the toolset's default like the sandbox tools and runs on a tools worker through
// the egress gate; web_search stays disabled, and enabling it is refused with a 400 that says why.
import type { BetaManagedAgentsUserLocation } from '@anthropic-ai/sdk/resources/beta/agents/agents';
import { z } from 'zod';
import { badRequest } from './api-error';

export const TOOLSET_TOOLS = ['bash', 'edit', 'read', 'write', 'glob', 'grep', 'web_fetch', 'web_search'] as const;

/** `auto`: a judge model decides each call, allowing it or asking a person (docs/guide/approvals-and-client-tools.md). */
const PolicySchema = z.strictObject({
  type: z.enum(['always_allow', 'always_ask', 'auto'], { error: 'must be always_allow, always_ask or auto' }),
});
const DefaultConfigParamsSchema = z.strictObject({
  enabled: z.boolean().nullish(),
  permission_policy: PolicySchema.nullish(),
});

const SANDBOX_TOOLS = ['bash', 'edit', 'read', 'write', 'glob', 'grep'] as const;
const WEB_TOOLS = new Set<string>(['web_fetch', 'web_search']);
const DomainsSchema = z
  .array(
    z
      .string()
      .min(1)
      .max(253)
      .regex(
        /^(?=.*[a-z0-9])[a-z0-9.-]+$/i,
        'each entry is a plain hostname such as docs.example.com, with no scheme, port or path',
      ),
  )
  .min(1, 'an empty list is refused; leave the field out')
  .max(64);
const UrlSourceAllNone = z.union([z.enum(['all', 'none']), z.strictObject({ type: z.enum(['all', 'none']) })]);
const ToolReferenceSchema = z.strictObject({ type: z.literal('tool_reference'), name: z.string().min(1).max(128) });
const UrlSourceFilter = z.union([
  UrlSourceAllNone,
  z.strictObject({ type: z.enum(['only', 'except']), tools: z.array(ToolReferenceSchema).min(1).max(128) }),
]);
const toolConfigBase = { enabled: z.boolean().nullish(), permission_policy: PolicySchema.nullish() };
const ToolConfigParamsSchema = z.discriminatedUnion('name', [
  z.strictObject({ name: z.enum(SANDBOX_TOOLS), type: z.enum(SANDBOX_TOOLS).optional(), ...toolConfigBase }),
  z.strictObject({
    name: z.literal('web_fetch'),
    type: z.literal('web_fetch').optional(),
    ...toolConfigBase,
    allowed_domains: DomainsSchema.optional(),
    blocked_domains: DomainsSchema.optional(),
    max_content_tokens: z.number().int().min(1).max(10_000_000).nullish(),
    url_sources: z
      .strictObject({
        client_tool_results: UrlSourceFilter.nullish(),
        server_tool_results: UrlSourceFilter.nullish(),
        user_input: UrlSourceAllNone.nullish(),
      })
      .nullish(),
  }),
  z.strictObject({
    name: z.literal('web_search'),
    type: z.literal('web_search').optional(),
    ...toolConfigBase,
    allowed_domains: DomainsSchema.optional(),
    blocked_domains: DomainsSchema.optional(),
    user_location: z
      .strictObject({
        type: z.literal('approximate'),
        city: z.string().max(255).nullish(),
        country: z.string().max(2).nullish(),
        region: z.string().max(255).nullish(),
        timezone: z.string().max(255).nullish(),
      })
      .nullish(),
  }),
]);
const ToolsetParamsSchema = z.strictObject({
  type: z.literal('agent_toolset_20260401'),
  default_config: DefaultConfigParamsSchema.nullish(),
  configs: z.array(ToolConfigParamsSchema).max(TOOLSET_TOOLS.length).optional(),
});
const McpToolsetParamsSchema = z.strictObject({
  type: z.literal('mcp_toolset'),
  mcp_server_name: z.string().min(1).max(255),
  default_config: DefaultConfigParamsSchema.nullish(),
  configs: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(128),
        enabled: z.boolean().nullish(),
        permission_policy: PolicySchema.nullish(),
      }),
    )
    .max(256)
    .optional(),
});
const InputSchemaSchema = z.looseObject({
  type: z.literal('object'),
  properties: z.record(z.string(), z.unknown()).nullish(),
  required: z.array(z.string()).nullish(),
});
const CustomToolSchema = z.strictObject({
  type: z.literal('custom'),
  name: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'custom tool names are 1-128 letters, digits, _ or -'),
  description: z.string().max(10_000),
  input_schema: InputSchemaSchema,
});
export const ToolParamsSchema = z.discriminatedUnion('type', [
  ToolsetParamsSchema,
  McpToolsetParamsSchema,
  CustomToolSchema,
]);

// Resolved forms, as stored and returned.
const ResolvedPolicySchema = z.object({ type: z.enum(['always_allow', 'always_ask', 'auto']) });
const ResolvedUrlSourceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('all') }),
  z.object({ type: z.literal('none') }),
  z.object({ type: z.literal('only'), tools: z.array(ToolReferenceSchema) }),
  z.object({ type: z.literal('except'), tools: z.array(ToolReferenceSchema) }),
]);
const ResolvedUrlSourcesSchema = z.object({
  client_tool_results: ResolvedUrlSourceSchema.nullable(),
  server_tool_results: ResolvedUrlSourceSchema.nullable(),
  user_input: z.object({ type: z.enum(['all', 'none']) }).nullable(),
});
const ResolvedDefaultSchema = z.object({ enabled: z.boolean(), permission_policy: ResolvedPolicySchema });
/** One toolset tool's resolved config, as the SDK's per-tool config types have it (`name` and `type` alike). */
const toolConfig = <N extends (typeof TOOLSET_TOOLS)[number]>(name: N) =>
  z.object({
    name: z.literal(name),
    type: z.literal(name),
    enabled: z.boolean(),
    permission_policy: ResolvedPolicySchema,
  });
const ResolvedDomainsSchema = {
  allowed_domains: z.array(z.string()).optional(),
  blocked_domains: z.array(z.string()).optional(),
};
const ResolvedToolConfigSchema = z.discriminatedUnion('name', [
  toolConfig('bash'),
  toolConfig('edit'),
  toolConfig('read'),
  toolConfig('write'),
  toolConfig('glob'),
  toolConfig('grep'),
  toolConfig('web_fetch').extend({
    url_sources: ResolvedUrlSourcesSchema.nullable(),
    ...ResolvedDomainsSchema,
    max_content_tokens: z.number().nullable().optional(),
  }),
  toolConfig('web_search').extend({
    ...ResolvedDomainsSchema,
    user_location: z.custom<BetaManagedAgentsUserLocation>().nullable().optional(),
  }),
]);
export const ResolvedToolSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('agent_toolset_20260401'),
    default_config: ResolvedDefaultSchema,
    configs: z.array(ResolvedToolConfigSchema),
  }),
  z.object({
    type: z.literal('mcp_toolset'),
    mcp_server_name: z.string(),
    default_config: ResolvedDefaultSchema,
    configs: z.array(z.object({ name: z.string(), enabled: z.boolean(), permission_policy: ResolvedPolicySchema })),
  }),
  CustomToolSchema,
]);
type ResolvedTool = z.infer<typeof ResolvedToolSchema>;
type ResolvedToolConfig = z.infer<typeof ResolvedToolConfigSchema>;

export function resolveTools(tools: z.infer<typeof ToolParamsSchema>[]): ResolvedTool[] {
  return tools.map((t, i) => {
    if (t.type === 'custom') return t;
    const fallback = t.type === 'agent_toolset_20260401' ? 'always_allow' : 'always_ask';
    const default_config = {
      enabled: t.default_config?.enabled ?? true,
      permission_policy: t.default_config?.permission_policy ?? { type: fallback },
    };
    if (t.type === 'mcp_toolset') {
      return {
        type: t.type,
        mcp_server_name: t.mcp_server_name,
        default_config,
        configs: (t.configs ?? []).map((c) => ({
          name: c.name,
          enabled: c.enabled ?? default_config.enabled,
          permission_policy: c.permission_policy ?? default_config.permission_policy,
        })),
      };
    }
    const given = new Map<string, { c: ToolConfigParams; j: number }>();
    (t.configs ?? []).forEach((c, j) => {
      if (c.type !== undefined && c.type !== c.name)
        throw badRequest(`tools.${i}.configs.${j}.type: must be ${c.name}, as its name`);
      if (given.has(c.name)) throw badRequest(`tools.${i}.configs.${j}.name: ${c.name} is configured twice`);
      given.set(c.name, { c, j });
    });
    return {
      type: t.type,
      default_config,
      configs: TOOLSET_TOOLS.map((name) => {
        const { c, j } = given.get(name) ?? {};
        const permission_policy = c?.permission_policy ?? default_config.permission_policy;
        if (!WEB_TOOLS.has(name))
          return {
            name,
            type: name,
            enabled: c?.enabled ?? default_config.enabled,
            permission_policy,
          } as ResolvedToolConfig;
        // Each refusal below is of a config given by name, so `j` is its index.
        const at = `tools.${i}.configs.${j}`;
        // web_search has no backend here: it stays disabled whatever default_config says, and enabling it by name is refused.
        if (name === 'web_search' && c?.enabled === true)
          throw badRequest(
            `${at}.enabled: web_search is not offered to the model on this platform (no search backend exists); leave it disabled`,
          );
        const enabled = name === 'web_fetch' ? (c?.enabled ?? default_config.enabled) : false;
        const { enabled: _e, permission_policy: _p, type: _t, ...settings } = c ?? { name };
        if (
          'allowed_domains' in settings &&
          'blocked_domains' in settings &&
          settings.allowed_domains &&
          settings.blocked_domains
        ) {
          throw badRequest(`${at}.blocked_domains: allowed_domains and blocked_domains cannot be combined`);
        }
        const { url_sources, ...rest } = 'url_sources' in settings ? settings : { ...settings, url_sources: undefined };
        // This web_fetch is not limited to URLs the conversation has shown: the egress gate and the domain lists bound it.
        if (enabled && url_sources !== undefined && url_sources !== null) {
          throw badRequest(
            `${at}.url_sources: web_fetch here does not limit itself to URLs the conversation has shown, so url_sources cannot be honoured; leave it out and bound it with allowed_domains or blocked_domains`,
          );
        }
        return {
          ...rest,
          name,
          type: name,
          enabled,
          permission_policy,
          ...(name === 'web_fetch' ? { url_sources: resolveUrlSources(url_sources) } : {}),
        } as ResolvedToolConfig;
      }),
    };
  });
}

type ToolConfigParams = z.infer<typeof ToolConfigParamsSchema>;
type UrlSourcesParams = Extract<ToolConfigParams, { name: 'web_fetch' }>['url_sources'];
const sourceObject = (v: z.infer<typeof UrlSourceFilter> | null | undefined) =>
  v === null || v === undefined ? null : typeof v === 'string' ? { type: v } : v;

/** `url_sources` in the object form responses use: null when not set. */
function resolveUrlSources(p: UrlSourcesParams): z.infer<typeof ResolvedUrlSourcesSchema> | null {
  if (p === null || p === undefined) return null;
  const r = {
    client_tool_results: sourceObject(p.client_tool_results),
    server_tool_results: sourceObject(p.server_tool_results),
    user_input: sourceObject(p.user_input),
  } as z.infer<typeof ResolvedUrlSourcesSchema>;
  if ([r.client_tool_results, r.server_tool_results, r.user_input].every((x) => x?.type === 'none'))
    throw badRequest('url_sources: setting every source to none is refused');
  return r;
}

/** Web tools as they are now resolved, also in versions stored before: web_search disabled, and web_fetch with its `url_sources`. */
export function withWebToolsResolved(tools: ResolvedTool[]): ResolvedTool[] {
  return tools.map((t) =>
    t.type !== 'agent_toolset_20260401'
      ? t
      : {
          ...t,
          configs: t.configs.map((c) =>
            c.name === 'web_fetch'
              ? { ...c, url_sources: c.url_sources ?? null }
              : c.name === 'web_search'
                ? { ...c, enabled: false }
                : c,
          ),
        },
  );
}
