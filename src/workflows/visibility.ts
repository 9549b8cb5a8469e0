// Keeps a session's search attributes and memo current, so the Web UI can find it by state, agent and model.
import type { SearchAttributePair } from '@temporalio/common';
import {
  condition,
  log,
  patched,
  proxySinks,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  FIRST_MESSAGE_MEMO,
  SESSION_STATE_KEY,
  firstMessageMemo,
  sessionSearchAttributes,
} from '../session/search-attributes';
import type { SessionEvent } from '../session/events';
import type { SessionState } from '../session/contract';
import type { SessionLogSinks } from '../session/log-push';

const { sessionLog } = proxySinks<SessionLogSinks>();

/**
 * How long a turn that starts from `waiting_for_user` runs before the state attribute says `running`. Each upsert
 * is a history event and a write to the server's visibility store: publishing every turn's `running` and then its
 * end made two per turn, and at saturation they were half of the server's CPU per text turn. A turn over within
 * this time is never published as running and writes no state; a longer one is, this long after it started
 * (visibility is eventually consistent anyway). Every other change is published when it comes. With model calls as
 * local activities, a workflow task's commands (this timer's too) reach the server only when the task completes
 * or heartbeats, so there `running` shows later.
 */
export const RUNNING_PUBLISH_DELAY_MS = 2000;
/** The summary of that timer in the history (and the Web UI). */
export const RUNNING_TIMER_SUMMARY = 'publish running';

/**
 * Sets the agent's name and model (and the state) where the start did not, then upserts the state each time
 * it changes (`running` only once a turn has lasted RUNNING_PUBLISH_DELAY_MS), and the first user message into the
 * memo if the start did not carry it. Runs for the whole run.
 */
export function trackVisibility(
  agent: { name: string; model: string },
  state: () => SessionState,
  firstUserText: () => string | undefined,
): void {
  const info = workflowInfo();
  const current = info.typedSearchAttributes;
  const missing = sessionSearchAttributes(agent, state()).filter((p) => current.get(p.key as never) !== p.value);
  if (missing.length > 0) upsertSearchAttributes(missing as SearchAttributePair[]);
  let published: string = state();
  void (async () => {
    for (;;) {
      await condition(() => state() !== published);
      // A turn starting from idle is published as running only if it still runs after the delay; one that leaves
      // an approval or a retry's wait is published at once, so those states clear promptly. Histories recorded
      // before the delay published every change at once.
      if (state() === 'running' && published === 'waiting_for_user' && patched('state-running-delay')) {
        // A timer the turn's own tasks start and cancel; only a turn that outlasts it gets a task more.
        const changed = await condition(() => state() !== 'running', RUNNING_PUBLISH_DELAY_MS, {
          summary: RUNNING_TIMER_SUMMARY,
        });
        // Changed first (the turn ended, or waits on someone): decide again from the state it reached.
        if (changed) continue;
      }
      if (state() === published) continue;
      published = state();
      upsertSearchAttributes([{ key: SESSION_STATE_KEY, value: published }]);
    }
  })();
  if (info.memo?.[FIRST_MESSAGE_MEMO] === undefined) {
    void (async () => {
      await condition(() => firstUserText() !== undefined);
      upsertMemo(firstMessageMemo(firstUserText()!));
    })();
  }
}

/**
 * One structured log line per appended event (the worker adds the session id, run and task queue). Tool errors
 * carry `errorKind`, so a broken sandbox (`infra`) reads apart from a failing command (`tool`); a tool's own output
 * is never logged. Not logged on replay.
 */
export function logEvent(event: SessionEvent): void {
  // To the worker, which pushes each task's events to the API's feeds (src/session/log-push.ts). Not on replay,
  // where those events were pushed when they were first appended (and a replay worker has no such sink).
  if (!workflowInfo().unsafe.isReplaying) sessionLog.appended(event);
  const fields: Record<string, unknown> = {
    sessionId: workflowInfo().workflowId,
    seq: event.seq,
    eventType: event.type,
  };
  if (event.type === 'tool_result' && event.error) {
    log.warn(`tool error (${event.error.kind})`, {
      ...fields,
      toolUseId: event.toolUseId,
      errorKind: event.error.kind,
      ...(event.error.kind === 'tool' ? {} : { error: event.error.message.slice(0, 300) }),
    });
  } else if (event.type === 'error') {
    log.warn(`session error (${event.kind})`, { ...fields, errorKind: event.kind, error: event.message.slice(0, 300) });
  } else {
    log.info('event appended', fields);
  }
}
