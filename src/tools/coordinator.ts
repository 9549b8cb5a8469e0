// The coordinator's tools in a multi-agent session: `delegate` starts a session thread running one of the roster's
// agents, and `message_thread` sends a follow-up to a thread that is idle. Each waits for the thread's reply,
// which is the tool's result; several calls in one reply run their threads in parallel.
import { z } from 'zod';
import { defineTool, oneLine } from './kind';
import { shared } from '../session/shared';

export const DelegateInputSchema = shared('coordinator.DelegateInputSchema', () =>
  z
    .object({
      agent: z.string().min(1).max(256).describe('the name of an agent on your roster'),
      message: z
        .string()
        .trim()
        .min(1, 'message must not be empty')
        .max(100_000)
        .describe('the task: what the agent should do and what to reply with'),
    })
    .strict(),
);

export const MessageThreadInputSchema = shared('coordinator.MessageThreadInputSchema', () =>
  z
    .object({
      thread_id: z.string().min(1).max(200).describe('the sthr_ id a delegate result named'),
      message: z.string().trim().min(1, 'message must not be empty').max(100_000).describe('the follow-up'),
    })
    .strict(),
);

export const delegate = defineTool({
  kind: 'delegate',
  runs: 'workflow',
  input: DelegateInputSchema,
  summary: (name, input) => oneLine(`${name} ${(input as { agent?: string })?.agent ?? ''}`),
  description:
    'Delegates a task to an agent on your roster. The agent runs in a session thread of its own, with its own ' +
    'context, model and tools, in the same sandbox and files as you. The result is its reply and the thread id; ' +
    'the thread keeps what it learned, so send follow-ups with message_thread. Several delegate calls in one reply ' +
    'run their threads in parallel.',
});

export const messageThread = defineTool({
  kind: 'message_thread',
  runs: 'workflow',
  input: MessageThreadInputSchema,
  summary: (name, input) => oneLine(`${name} ${(input as { thread_id?: string })?.thread_id ?? ''}`),
  description:
    'Sends a follow-up message to a session thread you started with delegate and waits for its reply. The thread ' +
    'must be idle (not answering another message) and not archived or terminated.',
});
