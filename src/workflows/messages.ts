// Every signal, update and query of a session, defined once; the client and the tests import them from here.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { AgentSchema } from '../session/agent';
import { UsageSchema, type SessionEvent, type Usage } from '../session/events';

export const MAX_MESSAGE_BYTES = 1024 * 1024;

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export const UserMessageSchema = z
  .object({
    text: z
      .string({ error: 'text must be a string' })
      .refine((t) => t.trim().length > 0, 'text must not be empty')
      .refine((t) => utf8Length(t) <= MAX_MESSAGE_BYTES, `text must be at most ${MAX_MESSAGE_BYTES} bytes`),
    messageId: z.string().min(1).max(200).optional(),
  })
  .strict();
export type UserMessage = z.infer<typeof UserMessageSchema>;

export const ReasonSchema = z.object({ reason: z.string().max(10_000).optional() }).strict();
export type Reason = z.infer<typeof ReasonSchema>;

export const EventsQueryArgsSchema = z
  .object({
    from: z.number().int().nonnegative().default(0),
    limit: z.number().int().min(1).max(5000).default(1000),
  })
  .strict();
export type EventsQueryArgs = z.input<typeof EventsQueryArgsSchema>;
export interface EventsPage {
  events: SessionEvent[];
  nextSeq: number;
  /** The first seq the answering run holds; earlier events are in the session archive. */
  firstSeq?: number;
}

export const SessionStateSchema = z.enum(['running', 'waiting_for_user', 'requires_action', 'ended']);
export type SessionState = z.infer<typeof SessionStateSchema>;
export interface SandboxStatus {
  name: string;
  sandboxId: string;
  host: string;
  state: 'running' | 'stopped';
}
/** A tool call the session waits on: an approval to decide, or a client tool's result to submit. */
export interface PendingAction {
  kind: 'approval' | 'client_tool';
  toolUseId: string;
  name: string;
  input: unknown;
  /** For an approval: the rule that asked (as in approval_requested), and when its timeout applies `onTimeout`. */
  policy?: string;
  expiresAt?: string;
  onTimeout?: 'allow' | 'deny';
}
export interface SessionStatus {
  /** `requires_action` while a turn waits on `pending`. */
  state: SessionState;
  lastSeq: number;
  /** The first seq of the current run; the run's number among the session's runs (1 for the first). */
  firstSeq?: number;
  run?: number;
  sandboxes: SandboxStatus[];
  usage: Usage;
  /** Approvals and client tool calls the session waits on, in the order it will take them. */
  pending?: PendingAction[];
}

/** `resolveToolUse`: approve or deny a pending approval. */
export const ResolveToolUseSchema = z
  .object({
    toolUseId: z.string({ error: 'toolUseId must be a string' }).min(1, 'toolUseId must not be empty').max(200),
    allow: z.boolean({ error: 'allow must be true or false' }),
    reason: z.string().max(10_000).optional(),
    /** Who decides, as approval_resolved.by records it (default `user`; `timeout` is reserved). */
    by: z.string().min(1).max(200).refine((b) => b !== 'timeout', '`timeout` is reserved for decisions the policy made').optional(),
  })
  .strict();
export type ResolveToolUse = z.infer<typeof ResolveToolUseSchema>;

/** `submitToolResult`: the calling application's answer to a client tool call. */
export const SubmitToolResultSchema = z
  .object({
    toolUseId: z.string({ error: 'toolUseId must be a string' }).min(1, 'toolUseId must not be empty').max(200),
    output: z
      .string({ error: 'output must be a string' })
      .refine((t) => utf8Length(t) <= MAX_MESSAGE_BYTES, `output must be at most ${MAX_MESSAGE_BYTES} bytes`),
    isError: z.boolean().default(false),
  })
  .strict();
export type SubmitToolResult = z.input<typeof SubmitToolResultSchema>;

export const PutFileSchema = z
  .object({
    sandbox: z.string().min(1).default('main'),
    path: z.string().min(1).max(4096),
    contentBase64: z.string().refine((s) => /^[A-Za-z0-9+/]*={0,2}$/.test(s), 'contentBase64 must be base64'),
  })
  .strict();
export type PutFile = z.input<typeof PutFileSchema>;
export const GetFileSchema = z.object({ sandbox: z.string().min(1).default('main'), path: z.string().min(1).max(4096) }).strict();
export type GetFile = z.input<typeof GetFileSchema>;

const seq = z.number().int().nonnegative();

/** A sandbox the session holds, as carried from one run to the next. */
export const SandboxSlotSchema = z
  .object({ name: z.string(), sandboxId: z.string(), taskQueue: z.string(), host: z.string(), stopped: z.boolean(), lastUsed: z.number() })
  .strict();
