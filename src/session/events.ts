// The session event contract: one zod schema per event type; every type is inferred from these.
import { z } from 'zod';
import { UsageSchema } from './usage';
import { MoneySchema } from './list-cost';
import { shared } from './shared';

export { UsageSchema, type Usage } from './usage';

const base = { seq: z.number().int().nonnegative(), time: z.string() };

/** Anthropic content blocks are passed through as the API returns them; only their shape is checked. */
export const ContentBlockSchema = shared('events.ContentBlockSchema', () =>
  z
    .object({ type: z.string() })
    .passthrough()
    .superRefine((block, ctx) => {
      const b = block as Record<string, unknown>;
      if (block.type === 'text' && typeof b.text !== 'string')
        ctx.addIssue({ code: 'custom', message: 'text block needs a string `text`' });
      // The API takes back only a non-empty id and a dictionary input: anything else would refuse every later request.
      if (
        block.type === 'tool_use' &&
        (typeof b.id !== 'string' ||
          b.id === '' ||
          typeof b.name !== 'string' ||
          typeof b.input !== 'object' ||
          b.input === null ||
          Array.isArray(b.input))
      )
        ctx.addIssue({
          code: 'custom',
          message: 'tool_use block needs a non-empty string `id`, a string `name` and an object `input`',
        });
    }),
);
export type ContentBlock = z.infer<typeof ContentBlockSchema>;

export const SessionStartedEventSchema = shared('events.SessionStartedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('session_started'),
    agent: z.record(z.string(), z.unknown()),
    forkedFrom: z.object({ sessionId: z.string(), seq: z.number().int() }).optional(),
    parent: z.object({ sessionId: z.string(), toolUseId: z.string() }).optional(),
    /** The budget the session was created with (its list cost is counted against it). */
    budget: MoneySchema.optional(),
  }),
);
export const UserMessageEventSchema = shared('events.UserMessageEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('user_message'),
    text: z.string(),
    messageId: z.string().optional(),
    /** Set when the harness, not the user, wrote the message (e.g. default@2's nudge after an empty reply). */
    source: z.literal('harness').optional(),
    /** In a session thread: the thread (the coordinator's primary thread) whose message this is. */
    fromThread: z.string().optional(),
  }),
);
export const AssistantMessageEventSchema = shared('events.AssistantMessageEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('assistant_message'),
    content: z.array(ContentBlockSchema),
    stopReason: z.string().nullable(),
    usage: UsageSchema,
    /**
     * The last seq the model call read. Input appended after it (while the call was in flight) comes after this
     * reply in the conversation and is answered next. Absent in logs recorded before it existed.
     */
    throughSeq: z.number().int().nonnegative().optional(),
    /** The call's list cost in nano-USD (src/session/list-cost.ts); absent where the session counts no cost. */
    costNanoUsd: z.number().int().nonnegative().optional(),
  }),
);
export const ToolUseEventSchema = shared('events.ToolUseEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    input: z.unknown(),
  }),
);
export const ToolErrorKindSchema = shared('events.ToolErrorKindSchema', () => z.enum(['tool', 'infra', 'denied']));
export const ToolResultEventSchema = shared('events.ToolResultEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('tool_result'),
    toolUseId: z.string(),
    output: z.string(),
    isError: z.boolean(),
    error: z.object({ kind: ToolErrorKindSchema, message: z.string() }).optional(),
    /** Where the whole output is kept when `output` had to be cut: a file in one of the session's sandboxes. */
    outputRef: z.object({ sandbox: z.string(), path: z.string(), bytes: z.number().int().nonnegative() }).optional(),
  }),
);
export const ApprovalRequestedEventSchema = shared('events.ApprovalRequestedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('approval_requested'),
    toolUseId: z.string(),
    policy: z.string(),
  }),
);
export const ApprovalResolvedEventSchema = shared('events.ApprovalResolvedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('approval_resolved'),
    toolUseId: z.string(),
    allow: z.boolean(),
    reason: z.string().optional(),
    /** Who decided: the name given with the decision (default `user`), or `timeout` when the policy's default applied. */
    by: z.string(),
  }),
);
/**
 * Under the `auto` policy, the judge model's decision on tool call `toolUseId`, made once before the call runs:
 * `allow` runs it, `ask` holds it for a person (an approval_requested follows). `reasonCode` is the API's
 * (`high_risk`: the judge flagged the call; `indeterminate`: no judgement was reached, because the judge failed,
 * timed out or answered out of format); `reason` says why in words. Absent usage: no model reply came.
 */
