import type { Run, TetherClient } from '@tether/client';
import { TERMINAL_STATUSES } from '@tether/protocol';
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { Approvals } from './approvals.js';
import { StatusBadge } from './badge.js';
import { CopyId } from './copy-id.js';
import { CrewTree } from './crew-tree.js';
import { FilesTab } from './files-tab.js';
import { duration, runDuration, tokens, usd } from './format.js';
import { ModelName } from './model-name.js';
import { Question } from './question.js';
import { filesHref, hrefOf, navigate, onLinkClick, type RunTab, runHref } from './router.js';
import { RunActions } from './run-actions.js';
import { useRunFeed } from './run-feed.js';
import { SteerForm } from './steer-form.js';
import type { Timeline } from './timeline.js';
import { TimelineList } from './timeline-view.js';
import { Todos } from './todos.js';
import type { Trace } from './trace.js';
import { TraceView } from './trace-view.js';
import { useNow } from './use-now.js';

/**
 * One run: its status, a pending question, the tool calls it holds for a
 * decision, "Message the run" while it is live, "Cancel run", its crew (a parent's children, a child's parent and
 * root), and two tabs: its live timeline and its workspace's files (`tab`,
 * with `filePath` the file or folder shown).
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
  const { run, setRun, timeline, trace, error, filesVersion, crewVersion } = useRunFeed(client, id);

  if (run === undefined) return <p>Loading…</p>;
  if (run === null) return <RunNotFound id={id} />;
  return (
    <>
      <RunHead client={client} run={run} onChanged={setRun} />
      {error ? <p role="alert">{error}</p> : null}
      {run.pendingClarify ? (
        <Question client={client} run={run} pending={run.pendingClarify} onAnswered={setRun} />
      ) : null}
      <Approvals client={client} run={run} timeline={timeline} onChanged={setRun} />
      {TERMINAL_STATUSES.includes(run.status) ? null : (
        <SteerForm key={run.id} client={client} run={run} timeline={timeline} />
      )}
      <RunOutcome run={run} />
      {run.children && run.children.length > 0 ? (
        <CrewTree client={client} runId={run.id} version={crewVersion} />
      ) : null}
      <RunTabs runId={run.id} tab={tab} />
      <RunPanels
        client={client}
        run={run}
        tab={tab}
        filePath={filePath}
        timeline={timeline}
        trace={trace}
        filesVersion={filesVersion}
      />
    </>
  );
}

function RunNotFound({ id }: { id: string }) {
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

/**
 * The run's header: the way back, its id (copyable), its task and status, its
 * facts (duration, attempts, model, tokens, crew and session links) and what can be
 * done with it.
 */
function RunHead({
  client,
  run,
  onChanged,
}: {
  client: TetherClient;
  run: Run;
  onChanged: (run: Run) => void;
}) {
  const now = useNow(!TERMINAL_STATUSES.includes(run.status));
  const ms = runDuration(run, now);
  return (
    <header class="run-head">
      <p class="crumbs">
        <a href="/console/" onClick={onLinkClick}>
          Runs
        </a>
        <span aria-hidden="true"> / </span>
        <CopyId id={run.id} />
      </p>
      <div class="run-title">
        <h1 class="run-task">{run.title || `Run ${run.id}`}</h1>
        <StatusBadge status={run.status} testId="run-status" />
      </div>
      <dl class="facts-row">
        <Fact term="Duration">{ms === undefined ? 'not started' : duration(ms)}</Fact>
        <Fact term="Attempts">{String(run.attempts)}</Fact>
        <Fact term="Model">
          <ModelName run={run} />
        </Fact>
        <Fact term="Tokens">
          {run.usage ? `${tokens(run.usage.inputTokens)} in, ${tokens(run.usage.outputTokens)} out` : '–'}
        </Fact>
        {run.usage?.costUsd === undefined ? null : <Fact term="Cost">{usd(run.usage.costUsd)}</Fact>}
        <Fact term="Created">
          <time dateTime={run.createdAt}>{new Date(run.createdAt).toLocaleString()}</time>
        </Fact>
        {run.parentRunId ? <RunLinkFact term="Parent run" id={run.parentRunId} /> : null}
        {run.rootRunId && run.rootRunId !== run.parentRunId ? (
          <RunLinkFact term="Root run" id={run.rootRunId} />
        ) : null}
        {run.retryOf ? <RunLinkFact term="Retry of" id={run.retryOf} /> : null}
        {run.sessionId ? (
          <Fact term="Session">
            <a href={hrefOf({ page: 'session', id: run.sessionId })} onClick={onLinkClick}>
              {run.sessionId}
            </a>
          </Fact>
        ) : null}
      </dl>
      <div class="run-actions">
        {TERMINAL_STATUSES.includes(run.status) ? null : (
          <CancelRun client={client} id={run.id} onCancelled={onChanged} />
        )}
        <RunActions client={client} run={run} />
      </div>
    </header>
  );
}

function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** A fact that names another run, linked to its page. */
function RunLinkFact({ term, id }: { term: string; id: string }) {
  return (
    <Fact term={term}>
      <a href={runHref(id)} onClick={onLinkClick}>
        {id}
      </a>
    </Fact>
  );
}

/** What the run has come to so far: its output, its structured result, its error, its todos. */
function RunOutcome({ run }: { run: Run }) {
  return (
    <>
      {run.output !== undefined ? (
        <section aria-labelledby="output-heading">
          <h2 id="output-heading">Output</h2>
          <pre class="output">{run.output}</pre>
        </section>
      ) : null}
      {run.result !== undefined ? (
        <section aria-labelledby="result-heading">
          <h2 id="result-heading">Result</h2>
          <pre class="result">{JSON.stringify(run.result, null, 2)}</pre>
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
    </>
  );
}

/** The tabs' two panels: only the selected one is drawn, the other kept empty and hidden. The timeline is the run as a trace, then its events one by one. */
function RunPanels({
  client,
  run,
  tab,
  filePath,
  timeline,
  trace,
  filesVersion,
}: {
  client: TetherClient;
  run: Run;
  tab: RunTab;
  filePath: string;
  timeline: Timeline;
  trace: Trace;
  filesVersion: number;
}) {
  return (
    <>
      <section id="panel-timeline" role="tabpanel" aria-labelledby="tab-timeline" hidden={tab !== 'timeline'}>
        {tab === 'timeline' ? (
          <>
            <h2 class="section-title">Trace</h2>
            <TraceView trace={trace} timeline={timeline} runId={run.id} />
            <h2 class="section-title">Events</h2>
            <TimelineList items={timeline.items} runId={run.id} />
          </>
        ) : null}
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
