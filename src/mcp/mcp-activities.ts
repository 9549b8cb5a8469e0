// Tools activities (queue `tools`): list and call the tools of a session's MCP servers with its vault credential.
// Tokens stay in this worker: every output and failure message is redacted before it crosses to Temporal.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import { McpClientPool, isServerAnswer, type McpTarget } from './pool';
import { McpCredentials, type ApiCredentialLookup } from './credentials';
import { isPermanent, mcpErrorMessage, toMcpFailure } from './mcp-errors';
import { mcpToolName } from './naming';
import type { McpServer } from '../session/agent';
import { capOutput, type ToolSpec } from '../tools/kind';
import { redact, type SecretVault } from '../vault';
import { Failure } from '../session/failure-types';

export interface ListMcpToolsInput {
  sessionId: string;
  vault: string;
  servers: Record<string, McpServer>;
  /** Names already taken by the agent's own tools. */
  reserved?: string[];
}

export interface McpToolInfo {
  /** The name the model sees: mcp__<server>__<tool>. */
  name: string;
  server: string;
  /** The tool's own name on its server. */
  tool: string;
  spec: ToolSpec;
}

export interface ListMcpToolsOutput {
  tools: McpToolInfo[];
  /** Servers whose tools could not be listed, with a reason that holds no secret. */
  failed: { server: string; message: string }[];
}

export interface CallMcpToolInput {
  sessionId: string;
  vault: string;
  serverName: string;
  server: McpServer;
  tool: string;
  input: unknown;
  toolUseId: string;
}

export interface CallMcpToolOutput {
  output: string;
  isError: boolean;
}

export interface ToolsActivityDeps {
  /** The named-secret vault `credential: vault:<name>` references resolve in. */
  vault?: SecretVault;
  /** The API's vaults, for sessions created with vault_ids. */
  api?: ApiCredentialLookup;
  /** The worker passes its own pool so it can close it on shutdown. */
  pool?: McpClientPool;
  log?: (msg: string) => void;
}

const LIST_TIMEOUT_MS = 30_000;
const MAX_TOOLS_PER_SERVER = 200;
const MAX_DESCRIPTION = 4000;
/** The list lands in the workflow's history once per run; keep one server from filling it. */
const MAX_SPECS_BYTES_PER_SERVER = 256 * 1024;

const ListedToolSchema = z.looseObject({
  name: z.string().min(1).max(512),
  description: z.string().optional(),
  inputSchema: z.looseObject({
    type: z.literal('object'),
    properties: z.record(z.string(), z.unknown()).optional(),
    required: z.array(z.string()).optional(),
  }),
});
const ListToolsResultSchema = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

const ContentBlockSchema = z.union([
  z.looseObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({ type: z.enum(['image', 'audio']), mimeType: z.string(), data: z.string() }),
  z.looseObject({
    type: z.literal('resource'),
    resource: z.looseObject({
      uri: z.string(),
      mimeType: z.string().optional(),
      text: z.string().optional(),
      blob: z.string().optional(),
    }),
  }),
  z.looseObject({ type: z.literal('resource_link'), uri: z.string(), name: z.string().optional() }),
  z.looseObject({ type: z.string() }),
]);
const CallToolResultSchema = z.looseObject({
  content: z.array(ContentBlockSchema).default([]),
  isError: z.boolean().optional(),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
});
/** The MCP server validates arguments against its own schema; here they only have to be an object. */
const ToolInputSchema = z.record(z.string(), z.unknown());

function renderBlock(b: z.infer<typeof ContentBlockSchema>): string {
  const block = b as Record<string, unknown> & { type: string };
  switch (block.type) {
    case 'text':
      return String(block.text);
    case 'image':
    case 'audio':
      return `[${block.type} ${String(block.mimeType)}, ${Math.floor((String(block.data).length * 3) / 4)} bytes, not shown]`;
    case 'resource': {
      const r = block.resource as { uri: string; mimeType?: string; text?: string };
      return r.text ?? `[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}, binary, not shown]`;
    }
    case 'resource_link':
      return `[resource link ${String(block.uri)}]`;
    default:
      return `[${block.type} content, not shown]`;
  }
}

/** Text blocks joined; other content named, since the transcript carries text only. */
export function renderCallResult(result: z.infer<typeof CallToolResultSchema>): string {
  if (result.content.length === 0 && result.structuredContent) return JSON.stringify(result.structuredContent);
  return result.content.map(renderBlock).join('\n');
}

