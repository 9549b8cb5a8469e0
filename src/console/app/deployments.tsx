// The workspace's deployments: each one's schedule and next runs, pause, unpause and run-now, and the latest runs,
// each linking to the session it created or saying why it failed. Read again every few seconds while open.
import { useEffect, useState } from 'preact/hooks';
import { call, withQuery, type Page } from './api';
import { Link, sessionPath } from './router';
import { Alert } from './ui';

const REFRESH_MS = 5_000;

interface Deployment {
  id: string;
  name: string;
  status: 'active' | 'paused';
  paused_reason: { type: 'manual' } | { type: 'error'; error: { type: string } } | null;
  archived_at: string | null;
  schedule: { expression: string; timezone: string; upcoming_runs_at?: string[]; last_run_at?: string | null } | null;
}

interface DeploymentRun {
  id: string;
  deployment_id: string;
  session_id: string | null;
  error: { type: string; message: string } | null;
  trigger_context: { type: 'schedule'; scheduled_at: string } | { type: 'manual' };
  created_at: string;
}

const api = (id: string, verb: string) => `/v1/deployments/${encodeURIComponent(id)}/${verb}`;
const time = (t: string) => new Date(t).toLocaleString();

export function Deployments() {
  const [deployments, setDeployments] = useState<Deployment[]>();
  const [runs, setRuns] = useState<DeploymentRun[]>([]);
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  const [busy, setBusy] = useState<string>();

  useEffect(() => {
    let live = true;
    Promise.all([
      call<Page<Deployment>>('GET', withQuery('/v1/deployments', { limit: 50 })),
      call<Page<DeploymentRun>>('GET', withQuery('/v1/deployment_runs', { limit: 30 })),
    ]).then(
      ([d, r]) => {
        if (!live) return;
        setDeployments(d.data);
        setRuns(r.data);
        setError(undefined);
      },
      (e: Error) => live && setError(e.message),
    );
    const timer = setTimeout(() => setTick((t) => t + 1), REFRESH_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [tick]);

  const act = async (d: Deployment, verb: 'pause' | 'unpause' | 'run') => {
    setBusy(`${d.id}:${verb}`);
    try {
      await call('POST', api(d.id, verb));
      setError(undefined);
    } catch (e) {
      setError(`${verb} ${d.name}: ${(e as Error).message}`);
    } finally {
      setBusy(undefined);
      setTick((t) => t + 1);
    }
  };
  const names = Object.fromEntries((deployments ?? []).map((d) => [d.id, d.name]));

  return (
    <main class="page">
      <div class="page-head">
        <h1>Deployments</h1>
      </div>
      <Alert message={error} />
      {deployments && deployments.length === 0 && (
        <p class="empty">No deployments yet: create one with the SDK (`client.beta.deployments.create`).</p>
      )}
      {deployments && deployments.length > 0 && (
        <table class="data deployments">
          <caption class="visually-hidden">Deployments, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Schedule</th>
              <th scope="col">Upcoming runs</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {deployments.map((d) => (
              <tr key={d.id} data-deployment={d.id}>
                <td data-label="Name">
                  {d.name}
                  <div class="id">{d.id}</div>
                </td>
                <td data-label="Schedule">
                  {d.schedule ? (
                    <code>{`${d.schedule.expression} (${d.schedule.timezone})`}</code>
                  ) : (
                    <span class="detail">manual runs only</span>
                  )}
                </td>
                <td data-label="Upcoming runs">
                  {(d.schedule?.upcoming_runs_at ?? []).slice(0, 3).map((t) => (
                    <div key={t}>
                      <time dateTime={t}>{time(t)}</time>
                    </div>
                  ))}
                </td>
                <td data-label="Status">
                  {d.status}
                  {d.paused_reason?.type === 'error' && <div class="detail">{d.paused_reason.error.type}</div>}
                </td>
                <td data-label="Actions">
                  {d.status === 'paused' ? (
                    <button type="button" disabled={busy !== undefined} onClick={() => void act(d, 'unpause')}>
                      Unpause
                    </button>
                  ) : (
                    <button type="button" disabled={busy !== undefined} onClick={() => void act(d, 'pause')}>
                      Pause
                    </button>
                  )}{' '}
                  <button type="button" disabled={busy !== undefined} onClick={() => void act(d, 'run')}>
                    Run now
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Recent runs</h2>
      {runs.length === 0 ? (
        <p class="empty">No runs yet.</p>
      ) : (
        <table class="data deployment-runs">
          <caption class="visually-hidden">Deployment runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Deployment</th>
              <th scope="col">Trigger</th>
              <th scope="col">Result</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.id} data-run={r.id}>
                <td data-label="When">
                  <time dateTime={r.created_at}>{time(r.created_at)}</time>
                </td>
                <td data-label="Deployment">{names[r.deployment_id] ?? r.deployment_id}</td>
                <td data-label="Trigger">
                  {r.trigger_context.type === 'schedule'
                    ? `schedule ${time(r.trigger_context.scheduled_at)}`
                    : 'manual'}
                </td>
                <td data-label="Result">
                  {r.session_id ? (
                    <Link href={sessionPath(r.session_id)}>{r.session_id}</Link>
                  ) : (
                    <span class="detail">{`failed: ${r.error?.type}: ${r.error?.message}`}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
