// Every signal, update and query of a session, defined once; the client and the tests import them from here.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { AgentSchema, AgentToolsSchema } from './agent';
import type { SessionEvent } from './events';
import { UsageSchema, type Usage } from './usage';
import { ListCostStateSchema, MoneySchema, type Money } from './list-cost';
import { HandoffSandboxInputSchema } from '../tools/handoff-sandbox';
import { shared } from './shared';
import {
  OutcomeDefinitionSchema,
  OutcomeStateSchema,
  type OutcomeDefinition,
  type OutcomeState,
} from './outcome-grading';

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

export const UserMessageSchema = shared('contract.UserMessageSchema', () =>
  z
    .object({
      text: z
        .string({ error: 'text must be a string' })
        .refine((t) => t.trim().length > 0, 'text must not be empty')
        .refine((t) => utf8Length(t) <= MAX_MESSAGE_BYTES, `text must be at most ${MAX_MESSAGE_BYTES} bytes`),
      messageId: z.string().min(1).max(200).optional(),
    })
    .strict(),
);
export type UserMessage = z.infer<typeof UserMessageSchema>;

export const ReasonSchema = shared('contract.ReasonSchema', () =>
  z.object({ reason: z.string().max(10_000).optional() }).strict(),
);
export type Reason = z.infer<typeof ReasonSchema>;

export const EventsQueryArgsSchema = shared('contract.EventsQueryArgsSchema', () =>
  z
    .object({
      from: z.number().int().nonnegative().default(0),
      limit: z.number().int().min(1).max(5000).default(1000),
    })
    .strict(),
);
export type EventsQueryArgs = z.input<typeof EventsQueryArgsSchema>;
export interface EventsPage {
  events: SessionEvent[];
  nextSeq: number;
  /** The first seq the answering run holds; earlier events are in the session archive. */
  firstSeq?: number;
}

export const SessionStateSchema = shared('contract.SessionStateSchema', () =>
  z.enum(['running', 'rescheduling', 'waiting_for_user', 'requires_action', 'ended']),
);
export type SessionState = z.infer<typeof SessionStateSchema>;
export interface SandboxStatus {
  name: string;
  sandboxId: string;
  host: string;
  /** `handed_off`: passed to session `handedTo`; this session's calls to it are denied until it comes back. */
  state: 'running' | 'stopped' | 'paused' | 'handed_off';
  handedTo?: string;
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
  /** `requires_action` while a turn waits on `pending`; `rescheduling` while a model call waits to be tried again. */
  state: SessionState;
  lastSeq: number;
  /** The first seq of the current run; the run's number among the session's runs (1 for the first). */
  firstSeq?: number;
  run?: number;
  sandboxes: SandboxStatus[];
  /** Tokens of this session and of every sub-agent that reported back (theirs included). */
  usage: Usage;
  /** Sub-agents still running, and the part of `usage` that came from sub-agents. */
  subagents?: { running: { sessionId: string; toolUseId: string }[]; usage: Usage };
  /** Approvals and client tool calls the session waits on, in the order it will take them. */
  pending?: PendingAction[];
  /**
   * The session's list cost in nano-USD (its sub-agents' that reported included), its budget, and whether the
   * budget stops model calls now. Absent where the session counts no cost (started without prices).
   */
  listCost?: { costNanoUsd: number; budget?: Money; reached: boolean };
  /** Every outcome the session was given (`user.define_outcome`), in order; absent when it has none. */
  outcomes?: OutcomeStatus[];
}
/** An outcome's state as the status query reports it (the rubric left out). */
export type OutcomeStatus = Omit<OutcomeState, 'rubric' | 'definedSeq'>;

