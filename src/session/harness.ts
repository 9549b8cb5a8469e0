// Harness versions: `harness: name@version` in the agent file picks the decision loop a session runs.
// A version never changes behaviour once sessions run it; a new behaviour is a new version.

export interface HarnessVersion {
  /** Re-prompt a model that ends its turn with an empty reply (no text, no tool call), at most this many times a turn. */
  repromptEmptyReplies: number;
}

export const HARNESSES: Record<string, HarnessVersion> = {
  /** The plain loop: model call, tool calls, repeat until the model stops calling tools. */
  'default@1': { repromptEmptyReplies: 0 },
  /** default@1 plus a workaround for models that sometimes return an empty reply: ask once more, twice at most. */
  'default@2': { repromptEmptyReplies: 2 },
};

/** The nudge the harness sends after an empty reply (a user_message with `source: "harness"`). */
export const EMPTY_REPLY_NUDGE =
  'Your last reply was empty. Please continue: answer the previous message or call a tool.';

export function harnessOf(name: string): HarnessVersion | undefined {
  return Object.prototype.hasOwnProperty.call(HARNESSES, name) ? HARNESSES[name] : undefined;
}

/** A reply with no tool call and no non-blank text. */
export function isEmptyReply(content: readonly { type: string; text?: unknown }[]): boolean {
  return content.every((b) => b.type === 'text' && (typeof b.text !== 'string' || b.text.trim() === ''));
}
