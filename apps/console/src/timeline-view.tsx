import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { argumentsText, decisionText } from './approval.js';
import { deliveryText } from './steer.js';
import type { TimelineItem } from './timeline.js';
import { Todos } from './todos.js';
import { callDetail } from './tool-args.js';
import { ToolCall } from './tool-call.js';

/** Heights (px) a row of each kind is placed at before any row of its kind is measured. */
const ESTIMATED_HEIGHT: Record<TimelineItem['kind'], number> = {
  status: 34,
  text: 64,
  tool: 120,
  todos: 110,
  question: 34,
  approval: 48,
  user: 48,
  retry: 34,
  usage: 34,
};
/** Rows drawn beyond each edge of the view (px), so that a short scroll shows no gap. */
const OVERSCAN_PX = 800;
/** How close to the bottom (px) counts as at the bottom: the view then follows new rows. */
const BOTTOM_SLACK_PX = 8;

/** The first index whose row ends after `y` (`offsets` holds each row's top, then the total). */
function rowAt(offsets: Float64Array, y: number): number {
  let low = 0;
  let high = offsets.length - 2;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((offsets[mid + 1] as number) <= y) low = mid + 1;
    else high = mid;
  }
  return Math.max(0, low);
}

/**
 * A run's timeline as a virtualised list: it scrolls in a box of its own, and
 * only the rows in view (and {@link OVERSCAN_PX} around it) are in the DOM;
 * the rest are padding. A row is placed at an estimate for its kind (the mean
 * of its kind's rows measured so far) until it has been drawn once, then at
 * its measured height (a ResizeObserver keeps it
 * true when a row grows: streamed text, output opened). Scrolled to the
 * bottom, the view follows new rows. For assistive technology each row says
 * its place in the whole list (`aria-posinset` of `aria-setsize`), and the box
 * takes focus, so arrow keys and Page Down scroll it.
 */