/** `resolveToolUse`: approve or deny a pending approval. */
export const ResolveToolUseSchema = shared('contract.ResolveToolUseSchema', () =>
  z
    .object({
      toolUseId: z.string({ error: 'toolUseId must be a string' }).min(1, 'toolUseId must not be empty').max(200),
      allow: z.boolean({ error: 'allow must be true or false' }),
      reason: z.string().max(10_000).optional(),
      /** Who decides, as approval_resolved.by records it (default `user`; `timeout` is reserved). */
      by: z
        .string()
        .min(1)
        .max(200)
        .refine((b) => b !== 'timeout', '`timeout` is reserved for decisions the policy made')
        .optional(),
    })
    .strict(),
);
export type ResolveToolUse = z.infer<typeof ResolveToolUseSchema>;

/** `submitToolResult`: the calling application's answer to a client tool call. */
export const SubmitToolResultSchema = shared('contract.SubmitToolResultSchema', () =>
  z
    .object({
      toolUseId: z.string({ error: 'toolUseId must be a string' }).min(1, 'toolUseId must not be empty').max(200),
      output: z
        .string({ error: 'output must be a string' })
        .refine((t) => utf8Length(t) <= MAX_MESSAGE_BYTES, `output must be at most ${MAX_MESSAGE_BYTES} bytes`),
      isError: z.boolean().default(false),
    })
    .strict(),
);
export type SubmitToolResult = z.input<typeof SubmitToolResultSchema>;

export const PutFileSchema = shared('contract.PutFileSchema', () =>
  z
    .object({
      sandbox: z.string().min(1).default('main'),
      path: z.string().min(1).max(4096),
      contentBase64: z.string().refine((s) => /^[A-Za-z0-9+/]*={0,2}$/.test(s), 'contentBase64 must be base64'),
    })
    .strict(),
);
export type PutFile = z.input<typeof PutFileSchema>;
export const GetFileSchema = shared('contract.GetFileSchema', () =>
  z.object({ sandbox: z.string().min(1).default('main'), path: z.string().min(1).max(4096) }).strict(),
);
export type GetFile = z.input<typeof GetFileSchema>;

const seq = shared('contract.seq', () => z.number().int().nonnegative());

/** A sandbox the session holds, as carried from one run to the next. */
export const SandboxSlotSchema = shared('contract.SandboxSlotSchema', () =>
  z
    .object({
      name: z.string(),
      sandboxId: z.string(),
      taskQueue: z.string(),
      host: z.string(),
      stopped: z.boolean(),
      lastUsed: z.number(),
      /** Handed to this session: the host's registry names it the owner, and this session's calls are denied. */
      handedTo: z.string().optional(),
      /** Lent by this session (the parent), to which it goes back when this session ends. */
      lentBy: z.string().optional(),
      /** Paused while idle: removed from its host after its workspace was captured; the next use provisions it again. */
      paused: z.boolean().optional(),
    })
    .strict(),
);
export type SandboxSlot = z.infer<typeof SandboxSlotSchema>;

/** The spawn_agent call a child session answers. */
export const ParentRefSchema = shared('contract.ParentRefSchema', () =>
  z.object({ sessionId: z.string().min(1), toolUseId: z.string().min(1) }).strict(),
);
export type ParentRef = z.infer<typeof ParentRefSchema>;

/** A session thread's identity, in the thread's own input: its id, its roster agent, and whose sandboxes it uses. */
export const ThreadIdentitySchema = shared('contract.ThreadIdentitySchema', () =>
  z
    .object({
      id: z.string().min(1),
      agent: z.string().min(1),
      /** The coordinator's primary thread, which messages this one. */
      primaryId: z.string().min(1),
      /** The session whose sandboxes the thread works in: provisioned and called under that session's id. */
      owner: z.string().min(1),
    })
    .strict(),
);
export type ThreadIdentity = z.infer<typeof ThreadIdentitySchema>;

/** A coordinator's thread, as its runs carry it. */
export const ThreadRefSchema = shared('contract.ThreadRefSchema', () =>
  z
    .object({
      threadId: z.string(),
      sessionId: z.string(),
      agent: z.string(),
      status: z.enum(['running', 'idle', 'terminated']),
      archived: z.boolean().optional(),
      /** The thread's whole usage and list cost as it last reported them; a report adds only what is new. */
      usage: UsageSchema,
      costNanoUsd: z.number().int().nonnegative().optional(),
    })
    .strict(),
);
export type ThreadRef = z.infer<typeof ThreadRefSchema>;