export const ToolJudgedEventSchema = shared('events.ToolJudgedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('tool_judged'),
    toolUseId: z.string(),
    permission: z.enum(['allow', 'ask']),
    reasonCode: z.string().optional(),
    reason: z.string(),
    /** The judge's model. */
    model: z.string(),
    usage: UsageSchema.optional(),
  }),
);
export const SandboxProvisionedEventSchema = shared('events.SandboxProvisionedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('sandbox_provisioned'),
    name: z.string(),
    sandboxId: z.string(),
    host: z.string(),
    ms: z.number(),
    resumed: z.boolean(),
    /** `runsc` (gVisor) or `runc`; absent in logs written before it was recorded. */
    runtime: z.string().optional(),
    loosened: z.array(z.string()),
  }),
);
/** A sandbox's workspace was captured after a tool call (src/hands/workspace-snapshots.ts); the content is not in the log. */
export const WorkspaceSnapshotEventSchema = shared('events.WorkspaceSnapshotEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('workspace_snapshot'),
    name: z.string(),
    /** The snapshot's number among the sandbox's (not the log's seq). */
    snapshotSeq: z.number(),
    files: z.number(),
    sizeBytes: z.number(),
    chunkCount: z.number(),
    newChunks: z.number(),
    newBytes: z.number(),
  }),
);
/** A new workspace was given the sandbox's latest snapshot (a fork's: its source's, see `from`) before any call ran in it. */
export const WorkspaceRestoredEventSchema = shared('events.WorkspaceRestoredEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('workspace_restored'),
    name: z.string(),
    sandboxId: z.string(),
    host: z.string(),
    /** The snapshot's number among the sandbox's (not the log's seq). */
    snapshotSeq: z.number(),
    takenAt: z.string(),
    files: z.number(),
    sizeBytes: z.number(),
    ms: z.number(),
    /**
     * A fork's first workspace: the source's snapshot at or before the fork point, which the fork took as its own
     * snapshot `snapshotSeq` (`agents fork --sandboxes`).
     */
    from: z.object({ sessionId: z.string(), snapshotSeq: z.number() }).optional(),
  }),
);
/** A sandbox is provisioned again after it was lost or paused; the session is `rescheduling` until it is ready. */
export const SandboxReschedulingEventSchema = shared('events.SandboxReschedulingEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('sandbox_rescheduling'),
    name: z.string(),
    reason: z.enum(['lost', 'paused']),
  }),
);
/** An idle sandbox was paused: its workspace captured (snapshot `snapshotSeq`, 0: never changed) and the sandbox removed. */
export const SandboxPausedEventSchema = shared('events.SandboxPausedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('sandbox_paused'),
    name: z.string(),
    sandboxId: z.string(),
    snapshotSeq: z.number(),
  }),
);
export const SandboxLostEventSchema = shared('events.SandboxLostEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('sandbox_lost'),
    name: z.string(),
    sandboxId: z.string(),
    reason: z.string(),
  }),
);
export const SandboxHandedOffEventSchema = shared('events.SandboxHandedOffEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('sandbox_handed_off'),
    name: z.string(),
    sandboxId: z.string(),
    from: z.string(),
    to: z.string(),
  }),
);
/** The other side of a hand-off: a sandbox another session passed to this one, which now owns it. */
export const SandboxReceivedEventSchema = shared('events.SandboxReceivedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('sandbox_received'),
    name: z.string(),
    sandboxId: z.string(),
    from: z.string(),
    host: z.string(),
  }),
);
/** A child session started by the spawn_agent call `toolUseId`; its own log is under `sessionId`. */
export const SubagentStartedEventSchema = shared('events.SubagentStartedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('subagent_started'),
    sessionId: z.string(),
    toolUseId: z.string(),
    agent: z.string().optional(),
  }),
);
/** The child's answer arrived (or the child failed); `usage` is the child's whole usage, its own children's included. */
export const SubagentFinishedEventSchema = shared('events.SubagentFinishedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('subagent_finished'),
    sessionId: z.string(),
    toolUseId: z.string(),
    isError: z.boolean(),
    usage: UsageSchema.optional(),
    /** The child's whole list cost in nano-USD, its own children's included; absent where no cost is counted. */
    costNanoUsd: z.number().int().nonnegative().optional(),
  }),
);
/** A coordinator started a session thread (`threadId`) of roster agent `agent`; its own log is under `sessionId`. */
export const ThreadCreatedEventSchema = shared('events.ThreadCreatedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('thread_created'),
    threadId: z.string(),
    sessionId: z.string(),
    agent: z.string(),
  }),
);
/** A session thread's status changed: in the coordinator's log for each of its threads, and in the thread's own. */
export const ThreadStatusEventSchema = shared('events.ThreadStatusEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('thread_status'),
    threadId: z.string(),
    agent: z.string(),
    status: z.enum(['running', 'idle', 'terminated']),
    /** Why an idle thread stopped: its reply (end_turn), or a failure it could not recover from. */
    stopReason: z.enum(['end_turn', 'retries_exhausted']).optional(),
    /** In the coordinator's log: the thread's whole usage as it last reported it. */
    usage: UsageSchema.optional(),
  }),
);
/** A message between threads: `sent` to thread `threadId`, or `received` from it. */
export const ThreadMessageEventSchema = shared('events.ThreadMessageEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('thread_message'),
    direction: z.enum(['sent', 'received']),
    threadId: z.string(),
    /** The roster agent on the other side; absent when it is the coordinator. */
    agent: z.string().optional(),
    text: z.string(),
  }),
);
/** A session thread was archived: it ended, and accepts no more messages. */
export const ThreadArchivedEventSchema = shared('events.ThreadArchivedEventSchema', () =>
  z.object({ ...base, type: z.literal('thread_archived'), threadId: z.string() }),
);
/**
 * In a coordinator's log: a thread's call waits for the client (`waiting`), or no longer does (`settled`). The
 * API shows a waiting one as a copy of the thread's `agent.*_tool_use` event (its id, `sessionId`'s event `useSeq`)
 * with `session_thread_id`; the answer goes to the thread, by that id.
 */