export type SandboxSlot = z.infer<typeof SandboxSlotSchema>;

/** A tool call of the round in progress that has no result yet, as carried to the next run. */
export const PendingToolSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    input: z.unknown(),
    /** Set once approval_requested is in the log. */
    approval: z
      .object({ policy: z.string(), expiresAt: z.number().optional(), onTimeout: z.enum(['allow', 'deny']) })
      .strict()
      .optional(),
    /** Set once approval_resolved is in the log. */
    decision: z.object({ allow: z.boolean(), by: z.string().optional(), reason: z.string().optional() }).strict().optional(),
  })
  .strict();
export type PendingTool = z.infer<typeof PendingToolSchema>;

/** How many recent messageIds a new run remembers, so a client retrying across the handover is not duplicated. */
export const MAX_CARRIED_MESSAGE_IDS = 256;

/**
 * What one run hands the next (continue-as-new, `agents wake`, `agents fork`). The events themselves are not
 * carried: they are sealed in the session archive, and the new run's log continues at `nextSeq`.
 */
export const CarrySchema = z
  .object({
    nextSeq: seq,
    run: z.number().int().min(1).default(1),
    /** The context window: events from `fromSeq` on, after the latest compaction summary. */
    window: z.object({ fromSeq: seq, summary: z.string().optional() }).strict(),
    usage: UsageSchema,
    recentMessageIds: z.array(z.tuple([z.string(), seq])).max(MAX_CARRIED_MESSAGE_IDS),
    lastUserSeq: z.number().int().min(-1),
    handledThrough: z.number().int().min(-1),
    /** Set when the handover happened inside a turn: the new run goes on with its next model call. */
    inTurn: z
      .object({
        round: z.number().int().nonnegative(),
        /** Tool calls of the previous round still to finish (an approval or a client result pending) before that model call. */
        tools: z.array(PendingToolSchema).optional(),
      })
      .strict()
      .optional(),
    sandboxes: z.array(SandboxSlotSchema),
    lastHost: z.record(z.string(), z.string()),
    /** MCP tools listed by an earlier run, so the tool list (and the cached prefix) stays the same. */
    mcpTools: z.array(z.object({ name: z.string(), server: z.string(), tool: z.string(), spec: z.record(z.string(), z.unknown()) }).strict()).optional(),
    /** tool_use ids still without a result (a woken or forked run closes them). */
    openToolUses: z.array(z.string()).default([]),
  })
  .strict();
export type Carry = z.infer<typeof CarrySchema>;
export type CarryInput = z.input<typeof CarrySchema>;

export const SessionInputSchema = z
  .object({
    agent: AgentSchema,
    message: UserMessageSchema.optional(),
    /** Present on every run after the first. */
    continued: CarrySchema.optional(),
    /** Why this run started: a continue-as-new handover, `agents wake`, or `agents fork`. */
    start: z.enum(['new', 'continued', 'woken', 'forked']).default('new'),
    forkedFrom: z.object({ sessionId: z.string().min(1), seq }).strict().optional(),
  })
  .strict()
  .refine((i) => (i.start === 'new') === (i.continued === undefined), 'a continued, woken or forked run needs `continued`, a new one must not have it')
  .refine((i) => (i.start === 'forked') === (i.forkedFrom !== undefined), 'a forked run needs `forkedFrom`');
export type SessionInput = z.input<typeof SessionInputSchema>;

export const userMessageSignal = defineSignal<[UserMessage]>('userMessage');
export const interruptSignal = defineSignal<[Reason?]>('interrupt');
export const endSignal = defineSignal<[Reason?]>('end');
export const sendMessageUpdate = defineUpdate<{ seq: number }, [UserMessage]>('sendMessage');
export const eventsQuery = defineQuery<EventsPage, [EventsQueryArgs?]>('events');
export const statusQuery = defineQuery<SessionStatus>('status');
/** What a new run would be given if this one handed over now; `agents wake` reads it from a dead run. */
export const handoverQuery = defineQuery<{ agent: z.input<typeof AgentSchema>; carry: Carry; firstSeq: number }>('handover');
export const putFileUpdate = defineUpdate<{ path: string; bytes: number }, [PutFile]>('putFile');
export const resolveToolUseUpdate = defineUpdate<{ seq: number }, [ResolveToolUse]>('resolveToolUse');
export const submitToolResultUpdate = defineUpdate<{ seq: number }, [SubmitToolResult]>('submitToolResult');
export const getFileUpdate = defineUpdate<{ path: string; bytes: number; contentBase64: string }, [GetFile]>('getFile');
