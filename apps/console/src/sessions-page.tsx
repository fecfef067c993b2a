import type { Session, SessionStatus, TetherClient } from '@tether/client';
import { useState } from 'preact/hooks';
import { Badge } from './badge.js';
import { age } from './format.js';
import { usePolling } from './reading.js';
import { hrefOf, navigate, onLinkClick } from './router.js';

/** How often the list is read again: it follows new sessions and status changes live. */
const REFRESH_MS = 2_000;
const PAGE_SIZE = 20;

/** A session's status as words. */
export const SESSION_STATUS_TEXT: Record<SessionStatus, string> = {
  idle: 'Idle',
  busy: 'Busy',
  waiting_for_input: 'Waiting for input',
};

/** A session's status as a badge, drawn as the run status it stands for. */
export function SessionBadge({ status, testId }: { status: SessionStatus; testId?: string }) {
  const tone = { idle: 'idle', busy: 'running', waiting_for_input: 'waiting_for_input' } as const;
  const icon = { idle: '○', busy: '▶', waiting_for_input: '?' } as const;
  return (
    <Badge tone={tone[status]} icon={icon[status]} label={SESSION_STATUS_TEXT[status]} testId={testId} />
  );
}

/** The sessions, newest first (id, status, runs, last activity), pages of 20, and "New session". */
export function SessionsPage({ client }: { client: TetherClient }) {
  // Cursors of the pages before this one: going back pops one.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState<{ sessions: Session[]; next: string | null }>();
  const [error, setError] = useState<string>();
  const [creating, setCreating] = useState(false);
  const [now, setNow] = useState(Date.now());
  const cursor = cursors[cursors.length - 1];

  usePolling(
    async (signal) => {
      try {
        const list = await client.sessions.list({ limit: PAGE_SIZE, signal, ...(cursor ? { cursor } : {}) });
        setPage({ sessions: list.data, next: list.nextCursor });
        setNow(Date.now());
        setError(undefined);
      } catch (failure) {
        if (signal.aborted) return;
        setError(`Could not read the sessions: ${String(failure)}`);
      }
    },
    REFRESH_MS,
    [client, cursor],
  );

  const create = async () => {
    setCreating(true);
    setError(undefined);
    try {
      const session = await client.sessions.create();
      navigate(hrefOf({ page: 'session', id: session.id }));
    } catch (failure) {
      setError(`Could not create a session: ${String(failure)}`);
      setCreating(false);
    }
  };

  return (
    <>
      <h1>Sessions</h1>
      <p>
        <button type="button" onClick={create} disabled={creating}>
          New session
        </button>
      </p>
      {error ? <p role="alert">{error}</p> : null}
      {page === undefined ? (
        <p>Loading…</p>
      ) : page.sessions.length === 0 ? (
        <p>No sessions yet.</p>
      ) : (
        <table class="runs">
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Status</th>
              <th scope="col">Messages</th>
              <th scope="col">Last active</th>
            </tr>
          </thead>
          <tbody>
            {page.sessions.map((session) => (
              <tr key={session.id}>
                <td>
                  <a href={hrefOf({ page: 'session', id: session.id })} onClick={onLinkClick}>
                    {session.id}
                  </a>
                </td>
                <td>
                  <SessionBadge status={session.status} />
                </td>
                <td>{session.runs}</td>
                <td>{age(session.updatedAt, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        {cursors.length > 1 ? (
          <button type="button" onClick={() => setCursors((current) => current.slice(0, -1))}>
            Newer sessions
          </button>
        ) : null}
        {page?.next ? (
          <button
            type="button"
            onClick={() => {
              const next = page.next;
              if (next) setCursors((current) => [...current, next]);
            }}
          >
            Older sessions
          </button>
        ) : null}
      </div>
    </>
  );
}
