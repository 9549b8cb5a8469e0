// Activity factory: the worker injects real dependencies, tests may inject others.
import { Context } from '@temporalio/activity';
import type { CachedSessionLog } from '../log/session-log';
import type { ModelClient, ModelReply } from '../model/client';
import { toModelFailure } from '../model/errors';
import { buildMessages } from '../session/context';
import { ContentBlockSchema } from '../session/events';
import type { ToolSpec } from '../session/tools';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';

export interface CallModelInput {
  sessionId: string;
  throughSeq: number;
  model: string;
  system?: string;
  tools: ToolSpec[];
  maxTokens: number;
  /** Prompt caching (absent in histories recorded before it existed: off). */
  caching?: boolean;
}

export interface ActivityDeps {
  model: ModelClient;
  log: CachedSessionLog;
}

const ReplyContentSchema = z.array(ContentBlockSchema);

export function createActivities(deps: ActivityDeps) {
  return {
    /** One model call over the session's log through `throughSeq`; streams and heartbeats while it runs. */
    async callModel(input: CallModelInput): Promise<ModelReply> {
      const ctx = Context.current();
      const events = await deps.log.readThrough(input.sessionId, input.throughSeq);
      const messages = buildMessages(events);
      // Heartbeat on a timer as well as on stream progress: a slow first byte must not look like a dead worker.
      const beat = setInterval(() => ctx.heartbeat(), 1000);
      try {
        const reply = await deps.model.createMessage(
          { sessionId: input.sessionId, model: input.model, system: input.system, messages, tools: input.tools, maxTokens: input.maxTokens, cache: input.caching === true },
          { signal: ctx.cancellationSignal, onProgress: () => ctx.heartbeat() },
        );
        const content = ReplyContentSchema.safeParse(reply.content);
        if (!content.success) {
          throw ApplicationFailure.create({ message: `model returned malformed content: ${content.error.message}`, type: 'ModelError.InvalidOutput' });
        }
        return reply;
      } catch (err) {
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
        throw toModelFailure(err);
      } finally {
        clearInterval(beat);
      }
    },
  };
}
