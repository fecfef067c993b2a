import type { Run, RunEvent, TetherClient } from '@tether/client';
import { TERMINAL_STATUSES } from '@tether/protocol';
import { useEffect, useRef, useState } from 'preact/hooks';
import { CrewTree } from './crew-tree.js';
import { FilesTab } from './files-tab.js';
import { STATUS_TEXT } from './format.js';
import { Question } from './question.js';
import { coalesce, perFrame } from './reading.js';
import { filesHref, navigate, onLinkClick, type RunTab, runHref } from './router.js';
import { EMPTY_TIMELINE, foldEvents, type Timeline } from './timeline.js';
import { TimelineList, Todos } from './timeline-view.js';

/** Events that change what `GET /v1/runs/:id` says (status, question, usage): the run is read again after each. */
const RUN_CHANGING: ReadonlySet<RunEvent['type']> = new Set([
  'run.started',
  'attempt.started',
  'clarify.requested',
  'clarify.answered',
  'clarify.timed_out',
  'todo.updated',
  'usage',
  'run.retrying',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'child.started',
  'child.finished',
]);

/** Tools whose results mean the workspace may have changed: the Files tab reads it again after each. */
const FILE_CHANGING_TOOLS: ReadonlySet<string> = new Set(['write_file', 'patch', 'bash']);
/** Events after which the workspace may have changed (a child writes in its tree's workspace). */
const FILE_CHANGING_EVENTS: ReadonlySet<RunEvent['type']> = new Set([
  'child.finished',
  'run.completed',
  'run.failed',
  'run.cancelled',
]);
/** Whether `event` says the workspace may have changed. */
const changesFiles = (event: RunEvent): boolean =>
  FILE_CHANGING_EVENTS.has(event.type) ||
  (event.type === 'tool.result' && FILE_CHANGING_TOOLS.has(event.data.name));

const READ_FAILED = 'Could not read the run:';
/** Events per page of the history read before the stream (the API's most). */
const HISTORY_PAGE = 1_000;

/**
 * One run: its status, a pending question, "Cancel run", its crew (a parent's
 * children, a child's parent and root), and two tabs: its live timeline and
 * its workspace's files (`tab`, with `filePath` the file or folder shown).
 */
export function RunPage({
  client,
  id,
  tab = 'timeline',
  filePath = '',
}: {
  client: TetherClient;
  id: string;
  tab?: RunTab;
  filePath?: string;
}) {
  const [run, setRun] = useState<Run | null>();
  const [timeline, setTimeline] = useState<Timeline>(EMPTY_TIMELINE);
  const [error, setError] = useState<string>();
  // Bumped by the stream's events: the Files tab reads the workspace again, the crew tree its runs.
  const [filesVersion, setFilesVersion] = useState(0);
  const [crewVersion, setCrewVersion] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    const read = () =>
      client.get(id, { signal }).then(
        (next) => {
          setRun(next);
          // A read that failed while the API was away is forgotten once one succeeds.
          setError((current) => (current?.startsWith(READ_FAILED) ? undefined : current));
        },
        (failure: unknown) => {
          if (signal.aborted) return;
          if (failure instanceof Error && failure.name === 'TetherNotFoundError') setRun(null);
          else setError(`${READ_FAILED} ${String(failure)}`);
        },
      );
    // One read at a time: events that change the run while one is on its way ask for one more
    // after it, not one each (a long run's replay has hundreds of them).
    const refresh = coalesce(read);
    const follow = async () => {
      // The run and its history are read side by side: the timeline does not wait for the run.
      void refresh();
      // Events arrive in bursts: they are folded in per animation frame, not one render each.
      const fold = perFrame<RunEvent>((events) => setTimeline((current) => foldEvents(current, events)));
      try {
        // The history first, by pages of JSON (a page of 1,000 events is one answer, cheaper to send
        // and to read than 1,000 SSE frames), then the stream from the last event of the history.
        let lastEventId: string | undefined;
        for (;;) {
          const page = await client.events(id, { after: lastEventId, limit: HISTORY_PAGE, signal });
          const last = page.data.at(-1);
          if (last) {
            lastEventId = last.id;
            setTimeline((current) => foldEvents(current, page.data));
            // The first reads of the run and of the Files tab may have come before these events (a run
            // that ended while the page opened has its last events here, and none on the stream): one
            // more read per page that changes them.
            if (page.data.some((event) => RUN_CHANGING.has(event.type))) void refresh();
            if (page.data.some(changesFiles)) setFilesVersion((version) => version + 1);
          }
          if (page.data.length < HISTORY_PAGE || page.nextCursor === null) break;
        }
        for await (const event of client.stream(id, { signal, lastEventId })) {
          fold(event);
          if (RUN_CHANGING.has(event.type)) void refresh();
          if (changesFiles(event)) setFilesVersion((version) => version + 1);
          if (event.type === 'child.started' || event.type === 'child.finished') {
            setCrewVersion((version) => version + 1);
          }
        }
      } catch (failure) {
        if (signal.aborted) return;
        if (failure instanceof Error && failure.name === 'TetherNotFoundError') return;
        setError(`The event stream stopped: ${String(failure)}`);
      }
    };
    void follow();
    return () => controller.abort();
  }, [client, id]);

  if (run === undefined) return <p>Loading…</p>;
  if (run === null) {
    return (
      <>
        <h1>Run not found</h1>
        <p>
          No run {id} for this key.{' '}
          <a href="/console/" onClick={onLinkClick}>
            See the runs
          </a>
          .
        </p>
      </>
    );
  }
  const finished = TERMINAL_STATUSES.includes(run.status);
  return (
    <>
      <p>
        <a href="/console/" onClick={onLinkClick}>
          ← Runs
        </a>
      </p>
      <h1 class="run-id">Run {run.id}</h1>
      <dl class="facts">
        {run.parentRunId ? (
          <>
            <dt>Parent run</dt>
            <dd>
              <a href={runHref(run.parentRunId)} onClick={onLinkClick}>
                {run.parentRunId}
              </a>
            </dd>
          </>
        ) : null}
        {run.rootRunId ? (
          <>
            <dt>Root run</dt>
            <dd>
              <a href={runHref(run.rootRunId)} onClick={onLinkClick}>
                {run.rootRunId}
              </a>
            </dd>
          </>
        ) : null}
        <dt>Status</dt>
        <dd class={`status status-${run.status}`} data-testid="run-status">
          {STATUS_TEXT[run.status]}
        </dd>
        <dt>Attempts</dt>
        <dd>{run.attempts}</dd>
        {run.usage ? (
          <>
            <dt>Tokens</dt>
            <dd>
              {run.usage.inputTokens} in, {run.usage.outputTokens} out
            </dd>
          </>
        ) : null}
      </dl>
      {error ? <p role="alert">{error}</p> : null}
      {run.pendingClarify ? (
        <Question client={client} run={run} pending={run.pendingClarify} onAnswered={setRun} />
      ) : null}
      {finished ? null : <CancelRun client={client} id={run.id} onCancelled={setRun} />}
      {run.output !== undefined ? (
        <section aria-labelledby="output-heading">
          <h2 id="output-heading">Output</h2>
          <pre class="output">{run.output}</pre>
        </section>
      ) : null}
      {run.error ? (
        <p class="error-text">
          {run.error.code}: {run.error.message}
        </p>
      ) : null}
      {run.todos.length > 0 ? (
        <section aria-labelledby="todos-heading">
          <h2 id="todos-heading">Todos</h2>
          <Todos todos={run.todos} />
        </section>
      ) : null}
      {run.children && run.children.length > 0 ? (
        <CrewTree client={client} runId={run.id} version={crewVersion} />
      ) : null}
      <RunTabs runId={run.id} tab={tab} />
      <section id="panel-timeline" role="tabpanel" aria-labelledby="tab-timeline" hidden={tab !== 'timeline'}>
        {tab === 'timeline' ? <TimelineList items={timeline.items} /> : null}
      </section>
      <section id="panel-files" role="tabpanel" aria-labelledby="tab-files" hidden={tab !== 'files'}>
        {tab === 'files' ? (
          <>
            {run.rootRunId && run.rootRunId !== run.id ? (
              <p class="muted">A crew child works in its root run's workspace: these are its files.</p>
            ) : null}
            <FilesTab client={client} runId={run.id} path={filePath} version={filesVersion} />
          </>
        ) : null}
      </section>
    </>
  );
}

