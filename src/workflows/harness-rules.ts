// The harness's per-version decisions inside the workflow's loop; versions are defined in session/harness.ts.
import { patched } from '@temporalio/workflow';
import { harnessOf, isEmptyReply } from '../session/harness';
import type { ContentBlock } from '../session/events';
import { RETIRED_WORKAROUNDS } from './harness-retired';

export type Workaround = 'empty-reply-reprompt';

/** Whether `harness` applies `workaround` here; a retired one still applies when replaying history from before its retirement. */
export function workaroundActive(harness: string, workaround: Workaround): boolean {
  const patchId = RETIRED_WORKAROUNDS[`${harness}/${workaround}`];
  return patchId === undefined || !patched(patchId);
}

/** After a reply with no tool call: whether to nudge the model and ask again (`sent` nudges so far this turn). */
export function shouldReprompt(harness: string, content: readonly ContentBlock[], sent: number): boolean {
  const version = harnessOf(harness);
  if (!version || sent >= version.repromptEmptyReplies || !isEmptyReply(content as { type: string; text?: unknown }[]))
    return false;
  return workaroundActive(harness, 'empty-reply-reprompt');
}