export function createToolsActivities(deps: ToolsActivityDeps) {
  const pool =
    deps.pool ?? new McpClientPool(new McpCredentials({ vault: deps.vault, api: deps.api }), { log: deps.log });

  /** Heartbeats while `fn` runs, so a dead tools worker is noticed, and passes the activity's cancellation on. */
  const heartbeating = async <T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    const ctx = Context.current();
    const beat = setInterval(() => ctx.heartbeat(), 1000);
    try {
      return await fn(ctx.cancellationSignal);
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
      throw err;
    } finally {
      clearInterval(beat);
    }
  };

  const listServer = async (target: McpTarget, signal: AbortSignal, taken: Set<string>): Promise<McpToolInfo[]> => {
    const seen = new Set<string>();
    const list = async (client: Client) => {
      const all: unknown[] = [];
      let cursor: string | undefined;
      do {
        const page = ListToolsResultSchema.parse(
          await client.listTools(cursor ? { cursor } : undefined, { timeout: LIST_TIMEOUT_MS, signal }),
        );
        all.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor && all.length < MAX_TOOLS_PER_SERVER);
      return all.slice(0, MAX_TOOLS_PER_SERVER);
    };
    try {
      let listed: unknown[];
      try {
        listed = await pool.use(target, list, seen);
      } catch (err) {
        // A listing failure costs the session this server's tools for the whole run, so a passing fault
        // (a restart, a dropped connection) gets one more try; listing has no side effects.
        if (signal.aborted || isPermanent(err, 'list')) throw err;
        await new Promise((r) => setTimeout(r, 1000));
        listed = await pool.use(target, list, seen);
      }
      const out: McpToolInfo[] = [];
      for (const raw of listed) {
        const t = ListedToolSchema.safeParse(raw);
        if (!t.success) continue; // one malformed tool should not hide the rest
        const name = mcpToolName(target.serverName, t.data.name, taken);
        taken.add(name);
        const { $schema: _schema, ...unredacted } = t.data.inputSchema;
        // A server may echo its caller's token anywhere in what it lists, schemas included.
        const inputSchema = JSON.parse(redact(JSON.stringify(unredacted), [...seen])) as typeof unredacted;
        const description = redact(
          t.data.description ?? `Tool ${t.data.name} of the MCP server ${target.serverName}.`,
          [...seen],
        ).slice(0, MAX_DESCRIPTION);
        out.push({
          name,
          server: target.serverName,
          tool: t.data.name,
          spec: {
            name,
            description,
            input_schema: { ...inputSchema, type: 'object', properties: inputSchema.properties ?? {} },
          },
        });
      }
      const bytes = Buffer.byteLength(JSON.stringify(out));
      if (bytes > MAX_SPECS_BYTES_PER_SERVER)
        throw new Error(`its tool list is ${bytes} bytes; the limit is ${MAX_SPECS_BYTES_PER_SERVER}`);
      return out;
    } catch (err) {
      throw new Error(mcpErrorMessage(err, target.serverName, seen));
    }
  };

  return {
    /** Connects to each server (lazily: the first model call of a session gets here) and lists its tools. */
    async listMcpTools(input: ListMcpToolsInput): Promise<ListMcpToolsOutput> {
      return heartbeating(async (signal) => {
        const taken = new Set(input.reserved ?? []);
        const names = Object.keys(input.servers).sort();
        // Names are given out in server order after all lists are in, so the result does not depend on timing.
        const results = await Promise.allSettled(
          names.map((serverName) =>
            listServer(
              { sessionId: input.sessionId, vault: input.vault, serverName, server: input.servers[serverName] },
              signal,
              new Set(),
            ),
          ),
        );
        const out: ListMcpToolsOutput = { tools: [], failed: [] };
        results.forEach((r, i) => {
          const server = names[i];
          if (r.status === 'rejected') {
            out.failed.push({ server, message: (r.reason as Error).message });
            return;
          }
          for (const t of r.value) {
            const name = taken.has(t.name) ? mcpToolName(server, t.tool, taken) : t.name;
            taken.add(name);
            out.tools.push({ ...t, name, spec: { ...t.spec, name } });
          }
        });
        return out;
      });
    },

    /** Calls one tool; the server's own errors come back as a tool error, transport faults as a failure. */
    async callMcpTool(input: CallMcpToolInput): Promise<CallMcpToolOutput> {
      // Captured here: progress callbacks run outside this activity's async context.
      const ctx = Context.current();
      const args = ToolInputSchema.safeParse(input.input ?? {});
      if (!args.success) return { output: `the input of ${input.tool} must be a JSON object`, isError: true };
      const target: McpTarget = {
        sessionId: input.sessionId,
        vault: input.vault,
        serverName: input.serverName,
        server: input.server,
      };
      const seen = new Set<string>();
      return heartbeating(async (signal) => {
        let raw: unknown;
        try {
          raw = await pool.use(
            target,
            (client) =>
              client.callTool({ name: input.tool, arguments: args.data }, undefined, {
                timeout: input.server.timeoutSeconds * 1000,
                resetTimeoutOnProgress: true,
                onprogress: () => ctx.heartbeat(),
                signal,
              }),
            seen,
          );
        } catch (err) {
          if (signal.aborted) throw err;
          if (isServerAnswer(err)) return { output: mcpErrorMessage(err, input.serverName, seen), isError: true };
          deps.log?.(`mcp: ${input.tool} on ${input.serverName} failed for ${input.toolUseId}`);
          throw toMcpFailure(err, input.serverName, seen, 'call');
        }
        const result = CallToolResultSchema.safeParse(raw);
        if (!result.success) {
          throw ApplicationFailure.create({
            message: `MCP server ${input.serverName} returned a malformed result for ${input.tool}`,
            type: Failure.Mcp.InvalidResult,
            nonRetryable: true,
          });
        }
        return {
          output: capOutput(redact(renderCallResult(result.data), [...seen])),
          isError: result.data.isError === true,
        };
      });
    },
  };
}

export type ToolsActivities = ReturnType<typeof createToolsActivities>;
