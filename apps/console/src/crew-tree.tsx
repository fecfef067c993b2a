import type { RunTree, TetherClient } from '@tether/client';
import { TERMINAL_STATUSES } from '@tether/protocol';
import { useEffect, useState } from 'preact/hooks';
import { StatusBadge } from './badge.js';
import { onLinkClick, runHref } from './router.js';

/** While a child (or theirs) has not ended, the tree is read again this often: a grandchild's changes reach no stream the page follows. */
const POLL_MS = 3_000;

/** Why a child was not read, in words. */
const UNREAD_TEXT: Record<NonNullable<RunTree['unread']>, string> = {
  not_found: 'gone',
  max_depth: 'deeper than shown',
  max_runs: 'past the runs shown',
};

/** How a child's parent learned it ended, where its status does not say it. */
const OUTCOME_TEXT: Partial<Record<NonNullable<RunTree['outcome']>, string>> = {
  escalated: 'escalated',
  timed_out: 'timed out',
};

const active = (tree: RunTree): boolean =>
  !TERMINAL_STATUSES.includes(tree.status) || tree.children.some(active);

/**
 * A crew run's children as nested lists (theirs too): each with its goal (the
 * child's title: its goal's first line) as a link to its page, its status as
 * text, and how it ended. Read with the SDK's `tree` when `version` changes
 * (the run's `child.*` events), and every {@link POLL_MS} while any of its
 * descendants has not ended.
 */
export function CrewTree({
  client,
  runId,
  version,
}: {
  client: TetherClient;
  runId: string;
  version: number;
}) {
  const [tree, setTree] = useState<RunTree>();
  const [error, setError] = useState<string>();
  const [polls, setPolls] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    client.tree(runId, { signal: controller.signal }).then(
      (read) => {
        setTree(read);
        setError(undefined);
        // The run's own status comes from its stream; its descendants' do not.
        if (read.children.some(active)) timer = setTimeout(() => setPolls((count) => count + 1), POLL_MS);
      },
      (failure: unknown) => {
        if (controller.signal.aborted) return;
        setError(`Could not read the crew: ${String(failure)}`);
      },
    );
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [client, runId, version, polls]);

  return (
    <section aria-labelledby="crew-heading">
      <h2 id="crew-heading">Crew</h2>
      {error ? <p role="alert">{error}</p> : null}
      {tree === undefined ? (
        error ? null : (
          <p>Reading the crew…</p>
        )
      ) : tree.children.length === 0 ? (
        <p>No children yet.</p>
      ) : (
        <Children nodes={tree.children} />
      )}
    </section>
  );
}

function Children({ nodes }: { nodes: RunTree[] }) {
  return (
    <ul class="crew">
      {nodes.map((child) => (
        <li key={child.id} data-testid="crew-child">
          <a href={runHref(child.id)} onClick={onLinkClick}>
            {child.run?.title ?? `Child ${child.index === undefined ? '' : child.index + 1}`.trim()}
          </a>{' '}
          <StatusBadge status={child.status} />
          {child.outcome && OUTCOME_TEXT[child.outcome] ? ` (${OUTCOME_TEXT[child.outcome]})` : ''}
          {child.unread ? ` (not read: ${UNREAD_TEXT[child.unread]})` : ''}{' '}
          <code class="muted">{child.id}</code>
          {child.children.length > 0 ? <Children nodes={child.children} /> : null}
        </li>
      ))}
    </ul>
  );
}
