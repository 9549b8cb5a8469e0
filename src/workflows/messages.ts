// Every signal, update and query of a session, defined once; the client and the tests import them from here.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { AgentSchema } from '../session/agent';
import type { SessionEvent, Usage } from '../session/events';

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
}

export const SessionStateSchema = z.enum(['running', 'waiting_for_user', 'requires_action', 'ended']);
export type SessionState = z.infer<typeof SessionStateSchema>;
export interface SandboxStatus {
  name: string;
  sandboxId: string;
  host: string;
  state: 'running' | 'stopped';
}
export interface SessionStatus {
  state: SessionState;
  lastSeq: number;
  sandboxes: SandboxStatus[];
  usage: Usage;
}

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

export const SessionInputSchema = z
  .object({
    agent: AgentSchema,
    message: UserMessageSchema.optional(),
  })
  .strict();
export type SessionInput = z.input<typeof SessionInputSchema>;

export const userMessageSignal = defineSignal<[UserMessage]>('userMessage');
export const interruptSignal = defineSignal<[Reason?]>('interrupt');
export const endSignal = defineSignal<[Reason?]>('end');
export const sendMessageUpdate = defineUpdate<{ seq: number }, [UserMessage]>('sendMessage');
export const eventsQuery = defineQuery<EventsPage, [EventsQueryArgs?]>('events');
export const statusQuery = defineQuery<SessionStatus>('status');
export const putFileUpdate = defineUpdate<{ path: string; bytes: number }, [PutFile]>('putFile');
export const getFileUpdate = defineUpdate<{ path: string; bytes: number; contentBase64: string }, [GetFile]>('getFile');
