import type { TetherClient } from '@tether/client';
import { useEffect, useState } from 'preact/hooks';
import { BrandMark } from './icons.js';
import { MemoryPage } from './memory-page.js';
import { NewRunPage } from './new-run-page.js';
import { hrefOf, onLinkClick, type Route, useRoute } from './router.js';
import { RunPage } from './run-page.js';
import { RunsPage } from './runs-page.js';
import { SchedulesPage } from './schedules-page.js';
import { restoreClient, signIn, signOut } from './session.js';
import { SessionPage } from './session-page.js';
import { SessionsPage } from './sessions-page.js';
import { SettingsPage } from './settings-page.js';
import { SkillsPage } from './skills-page.js';
import { UsagePage } from './usage-page.js';
import { WebhooksPage } from './webhooks-page.js';

type Auth =
  | { state: 'checking' }
  | { state: 'signed-out' }
  | { state: 'in'; client: TetherClient; keyed: boolean };

/** The console: sign in if the API needs a key, then the page the path names. */
export function App() {
  const route = useRoute();
  const [auth, setAuth] = useState<Auth>({ state: 'checking' });
  const [problem, setProblem] = useState<string>();

  useEffect(() => {
    restoreClient().then(
      (restored) => setAuth(restored ? { state: 'in', ...restored } : { state: 'signed-out' }),
      (error: unknown) => setProblem(`The API could not be reached: ${String(error)}`),
    );
  }, []);

  useEffect(() => {
    document.title = `${titleOf(route)} · Tether console`;
  }, [route]);

  const signOutNow = () => {
    signOut();
    setAuth({ state: 'signed-out' });
  };
  return (
    <div class="shell">
      <Sidebar route={route} onSignOut={auth.state === 'in' && auth.keyed ? signOutNow : undefined} />
      <main class="content">
        {problem ? (
          <p role="alert">{problem}</p>
        ) : auth.state === 'checking' ? (
          <p>Connecting…</p>
        ) : auth.state === 'signed-out' ? (
          <SignIn onSignedIn={(client) => setAuth({ state: 'in', client, keyed: true })} />
        ) : (
          <Page route={route} client={auth.client} keyed={auth.keyed} onSignOut={signOutNow} />
        )}
      </main>
    </div>
  );
}

/** The page the route names, for a signed-in client. */
function Page({
  route,
  client,
  keyed,
  onSignOut,
}: {
  route: Route;
  client: TetherClient;
  keyed: boolean;
  onSignOut: () => void;
}) {
  switch (route.page) {
    case 'run':
      return <RunPage key={route.id} client={client} id={route.id} tab={route.tab} filePath={route.path} />;
    case 'new-run':
      return <NewRunPage client={client} />;
    case 'runs':
      return <RunsPage client={client} />;
    case 'session':
      return <SessionPage key={route.id} client={client} id={route.id} />;
    case 'sessions':
      return <SessionsPage client={client} />;
    case 'webhooks':
      return <WebhooksPage client={client} />;
    case 'schedules':
      return <SchedulesPage client={client} />;
    case 'usage':
      return <UsagePage client={client} />;
    case 'skills':
      return <SkillsPage client={client} />;
    case 'memory':
      return <MemoryPage client={client} />;
    case 'settings':
      return <SettingsPage client={client} keyed={keyed} onSignOut={onSignOut} />;
    case 'missing':
      return (
        <>
          <h1>Not found</h1>
          <p>
            Nothing lives at {route.path}.{' '}
            <a href="/console/" onClick={onLinkClick}>
              See the runs
            </a>
            .
          </p>
        </>
      );
  }
}

/** The sections of the left navigation, and which routes belong to each. */
const SECTIONS: readonly { label: string; route: Route; owns: readonly Route['page'][] }[] = [
  { label: 'Runs', route: { page: 'runs' }, owns: ['runs', 'run', 'new-run'] },
  { label: 'Sessions', route: { page: 'sessions' }, owns: ['sessions', 'session'] },
  { label: 'Webhooks', route: { page: 'webhooks' }, owns: ['webhooks'] },
  { label: 'Schedules', route: { page: 'schedules' }, owns: ['schedules'] },
  { label: 'Usage', route: { page: 'usage' }, owns: ['usage'] },
  { label: 'Skills', route: { page: 'skills' }, owns: ['skills'] },
  { label: 'Memory', route: { page: 'memory' }, owns: ['memory'] },
  { label: 'Settings', route: { page: 'settings' }, owns: ['settings'] },
];

/** The left navigation (a bar across the top on a narrow screen): the current section is marked for all. */
function Sidebar({ route, onSignOut }: { route: Route; onSignOut: (() => void) | undefined }) {
  return (
    <header class="sidebar">
      <a href="/console/" onClick={onLinkClick} class="brand">
        <BrandMark />
        Tether
      </a>
      <nav aria-label="Sections" class="nav">
        <ul>
          {SECTIONS.map((section) => (
            <li key={section.label}>
              <a
                href={hrefOf(section.route)}
                onClick={onLinkClick}
                aria-current={section.owns.includes(route.page) ? 'page' : undefined}
              >
                {section.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {onSignOut ? (
        <button type="button" class="link sign-out" onClick={onSignOut}>
          Sign out
        </button>
      ) : null}
    </header>
  );
}

function titleOf(route: Route): string {
  switch (route.page) {
    case 'run':
      return `${route.tab === 'files' ? 'Files of run' : 'Run'} ${route.id}`;
    case 'new-run':
      return 'New run';
    case 'sessions':
      return 'Sessions';
    case 'session':
      return `Session ${route.id}`;
    case 'webhooks':
      return 'Webhooks';
    case 'schedules':
      return 'Schedules';
    case 'usage':
      return 'Usage';
    case 'skills':
      return 'Skills';
    case 'memory':
      return 'Memory';
    case 'settings':
      return 'Settings';
    case 'missing':
      return 'Not found';
    default:
      return 'Runs';
  }
}

function SignIn({ onSignedIn }: { onSignedIn: (client: TetherClient) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card sign-in"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          onSignedIn(await signIn(key.trim()));
        } catch (failure) {
          setError(
            failure instanceof Error && failure.name === 'TetherUnauthorizedError'
              ? 'The API refused that key.'
              : `Could not sign in: ${String(failure)}`,
          );
        } finally {
          setBusy(false);
        }
      }}
    >
      <h1>Sign in</h1>
      <label for="api-key">API key</label>
      <input
        id="api-key"
        type="password"
        autoComplete="off"
        required
        value={key}
        onInput={(event) => setKey(event.currentTarget.value)}
      />
      {error ? <p role="alert">{error}</p> : null}
      <button type="submit" disabled={busy || key.trim() === ''}>
        Sign in
      </button>
    </form>
  );
}
