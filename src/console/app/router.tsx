// Paths under /console, read from and written to the browser's history: no hash, no key, just the page's name.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

export type Route = { page: 'list' } | { page: 'new' } | { page: 'session'; id: string };

export function parseRoute(pathname: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const session = /^\/sessions\/([^/]+)\/?$/.exec(rest);
  if (session) return { page: 'session', id: decodeURIComponent(session[1]) };
  if (/^\/new\/?$/.test(rest)) return { page: 'new' };
  return { page: 'list' };
}

export const sessionPath = (id: string) => `${BASE}/sessions/${encodeURIComponent(id)}`;

const listeners = new Set<() => void>();

export function navigate(to: string): void {
  if (to !== location.pathname + location.search) history.pushState(null, '', to);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname));
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
export function Link(props: { href: string; class?: string; children: ComponentChildren; 'aria-current'?: 'page' }) {
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
