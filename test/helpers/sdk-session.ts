// A session driven through the SDK, as the API suites drive it: scripted tool calls, the log read until a condition
// holds, the tool results' text, and a user message.
import type Anthropic from '@anthropic-ai/sdk';

export type ApiEvent = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

/** The session's events, read again every 100 ms until `done` holds of them (at most `tries` times). */
export async function eventsUntil(
  client: Anthropic,
  id: string,
  done: (events: ApiEvent[]) => boolean,
  tries = 900,
): Promise<ApiEvent[]> {
  let events: ApiEvent[] = [];
  for (let i = 0; i < tries; i++) {
    events = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${id} did not get there: ${JSON.stringify(events.map((e) => e.type))}`);
}

/** Whether the session went idle at the end of a turn at least `n` times. */
export const idles = (n: number) => (events: ApiEvent[]) =>
  events.filter(
    (e) => e.type === 'session.status_idle' && (e as { stop_reason: { type: string } }).stop_reason.type === 'end_turn',
  ).length >= n;

/** A scripted model step calling bash. */
export const bashStep = (command: string) => ({
  reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
});
/** A scripted model step ending the turn. */
export const doneStep = { reply: { content: [{ type: 'text' as const, text: 'done' }] } };

/** Each tool result's text, in order. */
export const toolResultTexts = (events: ApiEvent[]) =>
  events
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => ((e as { content?: { text?: string }[] }).content ?? []).map((b) => b.text ?? '').join(''));

export const sayTo = (client: Anthropic, id: string, text: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
