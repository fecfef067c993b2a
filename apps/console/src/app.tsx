import type { TetherClient } from '@tether/client';
import { useEffect, useState } from 'preact/hooks';
import { NewRunPage } from './new-run-page.js';
import { hrefOf, onLinkClick, type Route, useRoute } from './router.js';
import { RunPage } from './run-page.js';
import { RunsPage } from './runs-page.js';
import { restoreClient, signIn, signOut } from './session.js';
import { SessionPage } from './session-page.js';
import { SessionsPage } from './sessions-page.js';

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

  return (
    <>
      <header class="top">
        <a href="/console/" onClick={onLinkClick} class="brand">
          Tether console
        </a>
        <nav aria-label="Pages" class="nav">
          <a href={hrefOf({ page: 'runs' })} onClick={onLinkClick}>
            Runs
          </a>
          <a href={hrefOf({ page: 'sessions' })} onClick={onLinkClick}>
            Sessions
          </a>
        </nav>
        {auth.state === 'in' && auth.keyed ? (
          <button
            type="button"
            class="link"
            onClick={() => {
              signOut();
              setAuth({ state: 'signed-out' });
            }}
          >
            Sign out
          </button>
        ) : null}
      </header>
      <main>
        {problem ? (
          <p role="alert">{problem}</p>
        ) : auth.state === 'checking' ? (
          <p>Connecting…</p>
        ) : auth.state === 'signed-out' ? (
          <SignIn onSignedIn={(client) => setAuth({ state: 'in', client, keyed: true })} />
        ) : route.page === 'run' ? (
          <RunPage key={route.id} client={auth.client} id={route.id} tab={route.tab} filePath={route.path} />
        ) : route.page === 'new-run' ? (
          <NewRunPage client={auth.client} />
        ) : route.page === 'runs' ? (
          <RunsPage client={auth.client} />
        ) : route.page === 'session' ? (
          <SessionPage key={route.id} client={auth.client} id={route.id} />
        ) : route.page === 'sessions' ? (
          <SessionsPage client={auth.client} />
        ) : (
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
        )}
      </main>
    </>
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
