import type { Run, RunStatus, TetherClient } from '@tether/client';
import { RUN_STATUSES } from '@tether/protocol';
import { useEffect, useState } from 'preact/hooks';
import { StatusBadge } from './badge.js';
import { CopyId } from './copy-id.js';
import { age, duration, runDuration, STATUS_TEXT, tokens, usd } from './format.js';
import { type Column, ListTable } from './list-table.js';
import { ModelName } from './model-name.js';
import { usePolling } from './reading.js';
import { hrefOf, onLinkClick, runHref } from './router.js';
import { parseMetadataFilter, SINCE_CHOICES, startedSince } from './runs-filter.js';

/** How often the list is read again: it follows new runs and status changes live. */
const REFRESH_MS = 2_000;
const PAGE_SIZE = 20;
const RUN_ID = /^run_[0-9a-z_]{26,}$/;

/**
 * The runs, newest first (id, task, status, duration, model, tokens, when, attempts),
 * filtered by status, metadata and start time, searched by id, in pages, read
 * again every two seconds.
 */
export function RunsPage({ client }: { client: TetherClient }) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [search, setSearch] = useState('');
  const [metadataText, setMetadataText] = useState('');
  const [sinceMs, setSinceMs] = useState(0);
  // Cursors of the pages before this one: going back pops one.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const metadata = parseMetadataFilter(metadataText);
  const pairs = 'pairs' in metadata ? metadata.pairs : {};
  const { page, error, now } = useRunList(client, status, cursor, pairs);
  const term = search.trim();
  const found = useRunLookup(client, term);
  const recent = startedSince(page?.runs ?? [], sinceMs, now);

  const runs =
    found !== undefined
      ? found === null
        ? []
        : [found]
      : recent.runs.filter((run) => term === '' || run.id.includes(term));
  const restart = () => setCursors([undefined]);

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
          restart();
        }}
        metadata={metadataText}
        metadataProblem={'problem' in metadata ? metadata.problem : undefined}
        onMetadata={(value) => {
          setMetadataText(value);
          restart();
        }}
        sinceMs={sinceMs}
        onSince={setSinceMs}
        search={search}
        onSearch={setSearch}
      />
      {error ? <p role="alert">{error}</p> : null}
      {page === undefined ? (
        <p>Loading…</p>
      ) : runs.length === 0 ? (
        <p>
          No runs{status ? ` with status ${STATUS_TEXT[status]}` : ''}
          {term ? ` matching ${term}` : ''}
          {Object.keys(pairs).length > 0 ? ' with that metadata' : ''}
          {sinceMs > 0 ? ' started in that time' : ''}.
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
            disabled={!page?.next || !recent.olderMayMatch}
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
function useRunList(
  client: TetherClient,
  status: RunStatus | '',
  cursor: string | undefined,
  metadata: Record<string, string>,
) {
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
          ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
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
    [client, status, cursor, JSON.stringify(metadata)],
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
  metadata,
  metadataProblem,
  onMetadata,
  sinceMs,
  onSince,
  search,
  onSearch,
}: {
  status: RunStatus | '';
  onStatus: (status: RunStatus | '') => void;
  metadata: string;
  metadataProblem: string | undefined;
  onMetadata: (text: string) => void;
  sinceMs: number;
  onSince: (ms: number) => void;
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
        Started
        <select value={String(sinceMs)} onChange={(event) => onSince(Number(event.currentTarget.value))}>
          {SINCE_CHOICES.map((choice) => (
            <option value={String(choice.ms)} key={choice.ms}>
              {choice.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Metadata
        <input
          value={metadata}
          placeholder="key=value"
          aria-invalid={metadataProblem !== undefined}
          aria-describedby={metadataProblem ? 'metadata-problem' : undefined}
          onChange={(event) => onMetadata(event.currentTarget.value)}
        />
        {metadataProblem ? (
          <span id="metadata-problem" class="error-text">
            {metadataProblem}
          </span>
        ) : null}
      </label>
      <label>
        Search by id
        <input type="search" value={search} onInput={(event) => onSearch(event.currentTarget.value)} />
      </label>
    </div>
  );
}

/** The list's columns: each says its name again in a card on a narrow screen. */
function runColumns(now: number): Column<Run>[] {
  return [
    {
      label: 'Run',
      cell: (run) => <CopyId id={run.id} href={runHref(run.id)} onClick={onLinkClick} />,
      class: 'id-cell',
    },
    { label: 'Task', cell: (run) => <span title={run.title}>{run.title ?? ''}</span>, class: 'title' },
    { label: 'Status', cell: (run) => <StatusBadge status={run.status} />, class: 'nowrap' },
    {
      label: 'Duration',
      cell: (run) => {
        const ms = runDuration(run, now);
        return ms === undefined ? '–' : duration(ms);
      },
      class: 'nowrap num',
    },
    { label: 'Model', cell: (run) => <ModelName run={run} />, class: 'nowrap' },
    {
      label: 'Tokens',
      cell: (run) => (run.usage ? tokens(run.usage.inputTokens + run.usage.outputTokens) : '–'),
      class: 'nowrap num',
    },
    {
      label: 'Cost',
      // By the profile's prices; a model without them has no cost to show.
      cell: (run) => (run.usage?.costUsd === undefined ? '–' : usd(run.usage.costUsd)),
      class: 'nowrap num',
    },
    {
      label: 'Created',
      cell: (run) => <time dateTime={run.createdAt}>{age(run.createdAt, now)}</time>,
      class: 'nowrap',
    },
    { label: 'Attempts', cell: (run) => String(run.attempts), class: 'nowrap num' },
  ];
}

function RunTable({ runs, now }: { runs: readonly Run[]; now: number }) {
  return (
    <ListTable<Run>
      caption="Runs, newest first"
      columns={runColumns(now)}
      rows={runs}
      rowKey={(run) => run.id}
      testId="runs"
    />
  );
}
