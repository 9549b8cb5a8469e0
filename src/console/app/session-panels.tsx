// A session page's panels beside its log: the spending against the budget, each outcome with its evaluations and
// grades, its sandboxes' workspace snapshots and restores, and a coordinator's threads as tabs, each thread's own
// log and status read from its events.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { listAll } from './api';
import { age, bytes } from './formatters';
import { StableItem, type Steer } from './items';
import { Timeline, type ApiEvent, type Grade, type WorkspaceRestore, type WorkspaceSnapshot } from './timeline';
import type { Money, OutcomeEvaluation, Session, SessionThread } from './types';
import { StatusBadge } from './ui';

/** How often an open thread tab reads its events again while the thread may still change. */
const THREAD_POLL_MS = 1500;

/** An amount of the API's money: whole minor units (cents) as a decimal string. */
const usd = (m: Money) => `$${(Number(m.amount) / 100).toFixed(2)}`;

/** The session's list cost against its budget, as a meter; just the spending when it has no budget. */
export function Spending(props: { session: Session }) {
  const spent = props.session.usage.list_cost;
  if (!spent) return null;
  const budget = props.session.budget?.max_list_cost;
  if (!budget)
    return (
      <p class="spending" aria-label="Spending">
        Spent {usd(spent)} (no budget)
      </p>
    );
  const max = Number(budget.amount);
  const value = Number(spent.amount);
  return (
    <p class={`spending${value >= max ? ' reached' : ''}`} aria-label="Spending against the budget">
      <meter min={0} max={max} value={Math.min(value, max)} high={max * 0.8} optimum={0} />
      Spent {usd(spent)} of a {usd(budget)} budget
      {value >= max ? ': reached, no model call until it is raised or removed' : ''}
    </p>
  );
}

/** Each outcome the session works toward: where it stands, and every evaluation with its grade and explanation. */
export function Outcomes(props: { evaluations: OutcomeEvaluation[]; grades: Grade[] }) {
  if (props.evaluations.length === 0) return null;
  return (
    <section class="outcomes" aria-label="Outcomes">
      {props.evaluations.map((o) => (
        <div class="outcome" key={o.outcome_id}>
          <h2>
            Outcome: {o.description} <StatusBadge status={o.result} />
          </h2>
          <ol class="grades" aria-label={`Evaluations of ${o.outcome_id}`}>
            {props.grades
              .filter((g) => g.outcomeId === o.outcome_id)
              .map((g) => (
                <li key={g.iteration} class={`grade grade-${g.result}`}>
                  <strong>
                    Evaluation {g.iteration + 1}: {g.result.replace(/_/g, ' ')}
                  </strong>
                  {g.explanation && <span class="explanation"> — {g.explanation}</span>}
                </li>
              ))}
          </ol>
        </div>
      ))}
    </section>
  );
}

/** A coordinator's threads as tabs: the primary thread (the session's own log) first, then each thread it started. */
export function ThreadTabs(props: {
  threads: SessionThread[];
  selected: string | undefined;
  onSelect: (id: string | undefined) => void;
}) {
  if (props.threads.length < 2) return null;
  // The list is newest first: the primary thread leads the tabs, the others follow in the order they started.
  const ordered = [...props.threads].sort(
    (a, b) =>
      Number(a.parent_thread_id !== null) - Number(b.parent_thread_id !== null) ||
      a.created_at.localeCompare(b.created_at),
  );
  return (
    <div class="thread-tabs" role="tablist" aria-label="Threads">
      {ordered.map((t) => {
        const primary = t.parent_thread_id === null;
        const selected = primary ? props.selected === undefined : props.selected === t.id;
        return (
          <button
            key={t.id}
            type="button"
            role="tab"
            aria-selected={selected}
            class={selected ? 'selected' : ''}
            onClick={() => props.onSelect(primary ? undefined : t.id)}
          >
            {primary ? `${t.agent.name} (primary)` : t.agent.name}{' '}
            <StatusBadge status={t.archived_at ? 'archived' : t.status} />
          </button>
        );
      })}
    </div>
  );
}

/** One thread's own events, read again while it may still change. */
export function ThreadLog(props: { sessionId: string; thread: SessionThread; steer: Steer }) {
  const timeline = useMemo(() => new Timeline(), [props.thread.id]);
  const [, setVersion] = useState(0);
  const path = `/v1/sessions/${encodeURIComponent(props.sessionId)}/threads/${encodeURIComponent(props.thread.id)}/events`;
  const settled = props.thread.status === 'terminated' || props.thread.archived_at !== null;
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        if (timeline.push(await listAll<ApiEvent>(path))) setVersion((v) => v + 1);
      } catch {
        // Read again on the next tick.
      }
      if (live && !settled) timer = setTimeout(() => void read(), THREAD_POLL_MS);
    };
    void read();
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
  }, [path, settled]);
  return (
    <ol class="log" aria-label={`Events of thread ${props.thread.agent.name}`} data-events={timeline.size}>
      {timeline.items.map((it) => (
        <StableItem key={it.id} item={it} waiting={timeline.waiting.has(it.id)} steer={props.steer} />
      ))}
    </ol>
  );
}

