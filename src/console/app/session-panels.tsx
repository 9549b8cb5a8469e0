// A session page's panels beside its log: the spending against the budget, each outcome with its evaluations and
// grades, its sandboxes' workspace snapshots and restores, and a coordinator's threads as tabs, each thread's own
// log and status read from its events.
import type { ComponentChildren } from 'preact';
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
const When = (props: { at: string | null }) =>
  props.at ? (
    <time dateTime={props.at} title={new Date(props.at).toLocaleString()}>
      {age(props.at)} ago
    </time>
  ) : (
    <span>–</span>
  );

/** A size as people read it, the exact count of bytes in its tooltip. */
const Size = (props: { n: number }) => <span title={`${props.n} bytes`}>{bytes(props.n)}</span>;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Rows newest first, one column per [heading, cell]; at a phone's width each cell is labelled with its heading. */
function Table<T extends { id: string }>(props: {
  caption: ComponentChildren;
  rows: readonly T[];
  cols: Array<[string, (row: T) => ComponentChildren]>;
}) {
  return (
    <table class="data">
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          {props.cols.map(([h]) => (
            <th key={h} scope="col">
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {[...props.rows].reverse().map((row) => (
          <tr key={row.id}>
            {props.cols.map(([h, cell]) => (
              <td key={h} data-label={h}>
                {cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** One sandbox's snapshots, the bytes they added to storage in all, the latest, and its restores. */
function SandboxSnapshots(props: { name: string; snapshots: WorkspaceSnapshot[]; restores: WorkspaceRestore[] }) {
  const { name, snapshots, restores } = props;
  const latest = snapshots.reduce<WorkspaceSnapshot | undefined>((l, s) => (l && l.seq > s.seq ? l : s), undefined);
  const added = snapshots.reduce((n, s) => n + s.newBytes, 0);
  const of = () => <span class="visually-hidden"> of {name}</span>;
  return (
    <section class="sandbox-snapshots" aria-labelledby={`snapshots-${name}`}>
      <h3 id={`snapshots-${name}`}>Sandbox {name}</h3>
      <p class="summary">
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
          <Table
            caption={<>Snapshots{of()}</>}
            rows={snapshots}
            cols={[
              [
                'Snapshot',
                (s) => (
                  <>
                    {s.seq}
                    {s === latest && (
                      <>
                        {' '}
                        <span class="tag">latest</span>
                      </>
                    )}
                  </>
                ),
              ],
              ['Taken', (s) => <When at={s.at} />],
              ['Files', (s) => s.files],
              ['Size', (s) => <Size n={s.sizeBytes} />],
              [
                'Added to storage',
                (s) =>
                  s.newChunks === 0 ? (
                    `nothing new (${plural(s.chunkCount, 'chunk')}, all stored already)`
                  ) : (
                    <>
                      <Size n={s.newBytes} /> in {plural(s.newChunks, 'new chunk')} of {s.chunkCount}
                    </>
                  ),
              ],
            ]}
          />
        </div>
      )}
      {restores.length > 0 && (
        <Table
          caption={<>Restores{of()}</>}
          rows={restores}
          cols={[
            ['Restored', (r) => <When at={r.at} />],
            [
              'From snapshot',
              (r) => (
                <>
                  {r.seq} ({plural(r.files, 'file')}, <Size n={r.sizeBytes} />)
                </>
              ),
            ],
            ['Snapshot taken', (r) => <When at={r.takenAt} />],
            [
              'Into sandbox',
              (r) => (
                <span class="id" title={r.sandboxId}>
                  {r.sandboxId.slice(0, 12)}
                </span>
              ),
            ],
            ['Took', (r) => `${(r.durationMs / 1000).toFixed(1)} s`],
          ]}
        />
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
  const names = [
    ...new Set(
      [...props.snapshots, ...props.restores]
        .sort((a, b) => (a.at ?? '').localeCompare(b.at ?? ''))
        .map((e) => e.sandbox),
    ),
  ];
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
