// handoff_sandbox: passes one of the session's sandboxes, files and all, to another session for good.
import { z } from 'zod';
import { SessionIdSchema } from '../session/identifiers';
import { defineTool, oneLine } from './kind';
import { shared } from '../session/shared';

export const HandoffSandboxInputSchema = shared('handoff-sandbox.HandoffSandboxInputSchema', () =>
  z
    .object({
      sandbox: z.string().min(1).max(31).describe('the name of your sandbox'),
      to: SessionIdSchema.describe('the session id to give it to'),
    })
    .strict(),
);
export type HandoffSandboxInput = z.infer<typeof HandoffSandboxInputSchema>;

export const handoffSandbox = defineTool({
  kind: 'handoff_sandbox',
  runs: 'workflow',
  input: HandoffSandboxInputSchema,
  summary: (name) => oneLine(name),
  description:
    'Passes one of your sandboxes, with its files, to another session for good. The container stays where it is; ' +
    'from then on only that session may use it, and your own later calls to it are denied.',
});
