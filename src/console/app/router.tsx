// Paths under /console, read from and written to the browser's history: no hash, no key, just the page's name.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

/** Where a memory store's page is: its memories under a prefix (one open), or its versions (one open). */
export interface StoreView {
  tab: 'memories' | 'versions';
  /** The directory listed, ending in `/`; `/` for the whole store. */
  prefix: string;
  memory?: string;
  version?: string;
  /** Versions of this memory only. */
  memoryFilter?: string;
}

export type Route =
  | { page: 'list' }
  | { page: 'new' }
  | { page: 'session'; id: string }
  | { page: 'stores' }
  | ({ page: 'store'; id: string } & StoreView)
  | { page: 'environments' }
  | { page: 'environment'; id: string }
  | { page: 'deployments' }
  | { page: 'webhooks' };

export function parseRoute(pathname: string, search = ''): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const session = /^\/sessions\/([^/]+)\/?$/.exec(rest);
  if (session) return { page: 'session', id: decodeURIComponent(session[1]) };
  if (/^\/new\/?$/.test(rest)) return { page: 'new' };
  if (/^\/memory_stores\/?$/.test(rest)) return { page: 'stores' };
  if (/^\/environments\/?$/.test(rest)) return { page: 'environments' };
  if (/^\/deployments\/?$/.test(rest)) return { page: 'deployments' };
  if (/^\/webhooks\/?$/.test(rest)) return { page: 'webhooks' };
  const environment = /^\/environments\/([^/]+)\/?$/.exec(rest);
  if (environment) return { page: 'environment', id: decodeURIComponent(environment[1]) };
  const store = /^\/memory_stores\/([^/]+)\/?$/.exec(rest);
  if (store) {
    const q = new URLSearchParams(search);
    const prefix = q.get('prefix') ?? '/';
    return {
      page: 'store',
      id: decodeURIComponent(store[1]),
      tab: q.get('tab') === 'versions' ? 'versions' : 'memories',
      prefix: prefix.startsWith('/') && prefix.endsWith('/') ? prefix : '/',
      memory: q.get('memory') ?? undefined,
      version: q.get('version') ?? undefined,
      memoryFilter: q.get('memory_id') ?? undefined,
    };
  }
  return { page: 'list' };
}

export const sessionPath = (id: string) => `${BASE}/sessions/${encodeURIComponent(id)}`;
export const storesPath = `${BASE}/memory_stores`;
export const environmentsPath = `${BASE}/environments`;
export const deploymentsPath = `${BASE}/deployments`;
export const webhooksPath = `${BASE}/webhooks`;
export const environmentPath = (id: string) => `${environmentsPath}/${encodeURIComponent(id)}`;

/** A memory store's page at `view` (the defaults left out of the link). */
export function storePath(id: string, view: Partial<StoreView> = {}): string {
  const q = new URLSearchParams();
  if (view.tab === 'versions') q.set('tab', 'versions');
  if (view.prefix && view.prefix !== '/') q.set('prefix', view.prefix);
  if (view.memory) q.set('memory', view.memory);
  if (view.version) q.set('version', view.version);
  if (view.memoryFilter) q.set('memory_id', view.memoryFilter);
  const s = q.toString();
  return `${storesPath}/${encodeURIComponent(id)}${s ? `?${s}` : ''}`;
}

const listeners = new Set<() => void>();

export function navigate(to: string): void {
  if (to !== location.pathname + location.search) history.pushState(null, '', to);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname, location.search));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname, location.search));
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** A link that changes page without reloading; a modified click (new tab) is the browser's. */
export function Link(props: {
  href: string;
  class?: string;
  children: ComponentChildren;
  'aria-current'?: 'page' | 'true';
  'aria-label'?: string;
}) {
  return (
    <a
      {...props}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    />
  );
}
