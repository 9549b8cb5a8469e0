// The search attributes and memo sessions are found by in the Web UI and `agents list`; safe for workflow code.
import { SearchAttributeType, defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';

export const SESSION_STATE_KEY = defineSearchAttributeKey('AgentSessionState', SearchAttributeType.KEYWORD);
export const AGENT_NAME_KEY = defineSearchAttributeKey('AgentName', SearchAttributeType.KEYWORD);
export const AGENT_MODEL_KEY = defineSearchAttributeKey('AgentModel', SearchAttributeType.KEYWORD);
/** The API workspace a session belongs to; `default` for sessions started from the command line or a client. */
export const WORKSPACE_KEY = defineSearchAttributeKey('AgentWorkspace', SearchAttributeType.KEYWORD);
export const DEFAULT_WORKSPACE = 'default';
/** Every attribute brain workers register; the workspace is set once, at start, and carried across runs. */
export const SESSION_SEARCH_ATTRIBUTES = [SESSION_STATE_KEY, AGENT_NAME_KEY, AGENT_MODEL_KEY, WORKSPACE_KEY] as const;

/** The memo field holding the session's first user message, cut to MEMO_MESSAGE_CHARS. */
export const FIRST_MESSAGE_MEMO = 'firstMessage';
export const MEMO_MESSAGE_CHARS = 500;

export function firstMessageMemo(text: string): Record<string, string> {
  return {
    [FIRST_MESSAGE_MEMO]: text.length > MEMO_MESSAGE_CHARS ? `${text.slice(0, MEMO_MESSAGE_CHARS - 1)}…` : text,
  };
}

/** The attributes a session starts with; the workflow keeps the state current. */
export function sessionSearchAttributes(
  agent: { name: string; model: string },
  state = 'waiting_for_user',
): SearchAttributePair[] {
  return [
    { key: SESSION_STATE_KEY, value: state },
    { key: AGENT_NAME_KEY, value: agent.name },
    { key: AGENT_MODEL_KEY, value: agent.model },
  ];
}
