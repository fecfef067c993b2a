import { useEffect, useState } from 'preact/hooks';

/** The console's pages, from the path under /console/. */
export type Route = { page: 'runs' } | { page: 'run'; id: string } | { page: 'missing'; path: string };

const BASE = '/console';

export function parseRoute(pathname: string): Route {
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  if (path === '' || path === '/') return { page: 'runs' };
  const run = /^\/runs\/([^/]+)\/?$/.exec(path);
  if (run) return { page: 'run', id: decodeURIComponent(run[1] as string) };
  return { page: 'missing', path: pathname };
}

export function hrefOf(route: Route): string {
  return route.page === 'run' ? `${BASE}/runs/${encodeURIComponent(route.id)}` : `${BASE}/`;
}

/** Goes to `href` without reloading the page. */
export function navigate(href: string): void {
  window.history.pushState(null, '', href);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/** The current route, following history (back, forward, `navigate`). */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location.pathname));
    window.addEventListener('popstate', update);
    return () => window.removeEventListener('popstate', update);
  }, []);
  return route;
}

/** A click handler for internal links: plain clicks navigate in place, modified clicks open as usual. */
export function onLinkClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
    return;
  const anchor = event.currentTarget as HTMLAnchorElement;
  event.preventDefault();
  navigate(anchor.getAttribute('href') ?? '/console/');
}
