// One-line human rendering of events, for `agents events`, `agents watch` and the demo.
import type { SessionEvent } from './events';

const clip = (s: string, n = 300) => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > n ? `${flat.slice(0, n)}…` : flat;
};

export function formatEvent(e: SessionEvent): string {
  const head = `#${e.seq} ${e.type}`;
  switch (e.type) {
    case 'session_started':
      return `${head} agent=${String(e.agent.name)} model=${String(e.agent.model)}`;
    case 'user_message':
      return `${head}${e.source ? ` (${e.source})` : ''}: ${clip(e.text)}`;
    case 'approval_requested':
      return `${head} ${e.toolUseId}: ${e.policy}`;
    case 'approval_resolved':
      return `${head} ${e.toolUseId}: ${e.allow ? 'approved' : 'denied'} by ${e.by}${e.reason ? `: ${clip(e.reason, 200)}` : ''}`;
    case 'tool_judged':
      return `${head} ${e.toolUseId}: ${e.permission}${e.reasonCode ? ` (${e.reasonCode})` : ''} by ${e.model}: ${clip(e.reason, 200)}`;
    case 'assistant_message': {
      const text = e.content
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join(' ');
      const tools = e.content.filter((b) => b.type === 'tool_use').length;
      return `${head}: ${clip(text)}${tools ? ` [${tools} tool call${tools > 1 ? 's' : ''}]` : ''} (${e.stopReason ?? 'no stop reason'})`;
    }
    case 'tool_use':
      return `${head} ${e.name} ${clip(JSON.stringify(e.input), 200)}`;
    case 'tool_result':
      return `${head}${e.isError ? ` [${e.error?.kind ?? 'error'}]` : ''}: ${clip(e.output, 200)}`;
    case 'error':
      return `${head} [${e.kind}]: ${e.message}`;
    case 'model_retry_scheduled':
      return `${head} attempt ${e.attempt} failed [${e.error.type}]: ${clip(e.error.message, 200)}; retry at ${e.retryAt}`;
    case 'model_retry_started':
      return `${head} attempt ${e.attempt}`;
    case 'budget_reached':
      return `${head}: list cost $${(e.costNanoUsd / 1e9).toFixed(4)} of a $${(e.budget.amount / 100).toFixed(2)} budget${e.unpriced ? ' (a model with no price was called)' : ''}; no model call until it is raised`;
    case 'interrupted':
    case 'session_ended':
      return `${head}: ${e.reason}`;
    default: {
      const { seq: _s, type: _t, time: _time, ...rest } = e;
      return `${head} ${clip(JSON.stringify(rest), 300)}`;
    }
  }
}