/** A time as its age, with the instant itself for a tooltip and machines. */
function When(props: { at: string | null }) {
  if (!props.at) return <span>–</span>;
  return (
    <time dateTime={props.at} title={new Date(props.at).toLocaleString()}>
      {age(props.at)} ago
    </time>
  );
}

/** A size as people read it, the exact count of bytes in its tooltip. */
const Size = (props: { n: number }) => <span title={`${props.n} bytes`}>{bytes(props.n)}</span>;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What a snapshot added to storage: its new chunks, or nothing when the workspace held every chunk already. */
function Added(props: { s: WorkspaceSnapshot }) {
  const { newChunks, newBytes, chunkCount } = props.s;
  if (newChunks === 0) return <span>nothing new ({plural(chunkCount, 'chunk')}, all stored already)</span>;
  return (
    <span>
      <Size n={newBytes} /> in {plural(newChunks, 'new chunk')} of {chunkCount}
    </span>
  );
}

/** One sandbox's snapshots, newest first, the bytes they added to storage in all, the latest, and its restores. */
function SandboxSnapshots(props: { name: string; snapshots: WorkspaceSnapshot[]; restores: WorkspaceRestore[] }) {
  const { name, snapshots, restores } = props;
  const latest = snapshots.reduce<WorkspaceSnapshot | undefined>((l, s) => (l && l.seq > s.seq ? l : s), undefined);
  const added = snapshots.reduce((n, s) => n + s.newBytes, 0);
  const titleId = `snapshots-${name}`;
  return (
    <section class="sandbox-snapshots" aria-labelledby={titleId}>
      <h3 id={titleId}>Sandbox {name}</h3>
      <p class="summary" aria-label={`Summary of ${name}`}>
        {plural(snapshots.length, 'snapshot')}, <Size n={added} /> added to storage in all
        {latest && (
          <>
            . Latest: snapshot {latest.seq}, {plural(latest.files, 'file')}, <Size n={latest.sizeBytes} />, taken{' '}
            <When at={latest.at} />
          </>
        )}
        {restores.length > 0 && `. Restored ${restores.length === 1 ? 'once' : `${restores.length} times`}`}.
      </p>
      {snapshots.length > 0 && (
        <div class="scroll">
          <table class="data">
            <caption class="visually-hidden">Snapshots of {name}</caption>
            <thead>
              <tr>
                <th scope="col">Snapshot</th>
                <th scope="col">Taken</th>
                <th scope="col">Files</th>
                <th scope="col">Size</th>
                <th scope="col">Added to storage</th>
              </tr>
            </thead>
            <tbody>
              {[...snapshots].reverse().map((s) => (
                <tr key={s.id} class={s === latest ? 'latest' : ''}>
                  <td data-label="Snapshot">
                    {s.seq}
                    {s === latest && (
                      <>
                        {' '}
                        <span class="tag">latest</span>
                      </>
                    )}
                  </td>
                  <td data-label="Taken">
                    <When at={s.at} />
                  </td>
                  <td data-label="Files">{s.files}</td>
                  <td data-label="Size">
                    <Size n={s.sizeBytes} />
                  </td>
                  <td data-label="Added to storage">
                    <Added s={s} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {restores.length > 0 && (
        <table class="data">
          <caption class="visually-hidden">Restores of {name}</caption>
          <thead>
            <tr>
              <th scope="col">Restored</th>
              <th scope="col">From snapshot</th>
              <th scope="col">Snapshot taken</th>
              <th scope="col">Into sandbox</th>
              <th scope="col">Took</th>
            </tr>
          </thead>
          <tbody>
            {[...restores].reverse().map((r) => (
              <tr key={r.id}>
                <td data-label="Restored">
                  <When at={r.at} />
                </td>
                <td data-label="From snapshot">
                  {r.seq} ({plural(r.files, 'file')}, <Size n={r.sizeBytes} />)
                </td>
                <td data-label="Snapshot taken">
                  <When at={r.takenAt} />
                </td>
                <td data-label="Into sandbox">
                  <span class="id">{r.sandboxId}</span>
                </td>
                <td data-label="Took">{(r.durationMs / 1000).toFixed(1)} s</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/**
 * The session's workspace snapshots and restores, per sandbox (in the order each first appears in the log); nothing
 * when the log has none.
 */
export function WorkspaceSnapshots(props: {
  snapshots: readonly WorkspaceSnapshot[];
  restores: readonly WorkspaceRestore[];
}) {
  if (props.snapshots.length === 0 && props.restores.length === 0) return null;
  const names: string[] = [];
  for (const e of [...props.snapshots, ...props.restores].sort((a, b) => (a.at ?? '').localeCompare(b.at ?? '')))
    if (!names.includes(e.sandbox)) names.push(e.sandbox);
  return (
    <section class="panel snapshots" aria-labelledby="snapshots-title">
      <h2 id="snapshots-title">Workspace snapshots</h2>
      {names.map((name) => (
        <SandboxSnapshots
          key={name}
          name={name}
          snapshots={props.snapshots.filter((s) => s.sandbox === name)}
          restores={props.restores.filter((r) => r.sandbox === name)}
        />
      ))}
    </section>
  );
}
