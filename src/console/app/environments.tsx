// The workspace's environments, and a self-hosted one's work queue: its figures (GET .../work/stats), its work items
// (GET .../work) and the workers polling it (GET .../work/workers), read again every few seconds while the page is
// open. A work item's `secret` is never shown: the list route answers it as null, and the page has no place for it.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, withQuery, type Page } from './api';
import { age } from './formatters';
import { environmentPath, Link, sessionPath } from './router';
import type { Environment, QueueStats, QueueWorker, WorkItem } from './types';
import { Alert } from './ui';

const PAGE_SIZE = 20;
/** The list's queue figures change slowly; one environment's page follows its queue closely. */
const LIST_REFRESH_MS = 10_000;
export const QUEUE_REFRESH_MS = 3_000;
/** Work items shown at first, and how many more each "Show more" adds. */
const WORK_PAGE = 50;
/** The list routes' largest page. */
const MAX_LIMIT = 100;

const envApi = (id: string) => `/v1/environments/${encodeURIComponent(id)}`;
export const isSelfHosted = (e: Pick<Environment, 'config'>) => e.config?.type === 'self_hosted';

function When(props: { at: string | null | undefined; none?: string }) {
  if (!props.at) return <span class="detail">{props.none ?? '–'}</span>;
  return (
    <time dateTime={props.at} title={new Date(props.at).toLocaleString()}>
      {age(props.at)} ago
    </time>
  );
}

/** The first `max` items of a list, following its cursors. */
async function firstItems<T>(path: string, max: number): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let page: string | undefined;
  for (;;) {
    const r = await call<Page<T>>('GET', withQuery(path, { limit: Math.min(MAX_LIMIT, max - items.length), page }));
    items.push(...r.data);
    page = r.next_page ?? undefined;
    if (!page || items.length >= max) return { items: items.slice(0, max), more: page !== undefined };
  }
}

/** A queue's figures in a few words, for the list. */
function queueSummary(s: QueueStats): string {
  const workers = s.workers_polling ?? 0;
  return `${s.depth} queued · ${s.pending} pending · ${workers} worker${workers === 1 ? '' : 's'} polling`;
}

