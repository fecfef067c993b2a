import type { ModelProfileInfo, TetherClient } from '@tether/client';
import { useState } from 'preact/hooks';
import { age } from './format.js';
import { ListTable } from './list-table.js';
import { useRead } from './reading.js';
import { applyTheme, storedTheme, type Theme } from './theme.js';

/** What `/readyz` says of one worker (the parts shown here). */
interface WorkerReport {
  id: string;
  status: 'ok' | 'degraded';
  sandbox: { effective: string; reason?: string };
  seenAt: string;
}

/** The connection (and Sign out), the colour scheme, the server's models and its live workers. */
export function SettingsPage({
  client,
  keyed,
  onSignOut,
}: {
  client: TetherClient;
  keyed: boolean;
  onSignOut: () => void;
}) {
  return (
    <>
      <h1>Settings</h1>
      <section class="card" aria-labelledby="connection-heading">
        <h2 id="connection-heading">Connection</h2>
        <p>
          API: <code>{client.baseUrl}</code>.{' '}
          {keyed
            ? 'Signed in with an API key, kept in this tab only.'
            : 'This API needs no key (a loopback API without TETHER_API_KEYS).'}
        </p>
        {keyed ? (
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        ) : null}
      </section>
      <ThemeChoice />
      <ModelsSection client={client} />
      <WorkersSection />
    </>
  );
}

const THEMES: readonly { theme: Theme; label: string }[] = [
  { theme: 'system', label: 'As the system' },
  { theme: 'light', label: 'Light' },
  { theme: 'dark', label: 'Dark' },
];

function ThemeChoice() {
  const [theme, setTheme] = useState(storedTheme);
  return (
    <fieldset class="card choice-row">
      <legend>Appearance</legend>
      {THEMES.map((entry) => (
        <label class="inline" key={entry.theme}>
          <input
            type="radio"
            name="theme"
            value={entry.theme}
            checked={theme === entry.theme}
            onChange={() => {
              setTheme(entry.theme);
              applyTheme(entry.theme);
            }}
          />
          {entry.label}
        </label>
      ))}
    </fieldset>
  );
}

function ModelsSection({ client }: { client: TetherClient }) {
  const { data, error } = useRead('the models', (signal) => client.models({ signal }), [client]);
  return (
    <section class="card" aria-labelledby="models-heading">
      <h2 id="models-heading">Models</h2>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? null : data.profiles.length === 0 ? (
        <p>
          No model is configured on this server: runs need a replay script (Try a scripted example, on New
          run), or a model set where the API and workers run (see New run).
        </p>
      ) : (
        <ListTable<ModelProfileInfo>
          caption="Model profiles"
          rows={data.profiles}
          rowKey={(profile) => profile.name}
          columns={[
            { label: 'Profile', cell: (profile) => <code>{profile.name}</code>, class: 'nowrap' },
            { label: 'Provider', cell: (profile) => profile.provider, class: 'nowrap' },
            { label: 'Model', cell: (profile) => profile.model ?? 'the first the server lists' },
            { label: 'Default', cell: (profile) => (profile.default ? 'Default' : ''), class: 'nowrap' },
          ]}
        />
      )}
      {data ? <p class="muted">Scripted (replay) runs: {data.replay ? 'allowed' : 'not allowed'}.</p> : null}
    </section>
  );
}

function WorkersSection() {
  const { data, error, reload } = useRead(
    'the workers',
    async (signal) => {
      const response = await fetch('/readyz', { signal });
      const body = (await response.json()) as { workers?: WorkerReport[]; error?: { message: string } };
      if (!response.ok) throw new Error(body.error?.message ?? `HTTP ${response.status}`);
      return body.workers ?? [];
    },
    [],
  );
  const now = Date.now();
  return (
    <section class="card" aria-labelledby="workers-heading">
      <div class="page-head">
        <h2 id="workers-heading">Workers</h2>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? null : data.length === 0 ? (
        <p>No worker is running: runs wait in the queue until one starts.</p>
      ) : (
        <ListTable<WorkerReport>
          caption="Live workers"
          rows={data}
          rowKey={(worker) => worker.id}
          columns={[
            { label: 'Worker', cell: (worker) => <code>{worker.id}</code> },
            {
              label: 'State',
              cell: (worker) => (
                <span class={`pill ${worker.status === 'ok' ? 'pill-ok' : 'pill-warn'}`}>
                  {worker.status === 'ok' ? 'OK' : 'Degraded'}
                </span>
              ),
              class: 'nowrap',
            },
            {
              label: 'Sandbox',
              cell: (worker) =>
                `${worker.sandbox.effective}${worker.sandbox.reason ? ` (${worker.sandbox.reason})` : ''}`,
            },
            {
              label: 'Seen',
              cell: (worker) => <time dateTime={worker.seenAt}>{age(worker.seenAt, now)}</time>,
              class: 'nowrap',
            },
          ]}
        />
      )}
    </section>
  );
}
