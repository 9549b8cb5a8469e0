// The workspace's webhook endpoints (GET /v1/platform/webhooks, the platform's own route): each one's URL, event
// types, whether and why it is disabled, and its recent delivery attempts with their HTTP status or why none was
// sent. Read again every few seconds while the page is open. Signing secrets are never shown: the route has none.
import { useEffect, useState } from 'preact/hooks';
import { call } from './api';
import { age } from './formatters';
import { Alert } from './ui';

export const WEBHOOKS_REFRESH_MS = 5_000;

export interface WebhookAttempt {
  event_id: string;
  event_type: string;
  attempt: number;
  at: string;
  outcome: 'delivered' | 'failed' | 'refused';
  status_code: number | null;
  error: string | null;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  event_types: string[] | null;
  disabled: boolean;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: string;
  recent_attempts: WebhookAttempt[];
}

function Attempts(props: { attempts: WebhookAttempt[] }) {
  if (props.attempts.length === 0) return <p class="empty">No deliveries yet.</p>;
  return (
    <table class="data webhook-attempts">
      <caption class="visually-hidden">Recent delivery attempts, newest first</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Event</th>
          <th scope="col">Attempt</th>
          <th scope="col">Result</th>
        </tr>
      </thead>
      <tbody>
        {props.attempts.map((a) => (
          <tr key={`${a.event_id}-${a.attempt}`} class={`outcome-${a.outcome}`}>
            <td>
              <time dateTime={a.at} title={new Date(a.at).toLocaleString()}>
                {age(a.at)} ago
              </time>
            </td>
            <td>
              {a.event_type}
              <div class="id">{a.event_id}</div>
            </td>
            <td>{a.attempt}</td>
            <td>
              <span class={`status status-${a.outcome}`}>{a.outcome}</span>
              {a.status_code !== null && <span class="detail"> HTTP {a.status_code}</span>}
              {a.status_code === null && a.error && <div class="detail">{a.error}</div>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Webhooks() {
  const [endpoints, setEndpoints] = useState<WebhookEndpoint[]>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    call<{ data: WebhookEndpoint[] }>('GET', '/v1/platform/webhooks').then(
      (r) => {
        if (!live) return;
        setEndpoints(r.data);
        setError(undefined);
      },
      (e: Error) => live && setError(e.message),
    );
    const timer = setTimeout(() => setTick((t) => t + 1), WEBHOOKS_REFRESH_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [tick]);
  return (
    <main class="page">
      <div class="page-head">
        <h1>Webhooks</h1>
      </div>
      <Alert message={error} />
      {endpoints?.length === 0 && (
        <p class="empty">
          No endpoints yet: register one with <code>agents webhooks add URL --workspace NAME</code>.
        </p>
      )}
      {endpoints?.map((e) => (
        <section key={e.id} class="webhook-endpoint" aria-labelledby={`endpoint-${e.id}`}>
          <h2 id={`endpoint-${e.id}`}>
            {e.url} <span class={`tag ${e.disabled ? 'tag-disabled' : ''}`}>{e.disabled ? 'disabled' : 'enabled'}</span>
          </h2>
          <div class="id">{e.id}</div>
          {e.disabled && e.disabled_reason && <p class="error">Disabled: {e.disabled_reason}</p>}
          <p class="detail">
            {e.event_types ? e.event_types.join(', ') : 'all event types'}
            {e.consecutive_failures > 0 && ` · ${e.consecutive_failures} failed attempts in a row`}
          </p>
          <Attempts attempts={e.recent_attempts} />
        </section>
      ))}
    </main>
  );
}
