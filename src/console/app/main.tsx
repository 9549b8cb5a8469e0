// The console's shell: sign-in with an API key (kept in session storage, sent as a header), the header bar and the
// pages (sessions, a new session, one session, memory stores, one store, environments, one environment's queue, deployments,
// webhooks), each
// on the public API the SDK calls.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, call, keyStore, whenUnauthorized } from './api';
import { Deployments } from './deployments';
import { EnvironmentPage, Environments } from './environments';
import { Webhooks } from './webhooks';
import type { Prices } from './formatters';
import { MemoryStorePage, MemoryStores } from './memory-browser';
import { NewSession } from './new-session';
import {
  BASE,
  deploymentsPath,
  environmentsPath,
  Link,
  navigate,
  storesPath,
  useRoute,
  webhooksPath,
  type Route,
} from './router';
import { SessionPage } from './session-page';
import { SessionsList } from './sessions-list';
import { Alert } from './ui';

function SignIn(props: { notice?: string; onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(props.notice);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const k = key.trim();
    if (!k) return setError('Enter an API key.');
    setBusy(true);
    try {
      // Any list proves the key: it answers 401 for a key the server does not know.
      await call('GET', '/v1/agents?limit=1', undefined, k);
      keyStore.set(k);
      props.onSignedIn();
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'That key was refused: check it, or create one with `agents api-keys create`.'
          : `Could not sign in: ${(err as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>Managed Agents console</h1>
      <p>
        Sign in with an API key of your workspace. It stays in this tab only (session storage) and is sent as a header,
        never in a link.
      </p>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <Alert message={error} />
    </main>
  );
}

const TITLES: Record<Route['page'], string> = {
  list: 'Sessions',
  new: 'New session',
  session: 'Session',
  stores: 'Memory stores',
  store: 'Memory store',
  environments: 'Environments',
  environment: 'Environment',
  deployments: 'Deployments',
  webhooks: 'Webhooks',
};

function App() {
  const [signedIn, setSignedIn] = useState(() => keyStore.get() !== null);
  const [notice, setNotice] = useState<string>();
  const [prices, setPrices] = useState<Prices>({});
  const route = useRoute();
  useEffect(() => {
    whenUnauthorized((message) => {
      keyStore.clear();
      setNotice(`Signed out: ${message}`);
      setSignedIn(false);
    });
    fetch(`${BASE}/prices.json`)
      .then((r) => (r.ok ? (r.json() as Promise<Prices>) : {}))
      .then(setPrices, () => undefined);
  }, []);
  useEffect(() => {
    const name =
      route.page === 'session' || route.page === 'store' || route.page === 'environment'
        ? route.id
        : TITLES[route.page];
    document.title = `${name} · Managed Agents console`;
  }, [route]);
  if (!signedIn) return <SignIn notice={notice} onSignedIn={() => (setNotice(undefined), setSignedIn(true))} />;
  const signOut = () => {
    keyStore.clear();
    setSignedIn(false);
    navigate(BASE);
  };
  return (
    <>
      <header class="bar">
        <Link href={BASE} class="brand">
          Managed Agents
        </Link>
        <nav aria-label="Console">
          <Link href={BASE} {...(route.page === 'list' ? { 'aria-current': 'page' as const } : {})}>
            Sessions
          </Link>
          <Link href={`${BASE}/new`} {...(route.page === 'new' ? { 'aria-current': 'page' as const } : {})}>
            New session
          </Link>
          <Link
            href={storesPath}
            {...(route.page === 'stores' || route.page === 'store' ? { 'aria-current': 'page' as const } : {})}
          >
            Memory stores
          </Link>
          <Link
            href={environmentsPath}
            {...(route.page === 'environments' || route.page === 'environment'
              ? { 'aria-current': 'page' as const }
              : {})}
          >
            Environments
          </Link>
          <Link href={deploymentsPath} {...(route.page === 'deployments' ? { 'aria-current': 'page' as const } : {})}>
            Deployments
          </Link>
          <Link href={webhooksPath} {...(route.page === 'webhooks' ? { 'aria-current': 'page' as const } : {})}>
            Webhooks
          </Link>
        </nav>
        <button type="button" class="quiet sign-out" onClick={signOut}>
          Sign out
        </button>
      </header>
      {route.page === 'list' && <SessionsList prices={prices} />}
      {route.page === 'new' && <NewSession />}
      {route.page === 'session' && <SessionPage key={route.id} id={route.id} />}
      {route.page === 'stores' && <MemoryStores />}
      {route.page === 'store' && <MemoryStorePage key={route.id} id={route.id} view={route} />}
      {route.page === 'environments' && <Environments />}
      {route.page === 'environment' && <EnvironmentPage key={route.id} id={route.id} />}
      {route.page === 'deployments' && <Deployments />}
      {route.page === 'webhooks' && <Webhooks />}
    </>
  );
}

render(<App />, document.getElementById('app')!);
