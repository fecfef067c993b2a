import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { duration } from './format.js';
import { onLinkClick, runHref } from './router.js';
import type { Timeline } from './timeline.js';
import { STOP_TEXT, ToolCall, type ToolItem } from './tool-call.js';
import type { AttemptGroup, ChildSpan, Span, Trace } from './trace.js';

/** Every row is this tall (px): the list is virtualised by arithmetic, not measurement. */
const ROW_PX = 30;
/** Rows drawn beyond each edge of the view. */
const OVERSCAN_ROWS = 20;

/** One row of the trace: an attempt's heading, a span, or a crew child under its delegation. */
type Row =
  | { kind: 'group'; key: string; group: AttemptGroup }
  | { kind: 'span'; key: string; span: Span; attempt: number }
  | { kind: 'child'; key: string; child: ChildSpan };

/** The trace's rows, top to bottom: the queue, then each attempt's heading and its spans. */
export function traceRows(trace: Trace): Row[] {
  const rows: Row[] = [];
  if (trace.queue) rows.push({ kind: 'span', key: trace.queue.key, span: trace.queue, attempt: 0 });
  for (const group of trace.groups) {
    rows.push({ kind: 'group', key: `group-${group.key}`, group });
    for (const span of group.spans) {
      rows.push({ kind: 'span', key: span.key, span, attempt: group.attempt });
      for (const child of span.children ?? [])
        rows.push({ kind: 'child', key: `${span.key}-${child.runId}`, child });
    }
  }
  return rows;
}

/** Round steps for the axis's ticks (ms). */
const TICK_STEPS = [
  10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
  900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
];

/** Ticks for an axis of `span` ms: the smallest round step that gives at most six (0 and five more). */
export function axisTicks(spanMs: number): number[] {
  const step = TICK_STEPS.find((candidate) => spanMs / candidate <= 5) ?? Math.ceil(spanMs / 5);
  const ticks: number[] = [];
  for (let at = 0; at <= spanMs; at += step) ticks.push(at);
  return ticks;
}