/** A thread's reply to the coordinator's delegate or message_thread call; `ended`: the thread has ended. */
export const ThreadReplySchema = shared('contract.ThreadReplySchema', () =>
  z
    .object({
      sessionId: z.string().min(1),
      toolUseId: z.string().min(1).optional(),
      output: z.string(),
      isError: z.boolean(),
      ended: z.boolean(),
      failed: z.boolean().optional(),
      usage: UsageSchema,
      costNanoUsd: z.number().int().nonnegative().optional(),
    })
    .strict(),
);
export type ThreadReply = z.infer<typeof ThreadReplySchema>;

/**
 * A thread's call that waits for the client (`waiting`: a confirmation, or a custom tool's result), or its wait is
 * over (`settled`). The coordinator cross-posts it onto its own log, once per call and state.
 */
export const ThreadActionSchema = shared('contract.ThreadActionSchema', () =>
  z
    .object({
      sessionId: z.string().min(1),
      toolUseId: z.string().min(1),
      state: z.enum(['waiting', 'settled']),
      /** The seq of the call's tool_use event in the thread's log. */
      useSeq: z.number().int().nonnegative().optional(),
      name: z.string().optional(),
      input: z.unknown().optional(),
      waitsFor: z.enum(['confirmation', 'result']).optional(),
      /** The rule that asked (`always_ask`, or `auto (reason)`). */
      policy: z.string().optional(),
    })
    .strict(),
);
export type ThreadAction = z.infer<typeof ThreadActionSchema>;

/** The coordinator's message to one of its threads; the thread answers `toolUseId` with its reply. */
export const ThreadMessageSchema = shared('contract.ThreadMessageSchema', () =>
  z.object({ toolUseId: z.string().min(1), text: UserMessageSchema.shape.text }).strict(),
);
export type ThreadMessage = z.infer<typeof ThreadMessageSchema>;

/** A sandbox passed between sessions, as the receiver takes it. */
export const HandedSandboxSchema = shared('contract.HandedSandboxSchema', () =>
  z
    .object({
      name: z.string().min(1),
      sandboxId: z.string().min(1),
      taskQueue: z.string().min(1),
      host: z.string().min(1),
      stopped: z.boolean(),
    })
    .strict(),
);
export type HandedSandbox = z.infer<typeof HandedSandboxSchema>;

/** A child session the parent waits for; `result` is held from its report until the tool_result is in the log. */
export const SubagentRefSchema = shared('contract.SubagentRefSchema', () =>
  z
    .object({
      toolUseId: z.string(),
      sessionId: z.string(),
      lent: z.array(z.string()).default([]),
      result: z.object({ output: z.string(), isError: z.boolean() }).strict().optional(),
    })
    .strict(),
);
export type SubagentRef = z.infer<typeof SubagentRefSchema>;

/** What a child sends its parent (by the parent's session id, so it reaches whichever run is current). */
export const SubagentReportSchema = shared('contract.SubagentReportSchema', () =>
  z
    .object({
      sessionId: z.string().min(1),
      toolUseId: z.string().min(1),
      output: z.string(),
      isError: z.boolean(),
      usage: UsageSchema,
      /** The child's list cost in nano-USD, its own children's included (not its parent's spend before it started). */
      costNanoUsd: z.number().int().nonnegative().optional(),
      returned: z.array(HandedSandboxSchema).default([]),
    })
    .strict(),
);
export type SubagentReport = z.input<typeof SubagentReportSchema>;

export const SandboxGiftSchema = shared('contract.SandboxGiftSchema', () =>
  z.object({ from: z.string().min(1), sandbox: HandedSandboxSchema }).strict(),
);
export type SandboxGift = z.infer<typeof SandboxGiftSchema>;

/** The handoffSandbox update takes what the handoff_sandbox tool takes. */
export const HandoffRequestSchema = HandoffSandboxInputSchema;
export type HandoffRequest = z.infer<typeof HandoffRequestSchema>;

