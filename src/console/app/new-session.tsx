// Starts a session from one of the workspace's agents and environments, with a first message, then opens it.
import { useEffect, useState } from 'preact/hooks';
import { call, listAll } from './api';
import { navigate, sessionPath } from './router';
import type { Agent, Environment, Session } from './types';
import { Alert } from './ui';

export function NewSession() {
  const [agents, setAgents] = useState<Agent[]>();
  const [envs, setEnvs] = useState<Environment[]>();
  const [agent, setAgent] = useState('');
  const [env, setEnv] = useState('');
  const [title, setTitle] = useState('');
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  useEffect(() => {
    // The live ones of a list, and the first of them chosen.
    const load = <T extends { id: string; archived_at: string | null }>(
      path: string,
      set: (v: T[]) => void,
      choose: (id: string) => void,
    ) =>
      listAll<T>(path, { limit: 100 }).then(
        (all) => {
          const live = all.filter((x) => !x.archived_at);
          set(live);
          choose(live[0]?.id ?? '');
        },
        (e: Error) => setError(e.message),
      );
    void load<Agent>('/v1/agents', setAgents, setAgent);
    void load<Environment>('/v1/environments', setEnvs, setEnv);
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!agent || !env) return setError('Choose an agent and an environment.');
    setBusy(true);
    setError(undefined);
    try {
      const first = text.trim();
      const s = await call<Session>('POST', '/v1/sessions', {
        agent,
        environment_id: env,
        ...(title.trim() ? { title: title.trim() } : {}),
        ...(first ? { initial_events: [{ type: 'user.message', content: [{ type: 'text', text: first }] }] } : {}),
      });
      navigate(sessionPath(s.id));
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  const none = (agents && agents.length === 0) || (envs && envs.length === 0);
  return (
    <main class="page narrow">
      <h1>New session</h1>
      {none && (
        <p class="empty">
          This workspace needs an agent and an environment first: create them with the SDK (`client.beta.agents.create`,
          `client.beta.environments.create`).
        </p>
      )}
      <form class="stack" onSubmit={submit}>
        <label for="agent">Agent</label>
        <select id="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
          {(agents ?? []).map((a) => (
            <option key={a.id} value={a.id}>
              {a.name} (v{a.version})
            </option>
          ))}
        </select>
        <label for="environment">Environment</label>
        <select id="environment" value={env} onChange={(e) => setEnv(e.currentTarget.value)}>
          {(envs ?? []).map((x) => (
            <option key={x.id} value={x.id}>
              {x.name}
            </option>
          ))}
        </select>
        <label for="title">Title (optional)</label>
        <input id="title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        <label for="first-message">First message</label>
        <textarea id="first-message" rows={5} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <div class="buttons">
          <button type="submit" disabled={busy || !agents || !envs}>
            Start session
          </button>
        </div>
      </form>
      <Alert message={error} />
    </main>
  );
}