export const ThreadToolCallEventSchema = shared('events.ThreadToolCallEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('thread_tool_call'),
    threadId: z.string(),
    /** The thread's own session, whose log holds the call. */
    sessionId: z.string(),
    toolUseId: z.string(),
    state: z.enum(['waiting', 'settled']),
    useSeq: z.number().int().optional(),
    name: z.string().optional(),
    input: z.unknown().optional(),
    waitsFor: z.enum(['confirmation', 'result']).optional(),
    policy: z.string().optional(),
  }),
);
export const ContextCompactedEventSchema = shared('events.ContextCompactedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('context_compacted'),
    throughSeq: z.number().int(),
    summary: z.string(),
    tokensBefore: z.number().int(),
    tokensAfter: z.number().int(),
  }),
);
export const InterruptedEventSchema = shared('events.InterruptedEventSchema', () =>
  z.object({ ...base, type: z.literal('interrupted'), reason: z.string() }),
);
export const ErrorEventSchema = shared('events.ErrorEventSchema', () =>
  z.object({ ...base, type: z.literal('error'), kind: z.string(), message: z.string() }),
);
/**
 * `sessions.update` changed the session's title, metadata, budget or agent (only what changed; `metadata` is the whole new
 * bag; `budget` null: removed).
 */
export const SessionUpdatedEventSchema = shared('events.SessionUpdatedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('session_updated'),
    title: z.string().nullable().optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    budget: MoneySchema.nullable().optional(),
    /** The session's agent after an update of its tools or MCP servers, as the API shows it (whole, not a diff). */
    agent: z.record(z.string(), z.unknown()).optional(),
  }),
);
/**
 * The turn stopped before a model call: the session's list cost (`costNanoUsd`) had reached its budget, or a model
 * with no price had been called. No model call is made until the budget is raised or removed.
 */
export const BudgetReachedEventSchema = shared('events.BudgetReachedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('budget_reached'),
    costNanoUsd: z.number().int().nonnegative(),
    budget: MoneySchema,
    unpriced: z.boolean().optional(),
  }),
);
/**
 * A model call failed with a transient error (`error.type`, e.g. `ModelError.Overloaded`) and is tried again at
 * `retryAt` (the server's retry-after, else the policy's backoff); `attempt` is the attempt that failed.
 */
export const ModelRetryScheduledEventSchema = shared('events.ModelRetryScheduledEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('model_retry_scheduled'),
    attempt: z.number().int().positive(),
    error: z.object({ type: z.string(), message: z.string() }),
    retryAt: z.string(),
  }),
);
/** The wait after a model_retry_scheduled is over: attempt `attempt` of the call goes ahead. */
export const ModelRetryStartedEventSchema = shared('events.ModelRetryStartedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('model_retry_started'),
    attempt: z.number().int().positive(),
  }),
);
/**
 * A `user.define_outcome`: the agent works toward `description` (given to it as a harness message after this
 * event), graded against `rubric` (a file rubric's content, read when it was sent) for at most `maxIterations`
 * evaluations.
 */
