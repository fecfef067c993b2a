import type { Run, RunStatus, TetherClient } from '@tether/client';
import { RUN_STATUSES } from '@tether/protocol';
import { useEffect, useState } from 'preact/hooks';
import { age, STATUS_TEXT } from './format.js';
import { usePolling } from './reading.js';
import { hrefOf, onLinkClick } from './router.js';

/** How often the list is read again: it follows new runs and status changes live. */
const REFRESH_MS = 2_000;
const PAGE_SIZE = 20;
const RUN_ID = /^run_[0-9a-z_]{26,}$/;

/** The runs, newest first (id, input's first line, status, age, attempts): a status filter, a search by id, pages, read again every two seconds. */
export function RunsPage({ client }: { client: TetherClient }) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [search, setSearch] = useState('');
  // Cursors of the pages before this one: going back pops one.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const { page, error, now } = useRunList(client, status, cursor);
  const term = search.trim();
  const found = useRunLookup(client, term);

  const runs =
    found !== undefined
      ? found === null
        ? []
        : [found]
      : (page?.runs ?? []).filter((run) => term === '' || run.id.includes(term));

  return (
    <>
      <div class="page-head">
        <h1>Runs</h1>
        <a class="button" href={hrefOf({ page: 'new-run' })} onClick={onLinkClick}>
          New run
        </a>
      </div>
      <RunFilters
        status={status}
        onStatus={(value) => {
          setStatus(value);
          setCursors([undefined]);
        }}
        search={search}
        onSearch={setSearch}
      />
      {error ? <p role="alert">{error}</p> : null}
      {page === undefined ? (
        <p>Loading…</p>
      ) : runs.length === 0 ? (
        <p>
          No runs{status ? ` with status ${STATUS_TEXT[status]}` : ''}
          {term ? ` matching ${term}` : ''}.
        </p>
      ) : (
        <RunTable runs={runs} now={now} />
      )}
      {found === undefined ? (
        <nav class="pager" aria-label="Pages">
          <button
            type="button"
            disabled={cursors.length === 1}
            onClick={() => setCursors((list) => list.slice(0, -1))}
          >
            Newer runs
          </button>
          <button
            type="button"
            disabled={!page?.next}
            onClick={() => page?.next && setCursors((list) => [...list, page.next ?? undefined])}
          >
            Older runs
          </button>
        </nav>
      ) : null}
    </>
  );
}

/** A page of runs (with `status`, from `cursor`), read now and every two seconds, and when it was read. */
function useRunList(client: TetherClient, status: RunStatus | '', cursor: string | undefined) {
  const [page, setPage] = useState<{ runs: Run[]; next: string | null }>();
  const [error, setError] = useState<string>();
  const [now, setNow] = useState(Date.now());
  usePolling(
    async (signal) => {
      try {
        const list = await client.list({
          limit: PAGE_SIZE,
          signal,
          ...(status ? { status } : {}),
          ...(cursor ? { cursor } : {}),
        });
        setPage({ runs: list.data, next: list.nextCursor });
        setNow(Date.now());
        setError(undefined);
      } catch (failure) {
        if (signal.aborted) return;
        setError(`Could not read the runs: ${String(failure)}`);
      }
    },
    REFRESH_MS,
    [client, status, cursor],
  );
  return { page, error, now };
}

/**
 * A whole run id is looked up on its own: it may be on no page loaded here.
 * Undefined when `term` is no run id, null when there is no such run.
 */
function useRunLookup(client: TetherClient, term: string): Run | null | undefined {
  const [found, setFound] = useState<Run | null>();
  useEffect(() => {
    if (!RUN_ID.test(term)) {
      setFound(undefined);
      return;
    }
    const controller = new AbortController();
    client.get(term, { signal: controller.signal }).then(
      (run) => setFound(run),
      () => !controller.signal.aborted && setFound(null),
    );
    return () => controller.abort();
  }, [client, term]);
  return found;
}

function RunFilters({
  status,
  onStatus,
  search,
  onSearch,
}: {
  status: RunStatus | '';
  onStatus: (status: RunStatus | '') => void;
  search: string;
  onSearch: (search: string) => void;
}) {
  return (
    <div class="filters">
      <label>
        Status
        <select value={status} onChange={(event) => onStatus(event.currentTarget.value as RunStatus | '')}>
          <option value="">All</option>
          {RUN_STATUSES.map((value) => (
            <option value={value} key={value}>
              {STATUS_TEXT[value]}
            </option>
          ))}
        </select>
      </label>
      <label>
        Search by id
        <input type="search" value={search} onInput={(event) => onSearch(event.currentTarget.value)} />
      </label>
    </div>
  );
}

function RunTable({ runs, now }: { runs: readonly Run[]; now: number }) {
  return (
    <table class="runs">
      <caption class="visually-hidden">Runs, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Input</th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
          <th scope="col">Attempts</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((run) => (
          <tr key={run.id}>
            <td>
              <a href={hrefOf({ page: 'run', id: run.id })} onClick={onLinkClick}>
                {run.id}
              </a>
            </td>
            <td class="title">{run.title ?? ''}</td>
            <td class={`status status-${run.status}`}>{STATUS_TEXT[run.status]}</td>
            <td>
              <time dateTime={run.createdAt}>{age(run.createdAt, now)}</time>
            </td>
            <td>{run.attempts}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