/** A tool call of the round in progress that has no result yet, as carried to the next run. */
export const PendingToolSchema = shared('contract.PendingToolSchema', () =>
  z
    .object({
      id: z.string(),
      name: z.string(),
      input: z.unknown(),
      /** Set once approval_requested is in the log. */
      approval: z
        .object({ policy: z.string(), expiresAt: z.number().optional(), onTimeout: z.enum(['allow', 'deny']) })
        .strict()
        .optional(),
      /** For a client tool with a time limit: when its answer is due (epoch ms), set when the wait starts. */
      resultDueAt: z.number().optional(),
      /** Under the `auto` policy: set once tool_judged is in the log, so a new run does not judge the call again. */
      judgement: z
        .object({ permission: z.enum(['allow', 'ask']), reasonCode: z.string().optional(), reason: z.string() })
        .strict()
        .optional(),
      /** The seq of the call's tool_use event, which names its API event (a thread's call is cross-posted by it). */
      useSeq: z.number().int().optional(),
      /** A thread's call: set once its wait for the client was cross-posted to the coordinator (threadAction). */
      crossPosted: z.boolean().optional(),
      /** Set once approval_resolved is in the log. */
      decision: z
        .object({ allow: z.boolean(), by: z.string().optional(), reason: z.string().optional() })
        .strict()
        .optional(),
    })
    .strict(),
);
export type PendingTool = z.infer<typeof PendingToolSchema>;

/** A snapshot of another session's sandbox (of the same name) that a fork's new workspace starts from. */
export const WorkspaceSourceSchema = shared('contract.WorkspaceSourceSchema', () =>
  z.object({ sessionId: z.string().min(1), snapshotSeq: z.number().int().min(1) }).strict(),
);
export type WorkspaceSource = z.infer<typeof WorkspaceSourceSchema>;

/** How many recent messageIds a new run remembers, so a client retrying across the handover is not duplicated. */
export const MAX_CARRIED_MESSAGE_IDS = 256;

/** Whether a session's status changes go to the webhook outbox, and when the API read that (ms since the epoch). */
export const StatusWebhooksSchema = shared('contract.StatusWebhooksSchema', () =>
  z.object({ on: z.boolean(), at: z.number() }).strict(),
);
export type StatusWebhooks = z.infer<typeof StatusWebhooksSchema>;

/**
 * What one run hands the next (continue-as-new, `agents wake`, `agents fork`). The events themselves are not
 * carried: they are sealed in the session archive, and the new run's log continues at `nextSeq`.
 */
