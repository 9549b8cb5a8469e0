// When a turn is over, decided once for the log's readers (`agents send` and `watch`, the demo): the model's reply
// that calls no tool, an error the run gave up on, an interrupt, or the session's end.
import type { SessionEvent } from './events';

export function endsTurn(e: SessionEvent): boolean {
  return (
    (e.type === 'assistant_message' && e.stopReason !== 'tool_use') ||
    e.type === 'error' ||
    e.type === 'interrupted' ||
    e.type === 'session_ended'
  );
}
