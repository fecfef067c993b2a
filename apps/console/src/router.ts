import { useEffect, useState } from 'preact/hooks';

/** A run page's tabs. */
export type RunTab = 'timeline' | 'files';

/**
 * The console's pages, from the path under /console/. A run's page is on its
 * timeline (`/runs/:id`) or its files (`/runs/:id/files/<path>`, `path` a file
 * or folder of the workspace, '' for its top).
 */
export type Route =
  | { page: 'runs' }
  | { page: 'new-run' }
  | { page: 'run'; id: string; tab?: RunTab; path?: string }
  | { page: 'sessions' }
  | { page: 'session'; id: string }
  | { page: 'webhooks' }
  | { page: 'schedules' }
  | { page: 'usage' }
  | { page: 'skills' }
  | { page: 'memory' }
  | { page: 'settings' }
  | { page: 'missing'; path: string };

/** The pages of the left navigation that are a list of their own, each at `/console/<page>`. */
const SECTIONS = ['webhooks', 'schedules', 'usage', 'skills', 'memory', 'settings'] as const;

const BASE = '/console';

export function parseRoute(pathname: string): Route {
  const path = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  if (path === '' || path === '/') return { page: 'runs' };
  // Before a run's path: "new" is no run id.
  if (/^\/runs\/new\/?$/.test(path)) return { page: 'new-run' };
  const run = /^\/runs\/([^/]+)\/?$/.exec(path);
  if (run) return { page: 'run', id: decodeURIComponent(run[1] as string), tab: 'timeline', path: '' };
  const files = /^\/runs\/([^/]+)\/files(?:\/(.*))?$/.exec(path);
  if (files) {
    const segments = (files[2] ?? '').split('/').filter((segment) => segment !== '');
    try {
      const id = decodeURIComponent(files[1] as string);
      return { page: 'run', id, tab: 'files', path: segments.map(decodeURIComponent).join('/') };
    } catch {
      // A malformed escape (`%E0%A4%A`) names nothing.
      return { page: 'missing', path: pathname };
    }
  }
  if (/^\/sessions\/?$/.test(path)) return { page: 'sessions' };
  const section = /^\/([a-z]+)\/?$/.exec(path)?.[1];
  for (const page of SECTIONS) if (section === page) return { page };
  const session = /^\/sessions\/([^/]+)\/?$/.exec(path);
  if (session) return { page: 'session', id: decodeURIComponent(session[1] as string) };
  return { page: 'missing', path: pathname };
}

export function hrefOf(route: Route): string {
  switch (route.page) {
    case 'run':
      return route.tab === 'files' ? filesHref(route.id, route.path) : runHref(route.id);
    case 'new-run':
      return `${BASE}/runs/new`;
    case 'sessions':
      return `${BASE}/sessions`;
    case 'session':
      return `${BASE}/sessions/${encodeURIComponent(route.id)}`;
    case 'webhooks':
    case 'schedules':
    case 'usage':
    case 'skills':
    case 'memory':
    case 'settings':
      return `${BASE}/${route.page}`;
    default:
      return `${BASE}/`;
  }
}

/** A run's page (its timeline). */
export function runHref(id: string): string {
  return `${BASE}/runs/${encodeURIComponent(id)}`;
}

/** A run's Files tab at `path` (a file or folder of its workspace; '' for its top), each segment encoded. */
export function filesHref(id: string, path = ''): string {
  const segments = path.split('/').filter((segment) => segment !== '');
  return `${runHref(id)}/files${segments.map((segment) => `/${encodeURIComponent(segment)}`).join('')}`;
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
