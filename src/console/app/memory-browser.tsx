// The workspace's memory stores: the list, and one store's memories (a directory at a time, through the list
// route's `path_prefix` and `depth=1`) and versions (each change, and who made it). Read-only: the SDK edits them.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, listAll, withQuery, type Page } from './api';
import { age, bytes } from './formatters';
import { Link, sessionPath, storePath, storesPath, type StoreView } from './router';
import type { Actor, Memory, MemoryPrefix, MemoryStore, MemoryVersion } from './types';
import { Alert } from './ui';

const storeApi = (id: string) => `/v1/memory_stores/${encodeURIComponent(id)}`;

function When(props: { at: string }) {
  return (
    <time dateTime={props.at} title={new Date(props.at).toLocaleString()}>
      {age(props.at)} ago
    </time>
  );
}

export function MemoryStores() {
  const [stores, setStores] = useState<MemoryStore[]>();
  const [archived, setArchived] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    listAll<MemoryStore>('/v1/memory_stores', { limit: 100, include_archived: archived ? 'true' : undefined }).then(
      (all) => live && (setStores(all), setError(undefined)),
      (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [archived]);
  return (
    <main class="page">
      <div class="page-head">
        <h1>Memory stores</h1>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label class="check">
          <input type="checkbox" checked={archived} onChange={(e) => setArchived(e.currentTarget.checked)} />
          Show archived stores
        </label>
      </form>
      <Alert message={error} />
      {stores && stores.length === 0 && (
        <p class="empty">No memory stores yet: create one with the SDK (`client.beta.memoryStores.create`).</p>
      )}
      {stores && stores.length > 0 && (
        <table class="data stores">
          <caption class="visually-hidden">Memory stores, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Created</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {stores.map((s) => (
              <tr key={s.id}>
                <td data-label="Name">
                  <div>
                    <Link href={storePath(s.id)}>{s.name}</Link>
                    {s.archived_at && <span class="tag">archived</span>}
                    <div class="id">{s.id}</div>
                  </div>
                </td>
                <td data-label="Description">{s.description || <span class="detail">–</span>}</td>
                <td data-label="Created">
                  <When at={s.created_at} />
                </td>
                <td data-label="Updated">
                  <When at={s.updated_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}

/** Who made a change: a session links to its page; the others are named by their ids. */
export function ActorName(props: { actor: Actor | null | undefined }) {
  const a = props.actor;
  if (!a) return <span class="detail">not recorded</span>;
  switch (a.type) {
    case 'session_actor':
      return (
        <span>
          session <Link href={sessionPath(a.session_id)}>{a.session_id}</Link>
        </span>
      );
    case 'api_actor':
      return (
        <span>
          API key <span class="id">{a.api_key_id}</span>
        </span>
      );
    case 'user_actor':
      return (
        <span>
          user <span class="id">{a.user_id}</span>
        </span>
      );
    case 'service_account_actor':
      return (
        <span>
          service account <span class="id">{a.service_account_id}</span>
        </span>
      );
    default:
      return <span class="detail">{(a as { type: string }).type}</span>;
  }
}

/** Moves focus (and the view, on a narrow screen where it stands below the list) to what was opened. */
function useFocusWhen(ready: boolean) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (ready) ref.current?.focus();
  }, [ready]);
  return ref;
}

/** The last segment of a path, with a directory's trailing slash kept. */
const baseName = (path: string) => /[^/]*\/?$/.exec(path)?.[0] || path;

function Crumbs(props: { store: string; prefix: string }) {
  const parts = props.prefix.split('/').filter(Boolean);
  return (
    <nav class="crumbs" aria-label="Directory">
      <Link href={storePath(props.store)} {...(parts.length === 0 ? { 'aria-current': 'page' as const } : {})}>
        /
      </Link>
      {parts.map((p, i) => {
        const here = `/${parts.slice(0, i + 1).join('/')}/`;
        return (
          <span key={here}>
            <Link
              href={storePath(props.store, { prefix: here })}
              {...(i === parts.length - 1 ? { 'aria-current': 'page' as const } : {})}
            >
              {p}
            </Link>
            /
          </span>
        );
      })}
    </nav>
  );
}

function Memories(props: { store: string; view: StoreView }) {
  const { store, view } = props;
  const [items, setItems] = useState<(Memory | MemoryPrefix)[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    setItems(undefined);
    listAll<Memory | MemoryPrefix>(`${storeApi(store)}/memories`, {
      depth: 1,
      path_prefix: view.prefix === '/' ? undefined : view.prefix,
      limit: 100,
    }).then(
      (all) => live && (setItems(all), setError(undefined)),
      (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [store, view.prefix]);
  const dirs = (items ?? []).filter((x): x is MemoryPrefix => x.type === 'memory_prefix');
  const files = (items ?? []).filter((x): x is Memory => x.type === 'memory');
  return (
    <div class="browser">
      <section class="panel" aria-labelledby="memories-title">
        <h2 id="memories-title" class="visually-hidden">
          Memories in {view.prefix}
        </h2>
        <Crumbs store={store} prefix={view.prefix} />
        <Alert message={error} />
        {items && items.length === 0 && <p class="empty">No memories here.</p>}
        {items && items.length > 0 && (
          <ul class="entries" aria-label={`Memories in ${view.prefix}`}>
            {dirs.map((d) => (
              <li key={d.path} class="dir">
                <Link href={storePath(store, { prefix: d.path })} aria-label={`Directory ${baseName(d.path)}`}>
                  {baseName(d.path)}
                </Link>
              </li>
            ))}
            {files.map((m) => (
              <li key={m.id}>
                <Link
                  href={storePath(store, { prefix: view.prefix, memory: m.id })}
                  {...(view.memory === m.id ? { 'aria-current': 'true' as const } : {})}
                >
                  {baseName(m.path)}
                </Link>{' '}
                <span class="detail">
                  {bytes(m.content_size_bytes)} · <When at={m.updated_at} />
                </span>
              </li>
            ))}
          </ul>
        )}
      </section>
      {view.memory && <MemoryView store={store} id={view.memory} />}
    </div>
  );
}

function MemoryView(props: { store: string; id: string }) {
  const [memory, setMemory] = useState<Memory>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    setMemory(undefined);
    call<Memory>(
      'GET',
      withQuery(`${storeApi(props.store)}/memories/${encodeURIComponent(props.id)}`, { view: 'full' }),
    ).then(
      (m) => live && (setMemory(m), setError(undefined)),
      (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [props.store, props.id]);
  const heading = useFocusWhen(memory !== undefined);
  return (
    <section class="panel viewer" aria-label={memory ? `Memory ${memory.path}` : 'Memory'}>
      <Alert message={error} />
      {memory && (
        <>
          <h2 class="path" tabIndex={-1} ref={heading}>
            {memory.path}
          </h2>
          <p class="meta">
            <span>{bytes(memory.content_size_bytes)}</span>
            <span>
              updated <When at={memory.updated_at} />
            </span>
            <span class="id" title="SHA-256 of the content">
              sha256 {memory.content_sha256.slice(0, 12)}
            </span>
            <Link href={storePath(props.store, { tab: 'versions', memoryFilter: memory.id })}>History</Link>
          </p>
          <pre class="output">{memory.content ?? ''}</pre>
        </>
      )}
    </section>
  );
}

const VERSIONS_PAGE = 50;

function Versions(props: { store: string; view: StoreView }) {
  const { store, view } = props;
  const [versions, setVersions] = useState<MemoryVersion[]>();
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const load = async (page: string | undefined, live: () => boolean) => {
    try {
      const r = await call<Page<MemoryVersion>>(
        'GET',
        withQuery(`${storeApi(store)}/memory_versions`, {
          memory_id: view.memoryFilter,
          limit: VERSIONS_PAGE,
          page,
        }),
      );
      if (!live()) return;
      setVersions((had) => (page ? [...(had ?? []), ...r.data] : r.data));
      setNext(r.next_page);
      setError(undefined);
    } catch (e) {
      if (live()) setError((e as Error).message);
    }
  };
  useEffect(() => {
    let live = true;
    setVersions(undefined);
    void load(undefined, () => live);
    return () => {
      live = false;
    };
  }, [store, view.memoryFilter]);
  // The opened version above the list: the list is a wide table, and the page opens at its top.
  return (
    <div class="browser stacked">
      {view.version && <VersionView store={store} id={view.version} />}
      <section class="panel" aria-labelledby="versions-title">
        <h2 id="versions-title" class="visually-hidden">
          Versions
        </h2>
        {view.memoryFilter && (
          <p class="meta">
            <span>
              Versions of{' '}
              {versions?.find((v) => v.path)?.path ?? (
                <>
                  memory <span class="id">{view.memoryFilter}</span>
                </>
              )}
            </span>
            <Link href={storePath(store, { tab: 'versions' })}>All versions</Link>
          </p>
        )}
        <Alert message={error} />
        {versions && versions.length === 0 && <p class="empty">No versions.</p>}
        {versions && versions.length > 0 && (
          <table class="data versions">
            <caption class="visually-hidden">Memory versions, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Change</th>
                <th scope="col">Path</th>
                <th scope="col">By</th>
                <th scope="col">When</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.id} {...(view.version === v.id ? { 'aria-current': 'true' as const } : {})}>
                  <td data-label="Change">
                    <div>
                      <Link
                        href={storePath(store, { tab: 'versions', memoryFilter: view.memoryFilter, version: v.id })}
                        aria-label={`${v.operation} ${v.id}`}
                      >
                        {v.operation}
                      </Link>
                      <div class="id">{v.id}</div>
                    </div>
                  </td>
                  <td data-label="Path">
                    {v.redacted_at ? <span class="detail">redacted</span> : <code class="path">{v.path}</code>}
                  </td>
                  <td data-label="By">
                    <ActorName actor={v.created_by} />
                  </td>
                  <td data-label="When">
                    <When at={v.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {next && (
          <div class="buttons">
            <button type="button" class="quiet" onClick={() => void load(next, () => true)}>
              More versions
            </button>
          </div>
        )}
      </section>
    </div>
  );
}

function VersionView(props: { store: string; id: string }) {
  const [version, setVersion] = useState<MemoryVersion>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    setVersion(undefined);
    call<MemoryVersion>(
      'GET',
      withQuery(`${storeApi(props.store)}/memory_versions/${encodeURIComponent(props.id)}`, { view: 'full' }),
    ).then(
      (v) => live && (setVersion(v), setError(undefined)),
      (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [props.store, props.id]);
  const v = version;
  const heading = useFocusWhen(v !== undefined);
  return (
    <section class="panel viewer" aria-label={`Version ${props.id}`}>
      <Alert message={error} />
      {v && (
        <>
          <h2 class="path" tabIndex={-1} ref={heading}>
            {v.path ?? 'Redacted version'}
          </h2>
          <p class="meta">
            <span class="tag">{v.operation}</span>
            <span>
              by <ActorName actor={v.created_by} />
            </span>
            <span>
              <When at={v.created_at} />
            </span>
            {v.content_size_bytes != null && <span>{bytes(v.content_size_bytes)}</span>}
            <Link href={storePath(props.store, { tab: 'versions', memoryFilter: v.memory_id })}>
              This memory's versions
            </Link>
          </p>
          <p class="id">{v.id}</p>
          {v.redacted_at ? (
            <p class="empty">
              Redacted <When at={v.redacted_at} />: its content and path are gone.
            </p>
          ) : v.operation === 'deleted' ? (
            <p class="empty">The memory was deleted in this version.</p>
          ) : (
            <pre class="output">{v.content ?? ''}</pre>
          )}
        </>
      )}
    </section>
  );
}

export function MemoryStorePage(props: { id: string; view: StoreView }) {
  const [store, setStore] = useState<MemoryStore>();
  const [missing, setMissing] = useState<string>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    call<MemoryStore>('GET', storeApi(props.id)).then(setStore, (e: unknown) =>
      e instanceof ApiError && e.status === 404 ? setMissing(e.message) : setError((e as Error).message),
    );
  }, [props.id]);
  if (missing) {
    return (
      <main class="page">
        <h1>Memory store not found</h1>
        <Alert message={missing} />
        <p>
          <Link href={storesPath}>All memory stores</Link>
        </p>
      </main>
    );
  }
  const tab = props.view.tab;
  return (
    <main class="page">
      <div class="page-head">
        <div>
          <h1>
            {store?.name ?? props.id}
            {store?.archived_at && <span class="tag">archived</span>}
          </h1>
          <p class="sub">
            <span class="id">{props.id}</span>
            {store?.description && <> · {store.description}</>}
          </p>
        </div>
      </div>
      <Alert message={error} />
      <nav class="tabs" aria-label="Memory store">
        <Link href={storePath(props.id)} {...(tab === 'memories' ? { 'aria-current': 'page' as const } : {})}>
          Memories
        </Link>
        <Link
          href={storePath(props.id, { tab: 'versions' })}
          {...(tab === 'versions' ? { 'aria-current': 'page' as const } : {})}
        >
          Versions
        </Link>
      </nav>
      {tab === 'memories' ? (
        <Memories store={props.id} view={props.view} />
      ) : (
        <Versions store={props.id} view={props.view} />
      )}
    </main>
  );
}