export const CarrySchema = shared('contract.CarrySchema', () =>
  z
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
          /** Tool calls of the previous round still to finish (an approval, a client result or a sub-agent pending) before that model call. */
          tools: z.array(PendingToolSchema).optional(),
          /** Runs recorded before the tool gate: spawn_agent calls whose results the new run appends first. */
          waiting: z.array(z.string()).optional(),
        })
        .strict()
        .optional(),
      sandboxes: z.array(SandboxSlotSchema),
      lastHost: z.record(z.string(), z.string()),
      /**
       * A fork's sandboxes not provisioned yet, by name: the snapshot of another session their first workspace is
       * restored from (`agents fork --sandboxes`). An entry goes once that sandbox has been provisioned.
       */
      workspaceFrom: z.record(z.string(), WorkspaceSourceSchema).optional(),
      /** MCP tools listed by an earlier run, so the tool list (and the cached prefix) stays the same. */
      mcpTools: z
        .array(
          z
            .object({ name: z.string(), server: z.string(), tool: z.string(), spec: z.record(z.string(), z.unknown()) })
            .strict(),
        )
        .optional(),
      /** tool_use ids still without a result (a woken or forked run closes them). */
      openToolUses: z.array(z.string()).default([]),
      /** Set in a child session: the spawn_agent call it answers. */
      parent: ParentRefSchema.optional(),
      /** Child sessions still running (they report by signal to this session id, whichever run is current). */
      subagents: z.array(SubagentRefSchema).optional(),
      /** The part of `usage` that came from sub-agents. */
      subagentUsage: UsageSchema.optional(),
      /** The list cost counted so far, the prices it is counted with and the budget (src/session/list-cost.ts). */
      listCost: ListCostStateSchema.optional(),
      /** The session's outcomes (src/session/outcomes.ts); absent when it has none. */
      outcomes: z.array(OutcomeStateSchema).optional(),
      /** A session thread: who it is, and the coordinator's call its current turn answers. */
      thread: ThreadIdentitySchema.optional(),
      threadRequest: z.string().optional(),
      /** A coordinator: its threads, and its calls still waiting for a thread's reply (tool_use id, thread). */
      threads: z.array(ThreadRefSchema).optional(),
      /**
       * Whether the session reports its status changes to the webhook outbox, once a run has been told
       * (`statusWebhooksSignal`, or `statusWebhooks` in the input); absent: it reports them.
       */
      statusWebhooks: StatusWebhooksSchema.optional(),
      /** A coordinator: the thread calls cross-posted onto its log (tool_use id, thread, whether settled). */
      threadPosts: z
        .array(z.object({ toolUseId: z.string(), threadId: z.string(), settled: z.boolean() }).strict())
        .optional(),
      threadCalls: z
        .array(
          z
            .object({
              toolUseId: z.string(),
              threadId: z.string(),
              result: z.object({ output: z.string(), isError: z.boolean() }).strict().optional(),
            })
            .strict(),
        )
        .optional(),
    })
    .strict(),
);
export type Carry = z.infer<typeof CarrySchema>;

export const SessionInputSchema = shared('contract.SessionInputSchema', () =>
  z
    .object({
      agent: AgentSchema,
      message: UserMessageSchema.optional(),
      /** Present on every run after the first. */
      continued: CarrySchema.optional(),
      /** Why this run started: a continue-as-new handover, `agents wake`, or `agents fork`. */
      start: z.enum(['new', 'continued', 'woken', 'forked']).default('new'),
      forkedFrom: z
        .object({ sessionId: z.string().min(1), seq })
        .strict()
        .optional(),
      /** A child session: the spawn_agent call it answers, and the sandboxes its parent lends it. */
      parent: ParentRefSchema.optional(),
      lent: z.array(HandedSandboxSchema).optional(),
      /** A session thread of a coordinator (`parent` names the delegate call its first message answers). */
      thread: ThreadIdentitySchema.optional(),
      /** A new run's prices and budget (a continued one carries them in `continued`); absent: no cost is counted. */
      listCost: ListCostStateSchema.optional(),
      /**
       * An API session: whether its workspace had, at the start, an enabled webhook endpoint taking one of the events
       * the session reports (session.status_*, session.requires_action, session.budget_reached). When false the
       * session starts no outbox child per status change until `statusWebhooksSignal` says otherwise. Absent (runs
       * started before this field): it reports every change.
       */
      statusWebhooks: StatusWebhooksSchema.optional(),
    })
    .strict()
    .refine(
      (i) => (i.start === 'new') === (i.continued === undefined),
      'a continued, woken or forked run needs `continued`, a new one must not have it',
    )
    .refine((i) => (i.start === 'forked') === (i.forkedFrom !== undefined), 'a forked run needs `forkedFrom`'),
);
export type SessionInput = z.input<typeof SessionInputSchema>;
/** What a session returns when it ends: its last seq and why it ended. */
export interface SessionResult {
  lastSeq: number;
  reason: string;
}
/** The session workflow's signature, for code that starts one by name (a parent's child, the CLI). */
export type SessionWorkflow = (input: SessionInput) => Promise<SessionResult>;

export const userMessageSignal = defineSignal<[UserMessage]>('userMessage');
export const interruptSignal = defineSignal<[Reason?]>('interrupt');
export const endSignal = defineSignal<[Reason?]>('end');
export const sendMessageUpdate = defineUpdate<{ seq: number }, [UserMessage]>('sendMessage');
/**
 * An interrupt that answers with the seq of its `interrupted` event: the turn's, once it is cut, or one appended
 * at once when no turn runs. `seq` is null while a handover is in progress: that run appends it, after seq `after`,
 * before handing over.
 */
