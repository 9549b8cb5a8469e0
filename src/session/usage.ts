// A model call's token counts: in the log's assistant messages and in the workflow's results. Its own module, so
// the workflow bundle, which needs only this schema, does not build the whole event catalogue per session.
import { z } from 'zod';
import { shared } from './shared';

export const UsageSchema = shared('usage.UsageSchema', () =>
  z.object({
    inputTokens: z.number().int().nonnegative(),
    outputTokens: z.number().int().nonnegative(),
    cacheReadInputTokens: z.number().int().nonnegative(),
    cacheCreationInputTokens: z.number().int().nonnegative(),
    /**
     * The part of cacheCreationInputTokens written with a 1-hour TTL, as the model's usage reports it; the rest were
     * 5-minute writes. Absent when there were none (and in logs written before it was recorded).
     */
    cacheCreation1hInputTokens: z.number().int().nonnegative().optional(),
  }),
);
export type Usage = z.infer<typeof UsageSchema>;
