// When a turn is over, decided once for every reader of the log (the API's projection, `agents send` and `watch`,
// the demo): the model's reply that calls no tool, an interrupt, an error the run gave up on, the budget reached, or
// the session's end.
import type { SessionEvent } from './events';

/** Why an event ends the turn it belongs to, or undefined when the turn goes on after it. */
export type TurnEnd = 'end_turn' | 'interrupted' | 'retries_exhausted' | 'budget_reached' | 'session_ended';

export function turnEnd(e: SessionEvent): TurnEnd | undefined {
  switch (e.type) {
    case 'assistant_message':
      return e.stopReason !== 'tool_use' ? 'end_turn' : undefined;
    case 'interrupted':
      return 'interrupted';
    case 'error':
      return 'retries_exhausted';
    case 'budget_reached':
      return 'budget_reached';
    case 'session_ended':
      return 'session_ended';
    default:
      return undefined;
  }
}

export function endsTurn(e: SessionEvent): boolean {
  return turnEnd(e) !== undefined;
}
