// A session's files: what is mounted into its sandbox (its resources, with their mount paths) and what it left in
// /mnt/session/outputs, which the API keeps as files scoped to the session (GET /v1/files?scope_id=). The outputs are
// listed again each time the session goes idle, when everything its tools wrote has been collected.
import { useEffect, useState } from 'preact/hooks';
import { call, downloadFile, listAll } from './api';
import { age, bytes } from './formatters';
import { Link, storePath } from './router';
import type { FileMetadata, SessionResource } from './types';
import { Alert } from './ui';

function Mounted(props: { resources: SessionResource[] }) {
  // The uploads' names: a resource names its file only by id.
  const [names, setNames] = useState<Record<string, string>>({});
  const ids = props.resources.flatMap((r) => (r.type === 'file' ? [r.file_id] : []));
  useEffect(() => {
    let live = true;
    void Promise.all(
      ids.map((id) =>
        call<FileMetadata>('GET', `/v1/files/${encodeURIComponent(id)}`).then(
          (f) => [id, f.filename] as const,
          () => [id, ''] as const,
        ),
      ),
    ).then((found) => live && setNames(Object.fromEntries(found.filter(([, n]) => n))));
    return () => {
      live = false;
    };
  }, [ids.join(',')]);
  return (
    <section class="panel" aria-labelledby="mounted-title">
      <h2 id="mounted-title">Mounted</h2>
      <ul class="mounts">
        {props.resources.map((r, i) => (
          <li key={r.id ?? i}>
            <code class="path">{r.mount_path ?? ''}</code>{' '}
            {r.type === 'file' && (
              <span class="detail">
                {names[r.file_id] ? `${names[r.file_id]} · ` : ''}
                <span class="id">{r.file_id}</span> · read-only
              </span>
            )}
            {r.type === 'memory_store' && (
              <span class="detail">
                memory store <Link href={storePath(r.memory_store_id)}>{r.name || r.memory_store_id}</Link> ·{' '}
                {r.access === 'read_only' ? 'read-only' : 'read and write'}
              </span>
            )}
            {r.type === 'github_repository' && <span class="detail">{r.url}</span>}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Outputs(props: { sessionId: string; settled: number }) {
  const [files, setFiles] = useState<FileMetadata[]>();
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    listAll<FileMetadata>('/v1/files', { scope_id: props.sessionId, limit: 100 }).then(
      (all) => {
        if (!live) return;
        // Oldest first: the order the session wrote them.
        setFiles([...all].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id)));
        setError(undefined);
      },
      (e: Error) => live && setError(`Could not list the outputs: ${e.message}`),
    );
    return () => {
      live = false;
    };
    // Listed again when the session settles (idle or ended), and on Refresh.
  }, [props.sessionId, props.settled, tick]);
  const download = async (f: FileMetadata) => {
    setError(undefined);
    try {
      await downloadFile(f.id, f.filename);
    } catch (e) {
      setError(`Could not download ${f.filename}: ${(e as Error).message}`);
    }
  };
  return (
    <section class="panel" aria-labelledby="outputs-title">
      <div class="panel-head">
        <h2 id="outputs-title">Outputs</h2>
        <button type="button" class="quiet small" onClick={() => setTick((t) => t + 1)}>
          Refresh outputs
        </button>
      </div>
      <Alert message={error} />
      {files && files.length === 0 && (
        <p class="empty">None yet: what the agent writes to /mnt/session/outputs/ shows here.</p>
      )}
      {files && files.length > 0 && (
        <table class="data outputs">
          <caption class="visually-hidden">Files the session left in /mnt/session/outputs</caption>
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col">Size</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="visually-hidden">Download</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {files.map((f) => (
              <tr key={f.id}>
                <td data-label="File">
                  <div>
                    <span class="name">{f.filename}</span>
                    <div class="id">{f.id}</div>
                  </div>
                </td>
                <td data-label="Size">{bytes(f.size_bytes)}</td>
                <td data-label="Created">
                  <time dateTime={f.created_at} title={new Date(f.created_at).toLocaleString()}>
                    {age(f.created_at)} ago
                  </time>
                </td>
                <td data-label="">
                  {f.downloadable === false ? (
                    <span class="detail">not downloadable</span>
                  ) : (
                    <button
                      type="button"
                      class="small"
                      aria-label={`Download ${f.filename}`}
                      onClick={() => void download(f)}
                    >
                      Download
                    </button>
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

/**
 * The session's mounts and outputs; `settled` counts the times the session went idle or ended, so each one lists the
 * outputs again, even when a whole turn's events arrive together and the page never renders it running.
 */
export function SessionFiles(props: { sessionId: string; resources: SessionResource[] | undefined; settled: number }) {
  return (
    <div class="panels">
      {props.resources && props.resources.length > 0 && <Mounted resources={props.resources} />}
      <Outputs sessionId={props.sessionId} settled={props.settled} />
    </div>
  );
}