export const interruptUpdate = defineUpdate<{ seq: number | null; after: number }, [Reason]>('interruptAck');
/** What `sessions.update` changed, recorded in the log as `session_updated`. */
export const SessionUpdateSchema = shared('contract.SessionUpdateSchema', () =>
  z
    .object({
      title: z.string().max(500).nullable().optional(),
      metadata: z.record(z.string().max(1000), z.string().max(10_000)).optional(),
      /** The new budget, or null to remove it; refused at or below the list cost spent (`budget_not_raised`). */
      budget: MoneySchema.nullable().optional(),
      /**
       * The agent's tools and MCP servers replaced (only while the session waits for input): `tools` as the next
       * run's agent file takes them, `snapshot` the session's agent as the API shows it, for the log.
       */
      agent: z
        .object({ tools: AgentToolsSchema, snapshot: z.record(z.string(), z.unknown()) })
        .strict()
        .optional(),
    })
    .strict(),
);
export type SessionUpdate = z.infer<typeof SessionUpdateSchema>;
/**
 * A `user.define_outcome`: the agent works toward it and is graded after each turn. Answers with the seq of its
 * outcome_defined event; refused while another outcome is being worked on, and in a sub-agent's session.
 */
export const defineOutcomeUpdate = defineUpdate<{ seq: number }, [OutcomeDefinition]>('defineOutcome');
export { OutcomeDefinitionSchema };
export const updateSessionUpdate = defineUpdate<{ seq: number }, [SessionUpdate]>('updateSession');
export const eventsQuery = defineQuery<EventsPage, [EventsQueryArgs?]>('events');
export const statusQuery = defineQuery<SessionStatus>('status');
/** What a new run would be given if this one handed over now; `agents wake` reads it from a dead run. */
export const handoverQuery = defineQuery<{ agent: z.input<typeof AgentSchema>; carry: Carry; firstSeq: number }>(
  'handover',
);
/** A child's answer to its parent's spawn_agent call. */
export const subagentFinishedSignal = defineSignal<[SubagentReport]>('subagentFinished');
/** A session thread's reply to its coordinator (and its end). */
export const threadReplySignal = defineSignal<[ThreadReply]>('threadReply');
/** A thread's call waits for the client, or no longer does: the coordinator cross-posts it. */
export const threadActionSignal = defineSignal<[ThreadAction]>('threadAction');
/** The coordinator's follow-up to one of its threads. */
export const threadMessageSignal = defineSignal<[ThreadMessage]>('threadMessage');
/** Archives one of a coordinator's threads: the thread ends and takes no more messages. */
export const archiveThreadUpdate = defineUpdate<{ seq: number }, [{ threadId: string }]>('archiveThread');
/** The API's word that the workspace's webhook endpoints now do (or no longer do) take a session's status events. */
export const statusWebhooksSignal = defineSignal<[StatusWebhooks]>('statusWebhooks');
/** Another session handed this one a sandbox (its registry entry already names this session). */
export const sandboxReceivedSignal = defineSignal<[SandboxGift]>('sandboxReceived');
/** Passes one of the session's sandboxes to another session (`agents handoff FROM SANDBOX TO`). */
export const handoffSandboxUpdate = defineUpdate<{ sandboxId: string }, [HandoffRequest]>('handoffSandbox');
export const putFileUpdate = defineUpdate<{ path: string; bytes: number }, [PutFile]>('putFile');
export const resolveToolUseUpdate = defineUpdate<{ seq: number }, [ResolveToolUse]>('resolveToolUse');
export const submitToolResultUpdate = defineUpdate<{ seq: number }, [SubmitToolResult]>('submitToolResult');
export const getFileUpdate = defineUpdate<{ path: string; bytes: number; contentBase64: string }, [GetFile]>('getFile');
