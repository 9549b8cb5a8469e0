// Starts a session from one of the workspace's agents and environments, with a first message, then opens it. Files
// picked here are uploaded first (POST /v1/files) and mounted as the session's `file` resources; a memory store may
// be attached with the access chosen.
import { useEffect, useState } from 'preact/hooks';
import { call, listAll, uploadFile } from './api';
import { bytes } from './formatters';
import { navigate, sessionPath } from './router';
import type { Agent, Environment, FileMetadata, MemoryStore, Session } from './types';
import { Alert } from './ui';

/** The API's limit on one file (docs/guide/files-memory-skills.md): checked here before any byte is sent. */
const MAX_FILE_BYTES = 100 * 1024 * 1024;
/** The most a memory store resource's `instructions` may hold. */
const MAX_INSTRUCTIONS = 4096;

const sameFile = (a: File, b: File) => a.name === b.name && a.size === b.size && a.lastModified === b.lastModified;

export function NewSession() {
  const [agents, setAgents] = useState<Agent[]>();
  const [envs, setEnvs] = useState<Environment[]>();
  const [stores, setStores] = useState<MemoryStore[]>([]);
  const [agent, setAgent] = useState('');
  const [env, setEnv] = useState('');
  const [title, setTitle] = useState('');
  const [text, setText] = useState('');
  const [files, setFiles] = useState<File[]>([]);
  const [store, setStore] = useState('');
  const [access, setAccess] = useState<'read_write' | 'read_only'>('read_write');
  const [instructions, setInstructions] = useState('');
  const [busy, setBusy] = useState(false);
  const [progress, setProgress] = useState<string>();
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
    // Archived stores cannot be attached, and the list leaves them out. A server without memory stores offers none.
    listAll<MemoryStore>('/v1/memory_stores', { limit: 100 }).then(setStores, () => setStores([]));
  }, []);

  const pick = (list: FileList | null) => {
    const picked = Array.from(list ?? []);
    setFiles((had) => [...had, ...picked.filter((f) => !had.some((h) => sameFile(h, f)))]);
  };

  /** Deletes files this form uploaded for a session that was not created, so they are not left behind. */
  const forget = (uploaded: FileMetadata[]) =>
    Promise.all(uploaded.map((f) => call('DELETE', `/v1/files/${encodeURIComponent(f.id)}`).catch(() => undefined)));

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!agent || !env) return setError('Choose an agent and an environment.');
    const big = files.find((f) => f.size > MAX_FILE_BYTES);
    if (big) return setError(`${big.name} is ${bytes(big.size)}: a file can be at most ${bytes(MAX_FILE_BYTES)}.`);
    setBusy(true);
    setError(undefined);
    const uploaded: FileMetadata[] = [];
    try {
      for (const [i, f] of files.entries()) {
        setProgress(`Uploading ${f.name} (${i + 1} of ${files.length})…`);
        try {
          uploaded.push(await uploadFile<FileMetadata>(f));
        } catch (err) {
          throw new Error(`Could not upload ${f.name}: ${(err as Error).message}`);
        }
      }
      setProgress(files.length ? 'Starting the session…' : undefined);
      const first = text.trim();
      const resources = [
        ...uploaded.map((f) => ({ type: 'file', file_id: f.id })),
        ...(store
          ? [
              {
                type: 'memory_store',
                memory_store_id: store,
                access,
                ...(instructions.trim() ? { instructions: instructions.trim() } : {}),
              },
            ]
          : []),
      ];
      const s = await call<Session>('POST', '/v1/sessions', {
        agent,
        environment_id: env,
        ...(title.trim() ? { title: title.trim() } : {}),
        ...(resources.length ? { resources } : {}),
        ...(first ? { initial_events: [{ type: 'user.message', content: [{ type: 'text', text: first }] }] } : {}),
      });
      navigate(sessionPath(s.id));
    } catch (err) {
      await forget(uploaded);
      setProgress(undefined);
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
        <label for="files">Files (optional)</label>
        <input
          id="files"
          type="file"
          multiple
          aria-describedby="files-hint"
          disabled={busy}
          onChange={(e) => {
            pick(e.currentTarget.files);
            e.currentTarget.value = '';
          }}
        />
        <p id="files-hint" class="hint">
          Uploaded when the session starts and mounted read-only at /mnt/session/uploads/&lt;file id&gt;; up to{' '}
          {bytes(MAX_FILE_BYTES)} each.
        </p>
        {files.length > 0 && (
          <ul class="picked" aria-label="Files to upload">
            {files.map((f) => (
              <li key={`${f.name}:${f.size}:${f.lastModified}`}>
                <span class="name">{f.name}</span> <span class="detail">{bytes(f.size)}</span>
                <button
                  type="button"
                  class="quiet small"
                  aria-label={`Remove ${f.name}`}
                  disabled={busy}
                  onClick={() => setFiles((had) => had.filter((h) => !sameFile(h, f)))}
                >
                  Remove
                </button>
              </li>
            ))}
          </ul>
        )}
        {stores.length > 0 && (
          <>
            <label for="memory-store">Memory store (optional)</label>
            <select id="memory-store" value={store} onChange={(e) => setStore(e.currentTarget.value)}>
              <option value="">None</option>
              {stores.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name}
                </option>
              ))}
            </select>
            {store && (
              <>
                <label for="memory-access">Memory access</label>
                <select
                  id="memory-access"
                  value={access}
                  onChange={(e) => setAccess(e.currentTarget.value as 'read_write' | 'read_only')}
                >
                  <option value="read_write">Read and write</option>
                  <option value="read_only">Read only</option>
                </select>
                <label for="memory-instructions">How the agent should use it (optional)</label>
                <textarea
                  id="memory-instructions"
                  rows={2}
                  maxLength={MAX_INSTRUCTIONS}
                  aria-describedby="memory-hint"
                  value={instructions}
                  onInput={(e) => setInstructions(e.currentTarget.value)}
                />
                <p id="memory-hint" class="hint">
                  Mounted at /mnt/memory/&lt;name&gt;/; these instructions go into the agent's system prompt.
                </p>
              </>
            )}
          </>
        )}
        <label for="first-message">First message</label>
        <textarea id="first-message" rows={5} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <div class="buttons">
          <button type="submit" disabled={busy || !agents || !envs}>
            Start session
          </button>
        </div>
        <p class="hint" role="status">
          {progress}
        </p>
      </form>
      <Alert message={error} />
    </main>
  );
}
