// The sessions of the key's workspace, newest first and paged: title, agent and version, status (and what an idle
// session waits for), age, usage and cost; filtered by agent and status through the list route's own parameters.
import { useEffect, useState } from 'preact/hooks';
import { call, listAll, withQuery, type Page } from './api';
import { age, cost, dollars, tokens, type Prices } from './formatters';
import { Link, sessionPath } from './router';
import { idleReason, type ApiEvent } from './timeline';
import type { Agent, Session } from './types';
import { modelOf } from './types';
import { Alert, StatusBadge } from './ui';

const PAGE_SIZE = 20;
const REFRESH_MS = 10_000;

/** What an idle session waits for: the stop reason of its latest `session.status_idle`. */
async function waitsFor(id: string): Promise<string> {
  const last = await call<Page<ApiEvent>>(
    'GET',
    withQuery(`/v1/sessions/${encodeURIComponent(id)}/events`, {
      'types[]': 'session.status_idle',
      order: 'desc',
      limit: 1,
    }),
  );
  const stop = (last.data[0]?.stop_reason ?? {}) as { type?: string; event_ids?: unknown[] };
  return idleReason(stop.type, stop.event_ids?.length ?? 0);
}

export function SessionsList(props: { prices: Prices }) {
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agent, setAgent] = useState('');
  const [status, setStatus] = useState('');
  // The cursors of the pages before this one, and this one's.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<Page<Session>>();
  const [details, setDetails] = useState<Record<string, string>>({});
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const cursor = cursors[cursors.length - 1];

  useEffect(() => {
    listAll<Agent>('/v1/agents', { limit: 100 }).then(setAgents, (e: Error) => setError(e.message));
  }, []);
  useEffect(() => {
    let live = true;
    const query = { limit: PAGE_SIZE, page: cursor, agent_id: agent || undefined, 'statuses[]': status || undefined };
    call<Page<Session>>('GET', withQuery('/v1/sessions', query)).then(
      async (p) => {
        if (!live) return;
        setPage(p);
        setError(undefined);
        const idle = p.data.filter((s) => s.status === 'idle');
        const found = await Promise.all(
          idle.map(async (s) => [s.id, await waitsFor(s.id).catch(() => 'idle')] as const),
        );
        if (live) setDetails(Object.fromEntries(found));
      },
      (e: Error) => live && setError(e.message),
    );
    const timer = setTimeout(() => setTick((t) => t + 1), REFRESH_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [agent, status, cursor, tick]);

  const refilter = (set: (v: string) => void) => (e: Event) => {
    set((e.currentTarget as HTMLSelectElement).value);
    setCursors([undefined]);
  };
  return (
    <main class="page">
      <div class="page-head">
        <h1>Sessions</h1>
        <Link href="/console/new" class="button">
          New session
        </Link>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Agent
          <select value={agent} onChange={refilter(setAgent)}>
            <option value="">All agents</option>
            {agents.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={refilter(setStatus)}>
            <option value="">Any status</option>
            <option value="running">Running</option>
            <option value="idle">Idle</option>
            <option value="terminated">Terminated</option>
          </select>
        </label>
        <button type="button" class="quiet" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </form>
      <Alert message={error} />
      {page && page.data.length === 0 && (
        <p class="empty">No sessions{agent || status ? ' match these filters' : ' yet: start one with New session'}.</p>
      )}
      {page && page.data.length > 0 && (
        <table class="sessions">
          <caption class="visually-hidden">Sessions, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">Agent</th>
              <th scope="col">Status</th>
              <th scope="col">Age</th>
              <th scope="col">Usage</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {page.data.map((s) => (
              <tr key={s.id}>
                <td data-label="Title">
                  <Link href={sessionPath(s.id)}>{s.title || s.id}</Link>
                  {s.title && <div class="id">{s.id}</div>}
                </td>
                <td data-label="Agent">
                  {s.agent.name} <span class="version">v{s.agent.version}</span>
                </td>
                <td data-label="Status">
                  <StatusBadge status={s.status} detail={s.status === 'idle' ? details[s.id] : undefined} />
                </td>
                <td data-label="Age">
                  <time dateTime={s.created_at} title={new Date(s.created_at).toLocaleString()}>
                    {age(s.created_at)}
                  </time>
                </td>
                <td data-label="Usage">
                  {tokens(s.usage.input_tokens + s.usage.cache_read_input_tokens)} in · {tokens(s.usage.output_tokens)}{' '}
                  out
                </td>
                <td data-label="Cost">{dollars(cost(props.prices, modelOf(s.agent), s.usage))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={cursors.length < 2} onClick={() => setCursors((c) => c.slice(0, -1))}>
          Newer
        </button>
        <button
          type="button"
          disabled={!page?.next_page}
          onClick={() => page?.next_page && setCursors((c) => [...c, page.next_page!])}
        >
          Older
        </button>
      </nav>
    </main>
  );
}