const TABS: readonly { tab: RunTab; label: string }[] = [
  { tab: 'timeline', label: 'Timeline' },
  { tab: 'files', label: 'Files' },
];

/**
 * The run's tabs (ARIA's tabs pattern, activation following focus): each is
 * a link to its own URL, so a tab survives a reload; Left and Right (and Home,
 * End) move between them, and only the selected one is in the Tab order.
 */
function RunTabs({ runId, tab }: { runId: string; tab: RunTab }) {
  const list = useRef<HTMLDivElement>(null);
  const hrefOf = (to: RunTab) => (to === 'files' ? filesHref(runId) : runHref(runId));
  const select = (to: RunTab) => {
    if (to !== tab) navigate(hrefOf(to));
    list.current?.querySelector<HTMLElement>(`#tab-${to}`)?.focus();
  };
  return (
    <div
      class="tabs"
      role="tablist"
      aria-label="Run views"
      ref={list}
      onKeyDown={(event) => {
        const at = TABS.findIndex((entry) => entry.tab === tab);
        const next =
          event.key === 'ArrowRight'
            ? (at + 1) % TABS.length
            : event.key === 'ArrowLeft'
              ? (at - 1 + TABS.length) % TABS.length
              : event.key === 'Home'
                ? 0
                : event.key === 'End'
                  ? TABS.length - 1
                  : undefined;
        if (next === undefined) return;
        event.preventDefault();
        select((TABS[next] as (typeof TABS)[number]).tab);
      }}
    >
      {TABS.map((entry) => (
        <a
          key={entry.tab}
          id={`tab-${entry.tab}`}
          role="tab"
          href={hrefOf(entry.tab)}
          aria-selected={entry.tab === tab}
          aria-controls={`panel-${entry.tab}`}
          tabIndex={entry.tab === tab ? 0 : -1}
          onClick={onLinkClick}
        >
          {entry.label}
        </a>
      ))}
    </div>
  );
}

function CancelRun({
  client,
  id,
  onCancelled,
}: {
  client: TetherClient;
  id: string;
  onCancelled: (run: Run) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  if (!confirming) {
    return (
      <p>
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Cancel run
        </button>
      </p>
    );
  }
  return (
    <fieldset class="card confirm">
      <legend>Cancel this run? A running step is stopped; this cannot be undone.</legend>
      <button
        type="button"
        class="danger"
        onClick={async () => {
          try {
            await client.cancel(id);
            onCancelled(await client.get(id));
          } catch (failure) {
            setError(`Could not cancel: ${String(failure)}`);
          }
          setConfirming(false);
        }}
      >
        Yes, cancel the run
      </button>
      <button type="button" onClick={() => setConfirming(false)}>
        Keep it running
      </button>
      {error ? <p role="alert">{error}</p> : null}
    </fieldset>
  );
}