export function Environments() {
  const [archived, setArchived] = useState(false);
  // The cursors of the pages before this one, and this one's.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<Page<Environment>>();
  const [queues, setQueues] = useState<Record<string, QueueStats | undefined>>({});
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const cursor = cursors[cursors.length - 1];

  useEffect(() => {
    let live = true;
    const query = { limit: PAGE_SIZE, page: cursor, include_archived: archived ? 'true' : undefined };
    call<Page<Environment>>('GET', withQuery('/v1/environments', query)).then(
      async (p) => {
        if (!live) return;
        setPage(p);
        setError(undefined);
        const found = await Promise.all(
          p.data
            .filter(isSelfHosted)
            .map(async (e) => [
              e.id,
              await call<QueueStats>('GET', `${envApi(e.id)}/work/stats`).catch(() => undefined),
            ]),
        );
        if (live) setQueues(Object.fromEntries(found));
      },
      (e: Error) => live && setError(e.message),
    );
    const timer = setTimeout(() => setTick((t) => t + 1), LIST_REFRESH_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [archived, cursor, tick]);

  return (
    <main class="page">
      <div class="page-head">
        <h1>Environments</h1>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label class="check">
          <input
            type="checkbox"
            checked={archived}
            onChange={(e) => {
              setArchived(e.currentTarget.checked);
              setCursors([undefined]);
            }}
          />
          Show archived environments
        </label>
      </form>
      <Alert message={error} />
      {page && page.data.length === 0 && (
        <p class="empty">No environments yet: create one with the SDK (`client.beta.environments.create`).</p>
      )}
      {page && page.data.length > 0 && (
        <table class="data environments">
          <caption class="visually-hidden">Environments, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Queue</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {page.data.map((e) => {
              const selfHosted = isSelfHosted(e);
              const queue = queues[e.id];
              return (
                <tr key={e.id}>
                  <td data-label="Name">
                    <div>
                      {selfHosted ? <Link href={environmentPath(e.id)}>{e.name}</Link> : e.name}
                      {e.archived_at && <span class="tag">archived</span>}
                      <div class="id">{e.id}</div>
                    </div>
                  </td>
                  <td data-label="Type">{e.config.type}</td>
                  <td data-label="Queue">
                    {!selfHosted ? (
                      <span class="detail">runs on the platform's hands hosts</span>
                    ) : queue ? (
                      queueSummary(queue)
                    ) : (
                      <span class="detail">–</span>
                    )}
                  </td>
                  <td data-label="Created">
                    <When at={e.created_at} />
                  </td>
                </tr>
              );
            })}
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

/** What a work item is for: a session links to its page. */
function WorkFor(props: { data: WorkItem['data'] }) {
  const d = props.data;
  if (d.type === 'session')
    return (
      <div>
        session{' '}
        <Link href={sessionPath(d.id)} class="id">
          {d.id}
        </Link>
      </div>
    );
  return (
    <div>
      {d.type ?? 'healthcheck'} <span class="id">{d.id}</span>
    </div>
  );
}

function QueuePanel(props: { stats?: QueueStats }) {
  const s = props.stats;
  return (
    <section class="panel" aria-labelledby="queue-title">
      <h2 id="queue-title">Queue</h2>
      {!s ? (
        <p class="empty">Reading…</p>
      ) : (
        <dl class="figures">
          <div>
            <dt>Queued</dt>
            <dd data-figure="depth">{s.depth}</dd>
          </div>
          <div>
            <dt>Pending</dt>
            <dd data-figure="pending">{s.pending}</dd>
          </div>
          <div>
            <dt>Oldest queued</dt>
            <dd data-figure="oldest">
              <When at={s.oldest_queued_at} none="none" />
            </dd>
          </div>
          <div>
            <dt>Workers polling</dt>
            <dd data-figure="workers">{s.workers_polling ?? 0}</dd>
          </div>
        </dl>
      )}
      <p class="hint">
        Queued: waiting for a worker. Pending: polled by a worker, not yet acknowledged. Workers polling: in the last 30
        s.
      </p>
    </section>
  );
}

function StartWorker(props: { environmentId: string }) {
  const id = props.environmentId;
  const sdk = [
    "import Anthropic from '@anthropic-ai/sdk';",
    '',
    `const client = new Anthropic({ baseURL: '${location.origin}' });`,
    'await client.beta.environments.work',
    '  .worker({',
    `    environmentId: '${id}',`,
    '    environmentKey: process.env.ANTHROPIC_ENVIRONMENT_KEY,',
    "    workdir: '/srv/agent-work',",
    '  })',
    '  .run();',
  ].join('\n');
  return (
    <div class="start-worker">
      <p class="empty">No worker has polled in the last 5 minutes.</p>
      <p>Start one on the machine that should run the tools: mint an environment key for it,</p>
      <pre class="output">
        <code>agents environment-keys create --environment {id}</code>
      </pre>
      <p>
        then run the SDK's own worker with that key in <code>ANTHROPIC_ENVIRONMENT_KEY</code>:
      </p>
      <pre class="output">
        <code>{sdk}</code>
      </pre>
    </div>
  );
}

function WorkersPanel(props: { environmentId: string; workers?: QueueWorker[] }) {
  const w = props.workers;
  return (
    <section class="panel" aria-labelledby="workers-title">
      <h2 id="workers-title">Workers</h2>
      {!w && <p class="empty">Reading…</p>}
      {w && w.length === 0 && <StartWorker environmentId={props.environmentId} />}
      {w && w.length > 0 && (
        <table class="data workers">
          <caption class="visually-hidden">Workers that polled in the last 5 minutes</caption>
          <thead>
            <tr>
              <th scope="col">Worker</th>
              <th scope="col">Last polled</th>
              <th scope="col">Holds</th>
            </tr>
          </thead>
          <tbody>
            {w.map((x) => (
              <tr key={x.worker_id}>
                <td data-label="Worker">
                  <span class="id">{x.worker_id}</span>
                </td>
                <td data-label="Last polled">
                  <When at={x.last_polled_at} />
                </td>
                <td data-label="Holds">
                  {x.work_ids.length === 0 ? (
                    <span class="detail">nothing</span>
                  ) : (
                    <div>
                      {x.work_ids.map((id) => (
                        <div key={id} class="id">
                          {id}
                        </div>
                      ))}
                    </div>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function WorkPanel(props: { work?: { items: WorkItem[]; more: boolean }; onMore: () => void }) {
  const w = props.work;
  return (
    <section class="panel" aria-labelledby="work-title">
      <h2 id="work-title">Work items</h2>
      {!w && <p class="empty">Reading…</p>}
      {w && w.items.length === 0 && (
        <p class="empty">No work yet: a session on this environment enqueues one when it needs its tools run.</p>
      )}
      {w && w.items.length > 0 && (
        <table class="data work">
          <caption class="visually-hidden">Work items</caption>
          <thead>
            <tr>
              <th scope="col">Work item</th>
              <th scope="col">For</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
              <th scope="col">Acknowledged</th>
              <th scope="col">Last heartbeat</th>
              <th scope="col">Stopped</th>
            </tr>
          </thead>
          <tbody>
            {w.items.map((x) => (
              <tr key={x.id} data-work={x.id}>
                <td data-label="Work item">
                  <span class="id">{x.id}</span>
                </td>
                <td data-label="For">
                  <WorkFor data={x.data} />
                </td>
                <td data-label="State">
                  <span class={`state state-${x.state}`}>{x.state}</span>
                </td>
                <td data-label="Created">
                  <When at={x.created_at} />
                </td>
                <td data-label="Acknowledged">
                  <When at={x.acknowledged_at} />
                </td>
                <td data-label="Last heartbeat">
                  <When at={x.latest_heartbeat_at} />
                </td>
                <td data-label="Stopped">
                  <When at={x.stopped_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {w?.more && (
        <div class="buttons">
          <button type="button" class="quiet" onClick={props.onMore}>
            Show more work items
          </button>
        </div>
      )}
    </section>
  );
}

export function EnvironmentPage(props: { id: string }) {
  const [env, setEnv] = useState<Environment>();
  const [missing, setMissing] = useState<string>();
  const [stats, setStats] = useState<QueueStats>();
  const [work, setWork] = useState<{ items: WorkItem[]; more: boolean }>();
  const [workers, setWorkers] = useState<QueueWorker[]>();
  const [shown, setShown] = useState(WORK_PAGE);
  const [updated, setUpdated] = useState<string>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const api = envApi(props.id);

  useEffect(() => {
    call<Environment>('GET', api).then(setEnv, (e: unknown) => {
      if (e instanceof ApiError && e.status === 404) setMissing(e.message);
      else setError((e as Error).message);
    });
  }, [props.id]);

  // One reading of the queue, then the next one a few seconds after it answers: never two at once.
  const selfHosted = env ? isSelfHosted(env) : false;
  useEffect(() => {
    if (!selfHosted) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void Promise.all([
      call<QueueStats>('GET', `${api}/work/stats`),
      firstItems<WorkItem>(`${api}/work`, shown),
      call<{ data: QueueWorker[] }>('GET', `${api}/work/workers`),
    ])
      .then(
        ([s, w, k]) => {
          if (!live) return;
          setStats(s);
          setWork(w);
          setWorkers(k.data);
          setUpdated(new Date().toISOString());
          setError(undefined);
        },
        (e: Error) => live && setError(`Could not read the queue: ${e.message}`),
      )
      .finally(() => {
        if (live) timer = setTimeout(() => setTick((t) => t + 1), QUEUE_REFRESH_MS);
      });
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [props.id, selfHosted, shown, tick]);

  if (missing) {
    return (
      <main class="page">
        <h1>Environment not found</h1>
        <Alert message={missing} />
      </main>
    );
  }
  return (
    <main class="page environment">
      <div class="page-head">
        <div>
          <h1>
            {env?.name ?? props.id}
            {env?.archived_at && <span class="tag">archived</span>}
          </h1>
          <p class="sub">
            <span class="id">{props.id}</span>
            {env && ` · ${env.config.type === 'self_hosted' ? 'self-hosted' : env.config.type}`}
            {env?.description ? ` · ${env.description}` : ''}
          </p>
        </div>
        {selfHosted && (
          <div class="head-status">
            <span class={`link ${updated ? 'link-live' : ''}`} aria-live="polite">
              {updated ? 'live' : 'reading'}
            </span>
            {updated && (
              <span class="detail">
                every {QUEUE_REFRESH_MS / 1000} s · read at{' '}
                <time dateTime={updated}>{new Date(updated).toLocaleTimeString()}</time>
              </span>
            )}
            <button type="button" class="quiet small" onClick={() => setTick((t) => t + 1)}>
              Refresh
            </button>
          </div>
        )}
      </div>
      <Alert message={error} />
      {env && !selfHosted && (
        <p class="empty">
          A {env.config.type} environment: its sessions run on the platform's own hands hosts, with no work queue.
        </p>
      )}
      {selfHosted && (
        <>
          <div class="panels">
            <QueuePanel stats={stats} />
            <WorkersPanel environmentId={props.id} workers={workers} />
          </div>
          <WorkPanel work={work} onMore={() => setShown((n) => n + WORK_PAGE)} />
        </>
      )}
    </main>
  );
}