export function TimelineList({ items, runId }: { items: readonly TimelineItem[]; runId?: string }) {
  const box = useRef<HTMLElement>(null);
  const heights = useRef(new Map<string, number>());
  // The measured rows' heights summed per kind: a row not drawn yet is placed at its kind's mean, so
  // that the list's height hardly moves as rows are measured (a jump to the end lands at the end).
  const kindSums = useRef(
    Object.fromEntries(Object.keys(ESTIMATED_HEIGHT).map((kind) => [kind, { total: 0, count: 0 }])) as Record<
      TimelineItem['kind'],
      { total: number; count: number }
    >,
  );
  const following = useRef(true);
  const [view, setView] = useState({ top: 0, height: 600 });
  const [, setMeasured] = useState(0);
  const observer = useRef<ResizeObserver>();
  const observed = useRef(new Set<HTMLElement>());

  useEffect(() => {
    const element = box.current;
    if (!element) return undefined;
    const resized = new ResizeObserver((entries) => {
      let changed = false;
      for (const entry of entries) {
        const target = entry.target as HTMLElement;
        if (target === element) {
          setView((current) => ({ ...current, height: element.clientHeight }));
          continue;
        }
        const key = target.dataset.key;
        const kind = target.dataset.kind as TimelineItem['kind'] | undefined;
        const height = entry.borderBoxSize[0]?.blockSize ?? target.offsetHeight;
        const before = key === undefined ? undefined : heights.current.get(key);
        if (key === undefined || kind === undefined || height === 0 || before === height) continue;
        heights.current.set(key, height);
        const sum = kindSums.current[kind];
        sum.total += height - (before ?? 0);
        if (before === undefined) sum.count++;
        changed = true;
      }
      if (changed) setMeasured((count) => count + 1);
    });
    resized.observe(element);
    observer.current = resized;
    return () => resized.disconnect();
  }, []);

  const offsets = new Float64Array(items.length + 1);
  const estimate = (kind: TimelineItem['kind']) => {
    const sum = kindSums.current[kind];
    return sum.count === 0 ? ESTIMATED_HEIGHT[kind] : sum.total / sum.count;
  };
  for (const [index, item] of items.entries()) {
    offsets[index + 1] = (offsets[index] as number) + (heights.current.get(item.key) ?? estimate(item.kind));
  }
  const total = offsets[items.length] as number;
  const first = items.length === 0 ? 0 : rowAt(offsets, view.top - OVERSCAN_PX);
  const end = items.length === 0 ? 0 : rowAt(offsets, view.top + view.height + OVERSCAN_PX) + 1;
  const shown = items.slice(first, end);

  // After each render: rows drawn now are measured (each observed once), and a view at the bottom
  // stays there as rows are added or grow.
  useLayoutEffect(() => {
    const element = box.current;
    const resized = observer.current;
    if (!element) return;
    if (resized) {
      for (const row of observed.current) {
        if (row.isConnected) continue;
        resized.unobserve(row);
        observed.current.delete(row);
      }
      for (const row of element.querySelectorAll<HTMLElement>('li[data-key]')) {
        if (observed.current.has(row)) continue;
        observed.current.add(row);
        resized.observe(row);
      }
    }
    if (following.current && element.scrollHeight - element.clientHeight - element.scrollTop > 1) {
      element.scrollTop = element.scrollHeight;
    }
  });

  return (
    <section
      class="timeline-box"
      ref={box}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box takes focus, so that the keyboard can scroll it
      tabIndex={0}
      aria-label="Timeline events"
      onScroll={(event) => {
        const element = event.currentTarget;
        following.current =
          element.scrollHeight - element.clientHeight - element.scrollTop <= BOTTOM_SLACK_PX;
        setView({ top: element.scrollTop, height: element.clientHeight });
      }}
    >
      <ol
        class="timeline"
        style={{ paddingTop: `${offsets[first]}px`, paddingBottom: `${total - (offsets[end] as number)}px` }}
      >
        {shown.map((item, index) => (
          <li
            key={item.key}
            data-key={item.key}
            data-kind={item.kind}
            class="timeline-row"
            aria-setsize={items.length}
            aria-posinset={first + index + 1}
          >
            <div class={`event event-${item.kind}`}>
              <TimelineEntry item={item} runId={runId} />
            </div>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** What a row shows for its item (the row itself, its <li>, is the list's). */
function TimelineEntry({ item, runId }: { item: TimelineItem; runId: string | undefined }) {
  const time = <time dateTime={item.at}>{new Date(item.at).toLocaleTimeString()}</time>;
  switch (item.kind) {
    case 'status':
      return (
        <>
          {time} {item.text}
        </>
      );
    case 'text':
      return (
        <>
          {time}
          <p class="assistant">{item.text}</p>
        </>
      );
    case 'tool':
      return (
        <>
          {time} <ToolCall item={item} runId={runId} />
        </>
      );
    case 'todos':
      return (
        <>
          {time} Todos updated
          <Todos todos={item.todos} />
        </>
      );
    case 'question':
      return (
        <>
          {time} Asked: {item.question}{' '}
          {item.outcome === undefined
            ? '(waiting for an answer)'
            : 'answer' in item.outcome
              ? `Answered: ${item.outcome.answer}`
              : 'Timed out without an answer'}
        </>
      );
    case 'approval':
      return (
        <>
          {time} <HeldCall item={item} />
        </>
      );
    case 'user':
      return (
        <>
          {time} <SentMessage item={item} />
        </>
      );
    case 'retry':
      return (
        <>
          {time} Retrying (attempt {item.attempt}, in {Math.round(item.delayMs / 1_000)} s): {item.error}
        </>
      );
    case 'usage':
      return (
        <>
          {time} Usage: {item.usage.inputTokens} tokens in, {item.usage.outputTokens} out
        </>
      );
  }
}

/** A message sent to the live run: its text, and whether the run has taken it (at which turn) or ended first. */
function SentMessage({ item }: { item: Extract<TimelineItem, { kind: 'user' }> }) {
  const { delivery } = item;
  const tone = delivery.state === 'pending' ? 'info' : delivery.state === 'delivered' ? 'ok' : 'warn';
  return (
    <>
      <span class={`pill pill-${tone}`}>{deliveryText(delivery)}</span>
      <p class="pre-line user-message">You: {item.content}</p>
    </>
  );
}

/** How each decision is coloured (its words say it too). */
const DECISION_TONE = { approve: 'ok', edit: 'info', reject: 'bad' } as const;

/** A call held for approval: the call in a few words, why it was held, and what was decided, by whom. */
function HeldCall({ item }: { item: Extract<TimelineItem, { kind: 'approval' }> }) {
  const { approval, decision } = item;
  const detail = callDetail(approval.tool, argumentsText(approval.arguments));
  const tone =
    decision === undefined ? 'info' : decision.timedOut ? 'warn' : DECISION_TONE[decision.decision];
  return (
    <>
      Held for approval: <strong>{approval.tool}</strong>
      {detail ? <code> {detail}</code> : null} <span class="muted">({approval.reason})</span>{' '}
      <span class={`pill pill-${tone}`}>
        {decision === undefined ? 'Waiting for a decision' : decisionText(decision)}
      </span>
      {decision?.message ? <p class="pre-line">Message for the model: {decision.message}</p> : null}
      {decision?.arguments ? (
        <details>
          <summary>Arguments as edited</summary>
          <pre class="args">{JSON.stringify(decision.arguments, null, 2)}</pre>
        </details>
      ) : null}
    </>
  );
}