export const OutcomeDefinedEventSchema = shared('events.OutcomeDefinedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('outcome_defined'),
    outcomeId: z.string(),
    description: z.string(),
    rubric: z.string(),
    rubricFileId: z.string().optional(),
    maxIterations: z.number().int().positive(),
  }),
);
/** The grader starts evaluation `iteration` (0-indexed) of outcome `outcomeId`. */
export const OutcomeEvaluationStartedEventSchema = shared('events.OutcomeEvaluationStartedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('outcome_evaluation_started'),
    outcomeId: z.string(),
    iteration: z.number().int().nonnegative(),
  }),
);
/** The grader of evaluation `iteration` is still running (a heartbeat). */
export const OutcomeEvaluationOngoingEventSchema = shared('events.OutcomeEvaluationOngoingEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('outcome_evaluation_ongoing'),
    outcomeId: z.string(),
    iteration: z.number().int().nonnegative(),
  }),
);
/**
 * Evaluation `iteration` of outcome `outcomeId` ended with `result` (src/session/outcomes.ts); `needs_revision` is
 * followed by another iteration, the others end the outcome. Recorded also when the outcome ends with no evaluation
 * running (an interrupt or a failed turn while the agent worked): `evaluated` is false then. The grader's model,
 * usage and list cost, when a reply came.
 */
export const OutcomeEvaluatedEventSchema = shared('events.OutcomeEvaluatedEventSchema', () =>
  z.object({
    ...base,
    type: z.literal('outcome_evaluated'),
    outcomeId: z.string(),
    iteration: z.number().int().nonnegative(),
    result: z.enum(['satisfied', 'needs_revision', 'max_iterations_reached', 'failed', 'interrupted']),
    explanation: z.string(),
    evaluated: z.boolean(),
    model: z.string().optional(),
    usage: UsageSchema.optional(),
    costNanoUsd: z.number().int().nonnegative().optional(),
  }),
);
export const SessionEndedEventSchema = shared('events.SessionEndedEventSchema', () =>
  z.object({ ...base, type: z.literal('session_ended'), reason: z.string() }),
);

export const SessionEventSchema = shared('events.SessionEventSchema', () =>
  z.discriminatedUnion('type', [
    SessionStartedEventSchema,
    UserMessageEventSchema,
    AssistantMessageEventSchema,
    ToolUseEventSchema,
    ToolResultEventSchema,
    ApprovalRequestedEventSchema,
    ApprovalResolvedEventSchema,
    ToolJudgedEventSchema,
    SandboxProvisionedEventSchema,
    SandboxLostEventSchema,
    WorkspaceSnapshotEventSchema,
    WorkspaceRestoredEventSchema,
    SandboxReschedulingEventSchema,
    SandboxPausedEventSchema,
    SandboxHandedOffEventSchema,
    SandboxReceivedEventSchema,
    SubagentStartedEventSchema,
    SubagentFinishedEventSchema,
    ThreadCreatedEventSchema,
    ThreadStatusEventSchema,
    ThreadMessageEventSchema,
    ThreadArchivedEventSchema,
    ThreadToolCallEventSchema,
    ContextCompactedEventSchema,
    InterruptedEventSchema,
    ErrorEventSchema,
    SessionUpdatedEventSchema,
    BudgetReachedEventSchema,
    ModelRetryScheduledEventSchema,
    ModelRetryStartedEventSchema,
    OutcomeDefinedEventSchema,
    OutcomeEvaluationStartedEventSchema,
    OutcomeEvaluationOngoingEventSchema,
    OutcomeEvaluatedEventSchema,
    SessionEndedEventSchema,
  ]),
);
export type SessionEvent = z.infer<typeof SessionEventSchema>;
export type SessionEventType = SessionEvent['type'];
export type EventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;
/** An event before the log numbers and timestamps it. */
export type NewEvent = SessionEvent extends infer E
  ? E extends SessionEvent
    ? Omit<E, 'seq' | 'time'>
    : never
  : never;

export const EVENT_TYPES = SessionEventSchema.options.map((o) => o.shape.type.value) as SessionEventType[];
