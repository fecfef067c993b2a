import type { MemoryEntry, TetherClient } from '@tether/client';
import { DEFAULT_MEMORY_SCOPE } from '@tether/protocol';
import { useState } from 'preact/hooks';
import { age } from './format.js';
import { ListTable } from './list-table.js';
import { useRead } from './reading.js';
import { PageHead } from './webhooks-page.js';

const PAGE_SIZE = 50;

/** What runs saved for later runs, one scope at a time (`default`, or a session's id), searchable. */
export function MemoryPage({ client }: { client: TetherClient }) {
  const [scope, setScope] = useState(DEFAULT_MEMORY_SCOPE);
  const [query, setQuery] = useState('');
  const [shown, setShown] = useState({ scope: DEFAULT_MEMORY_SCOPE, query: '' });
  const { data, error, reload } = useRead(
    `the memory of ${shown.scope}`,
    (signal) =>
      client.memory.list(shown.scope, {
        signal,
        limit: PAGE_SIZE,
        ...(shown.query ? { query: shown.query } : {}),
      }),
    [client, shown.scope, shown.query],
  );
  const now = Date.now();
  return (
    <>
      <PageHead title="Memory" onRefresh={reload} />
      <p class="muted">
        Notes runs saved with <code>memory_save</code>, shown to the next runs of their scope. A run's scope
        is its session's id, or <code>default</code>.
      </p>
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setShown({ scope: scope.trim() || DEFAULT_MEMORY_SCOPE, query: query.trim() });
        }}
      >
        <label>
          Scope
          <input value={scope} onInput={(event) => setScope(event.currentTarget.value)} />
        </label>
        <label>
          Search
          <input type="search" value={query} onInput={(event) => setQuery(event.currentTarget.value)} />
        </label>
        <button type="submit" class="align-end">
          Show
        </button>
      </form>
      {error ? <p role="alert">{error}</p> : null}
      {data === undefined ? (
        error ? null : (
          <p>Loading…</p>
        )
      ) : data.data.length === 0 ? (
        <p>
          Nothing saved in {data.scope}
          {shown.query ? ` matching “${shown.query}”` : ''}.
        </p>
      ) : (
        <>
          <p>
            {data.data.length} of {data.total} notes in {data.scope}
            {data.nextCursor ? ` (the first ${PAGE_SIZE}; search to narrow them)` : ''}.
          </p>
          <ListTable<MemoryEntry>
            caption={`Memory of ${data.scope}`}
            rows={data.data}
            rowKey={(entry) => entry.id}
            columns={[
              { label: 'Note', cell: (entry) => <span class="pre-line">{entry.content}</span> },
              { label: 'Tags', cell: (entry) => entry.tags.join(', '), class: 'nowrap' },
              {
                label: 'Updated',
                cell: (entry) => <time dateTime={entry.updatedAt}>{age(entry.updatedAt, now)}</time>,
                class: 'nowrap',
              },
            ]}
          />
        </>
      )}
    </>
  );
}