/** A tick's label, short: "0", "500 ms", "15 s", "2 min", "1.5 h". */
export function tickLabel(ms: number): string {
  if (ms === 0) return '0';
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${ms / 1_000} s`;
  if (ms < 3_600_000) return `${Math.round((ms / 60_000) * 10) / 10} min`;
  return `${Math.round((ms / 3_600_000) * 10) / 10} h`;
}

/**
 * A run's trace: each model turn, tool call and wait as a bar on one time
 * axis, grouped by attempt (waits hatched, a call cut off marked as such),
 * crew children under their delegation, and beside it the selected step's
 * details. The rows are buttons (Tab, Enter); the list scrolls in a box of
 * its own and only the rows in view are drawn, so a run of thousands of
 * steps costs what a short one does. While nothing is chosen, the details
 * follow the newest step.
 */
export function TraceView({ trace, timeline, runId }: { trace: Trace; timeline: Timeline; runId: string }) {
  const rows = traceRows(trace);
  const now = useTicking(trace.endMs === undefined && trace.startMs !== undefined);
  const start = trace.startMs ?? now;
  const end = Math.max(trace.endMs ?? now, start + 1);
  const [chosen, setChosen] = useState<string>();
  const spans = rows.filter((row): row is Extract<Row, { kind: 'span' }> => row.kind === 'span');
  const selected = spans.find((row) => row.key === chosen) ?? spans.at(-1);
  const place = (from: number, to: number | undefined) => {
    const left = ((from - start) / (end - start)) * 100;
    const right = (((to ?? now) - start) / (end - start)) * 100;
    return { left: `${Math.max(0, left)}%`, width: `max(3px, ${Math.max(0, right - left)}%)` };
  };

  return (
    <div class="trace-layout">
      <section class="trace" aria-label="Trace">
        <TraceAxis spanMs={end - start} />
        <VirtualRows rows={rows} follow={chosen === undefined}>
          {(row) =>
            row.kind === 'group' ? (
              <GroupRow group={row.group} now={now} />
            ) : row.kind === 'child' ? (
              <ChildRow child={row.child} now={now} bar={place(row.child.startMs, row.child.endMs)} />
            ) : (
              <SpanRow
                span={row.span}
                now={now}
                bar={place(row.span.startMs, row.span.endMs)}
                selected={row.key === selected?.key}
                onSelect={() => setChosen(row.key)}
              />
            )
          }
        </VirtualRows>
      </section>
      <aside class="trace-detail card" aria-label="Step details">
        {selected ? (
          <SpanDetail
            span={selected.span}
            attempt={selected.attempt}
            timeline={timeline}
            runId={runId}
            now={now}
          />
        ) : (
          <p class="muted">Nothing has happened yet: the run is waiting for a worker.</p>
        )}
      </aside>
    </div>
  );
}

function TraceAxis({ spanMs }: { spanMs: number }) {
  return (
    <div class="trace-axis" aria-hidden="true">
      <span />
      <span class="trace-ticks">
        {axisTicks(spanMs).map((at) => (
          <span key={at} class="tick" style={{ left: `${(at / spanMs) * 100}%` }}>
            {tickLabel(at)}
          </span>
        ))}
      </span>
      <span />
    </div>
  );
}

/** The rows in view of a scrolling box, at {@link ROW_PX} each; at the bottom, the box follows new rows. */
function VirtualRows({
  rows,
  follow,
  children,
}: {
  rows: readonly Row[];
  follow: boolean;
  children: (row: Row) => preact.ComponentChildren;
}) {
  const box = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const [view, setView] = useState({ top: 0, height: 480 });
  const first = Math.max(0, Math.floor(view.top / ROW_PX) - OVERSCAN_ROWS);
  const last = Math.min(rows.length, Math.ceil((view.top + view.height) / ROW_PX) + OVERSCAN_ROWS);
  useLayoutEffect(() => {
    const element = box.current;
    if (element && follow && atBottom.current) element.scrollTop = element.scrollHeight;
  }, [rows.length, follow]);
  useEffect(() => {
    const element = box.current;
    if (element) setView({ top: element.scrollTop, height: element.clientHeight });
  }, []);
  return (
    <div
      class="trace-scroll"
      ref={box}
      onScroll={(event) => {
        const element = event.currentTarget;
        atBottom.current = element.scrollHeight - element.clientHeight - element.scrollTop <= ROW_PX;
        setView({ top: element.scrollTop, height: element.clientHeight });
      }}
    >
      <ol
        class="trace-rows"
        style={{ paddingTop: `${first * ROW_PX}px`, paddingBottom: `${(rows.length - last) * ROW_PX}px` }}
      >
        {rows.slice(first, last).map((row) => (
          <li key={row.key} class={`trace-row trace-${row.kind}`} style={{ height: `${ROW_PX}px` }}>
            {children(row)}
          </li>
        ))}
      </ol>
    </div>
  );
}

function GroupRow({ group, now }: { group: AttemptGroup; now: number }) {
  return (
    <span class="trace-group-label">
      Attempt {group.attempt}
      {group.resumed ? `, resumed at step ${group.step}` : ''}
      <span class="muted"> · {duration((group.endMs ?? now) - group.startMs)}</span>
    </span>
  );
}

/** What a span's bar says in words (its colour and hatching only repeat it). */
function outcomeText(span: Span): string {
  if (span.stopped) return STOP_TEXT[span.stopped];
  switch (span.outcome) {
    case 'open':
      return span.kind === 'wait' || span.kind === 'queue' ? 'Waiting' : 'Running';
    case 'error':
      return span.kind === 'wait' ? 'Timed out' : 'Failed';
    case 'stopped':
      return 'Ended with the run';
    default:
      return span.kind === 'wait' ? 'Done waiting' : 'Done';
  }
}

function SpanRow({
  span,
  now,
  bar,
  selected,
  onSelect,
}: {
  span: Span;
  now: number;
  bar: { left: string; width: string };
  selected: boolean;
  onSelect: () => void;
}) {
  // A question is quoted; an approval's detail is its call's argument (a command, a path), as a call's is.
  const quoted = span.kind === 'wait' && span.detail && span.requestId === undefined;
  const detail = quoted ? `“${span.detail}”` : span.detail;
  return (
    <button type="button" class="span-button" aria-pressed={selected} onClick={onSelect}>
      <span class="span-name">
        <span class={`span-kind kind-${span.kind}`}>{span.label}</span>
        {detail ? <span class="span-detail"> {detail}</span> : null}
      </span>
      <span class="span-track" aria-hidden="true">
        <span class={`bar bar-${span.kind} bar-${span.stopped ? 'stopped' : span.outcome}`} style={bar} />
      </span>
      <span class="span-time">
        {duration((span.endMs ?? now) - span.startMs)}
        <span class="visually-hidden">, {outcomeText(span)}</span>
      </span>
    </button>
  );
}

function ChildRow({
  child,
  now,
  bar,
}: {
  child: ChildSpan;
  now: number;
  bar: { left: string; width: string };
}) {
  return (
    <span class="span-button child-row">
      <span class="span-name">
        <span aria-hidden="true">↳ </span>
        <a href={runHref(child.runId)} onClick={onLinkClick}>
          Child: {child.goal}
        </a>
        <span class="span-detail"> {child.status ?? 'running'}</span>
      </span>
      <span class="span-track" aria-hidden="true">
        <span
          class={`bar bar-child bar-${child.status === undefined ? 'open' : child.status === 'completed' ? 'ok' : 'error'}`}
          style={bar}
        />
      </span>
      <span class="span-time">{duration((child.endMs ?? now) - child.startMs)}</span>
    </span>
  );
}

/** The selected step in full: a call as the event list draws it, a turn's text, a wait's question and answer (or held call and decision). */
function SpanDetail({
  span,
  attempt,
  timeline,
  runId,
  now,
}: {
  span: Span;
  attempt: number;
  timeline: Timeline;
  runId: string;
  now: number;
}) {
  const took = duration((span.endMs ?? now) - span.startMs);
  const when = new Date(span.startMs).toLocaleTimeString();
  if (span.kind === 'tool') {
    const item = timeline.items.findLast(
      (candidate): candidate is ToolItem =>
        candidate.kind === 'tool' && candidate.callId === span.callId && candidate.attempt === attempt,
    );
    return (
      <>
        <h3>
          {span.label}{' '}
          <span class="muted">
            at {when}, {took}
          </span>
        </h3>
        {item ? <ToolCall item={item} runId={runId} /> : <p>{span.detail}</p>}
      </>
    );
  }
  if (span.kind === 'turn') {
    return (
      <>
        <h3>
          Model turn{' '}
          <span class="muted">
            at {when}, {took}
          </span>
        </h3>
        {span.detail ? <p>Tokens: {span.detail}</p> : null}
        {span.text ? (
          <p class="pre-line">
            <strong>Said:</strong> {span.text}
          </p>
        ) : (
          <p class="muted">No text: the turn called tools.</p>
        )}
      </>
    );
  }
  if (span.kind === 'queue') {
    return (
      <>
        <h3>In the queue</h3>
        <p>
          {took} from submission to a worker{span.endMs === undefined ? ', so far' : ''}.
        </p>
      </>
    );
  }
  return <WaitDetail span={span} when={when} took={took} />;
}

/** A wait in full: what it waited for (a question, a held call) and what ended it (a reply, a decision). */
function WaitDetail({ span, when, took }: { span: Span; when: string; took: string }) {
  const approval = span.requestId !== undefined;
  return (
    <>
      <h3>
        {span.label}{' '}
        <span class="muted">
          since {when}, {took}
        </span>
      </h3>
      {span.detail && approval ? (
        <p>
          <code>{span.detail}</code>
        </p>
      ) : null}
      {span.detail && !approval ? <p>“{span.detail}”</p> : null}
      {approval ? <p>Decision: {span.text ?? 'none yet'}</p> : null}
      {span.text && !approval ? <p>Reply: {span.text}</p> : null}
      {span.children ? (
        <p>The run gives up its worker slot while its children work, and resumes when they end.</p>
      ) : span.endMs === undefined ? (
        <p>The run holds no worker slot while it waits.</p>
      ) : null}
    </>
  );
}

/**
 * The time now: read at each render (an event drawn after the last tick is
 * never in the future), and a render every second while `live`, so that
 * open bars and durations grow.
 */
function useTicking(live: boolean): number {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!live) return undefined;
    const timer = setInterval(() => setTick((tick) => tick + 1), 1_000);
    return () => clearInterval(timer);
  }, [live]);
  return Date.now();
}
