import { useLayoutEffect, useRef } from 'preact/hooks';
import { type DiffLineKind, patchDiff } from './patch-diff.js';
import { filesHref, onLinkClick } from './router.js';
import type { TimelineItem, ToolStop } from './timeline.js';
import { Todos } from './todos.js';
import { type ArgsView, argsView } from './tool-args.js';

/** A tool call of the timeline. */
export type ToolItem = Extract<TimelineItem, { kind: 'tool' }>;

const DIFF_SIGN: Record<DiffLineKind, string> = {
  file: '',
  hunk: '',
  add: '+',
  remove: '-',
  context: ' ',
  note: '',
};
/** What a screen reader hears before a line (the sign is hidden from it). */
const DIFF_LABEL: Record<DiffLineKind, string> = {
  file: '',
  hunk: '',
  add: 'Added: ',
  remove: 'Removed: ',
  context: '',
  note: '',
};

/**
 * A tool call's arguments: a `patch` call's as a unified diff, any other's as what they are (see
 * `argsView`). A `held` call (waiting for approval) has not run: what it would write is shown open.
 */
export function ToolArguments({
  name,
  args,
  result,
  runId,
  held = false,
}: {
  name: string;
  args: string;
  result?: { ok: boolean; content: string } | undefined;
  runId?: string | undefined;
  held?: boolean;
}) {
  const diff = name === 'patch' ? patchDiff(args, result) : undefined;
  if (!diff) return <ArgumentsView view={argsView(name, args)} runId={runId} held={held} />;
  return (
    <figure class="diff">
      <figcaption>
        Change to{' '}
        {diff.path && runId ? <FileLink runId={runId} path={diff.path} /> : (diff.path ?? 'the file')}
        {diff.from === 'arguments' ? ' (from the call, without line numbers)' : ''}
      </figcaption>
      <pre>
        <code>
          {diff.lines.map((line, index) => (
            <span key={index} class={`diff-line diff-${line.kind}`}>
              {DIFF_LABEL[line.kind] === '' ? null : (
                <span class="visually-hidden">{DIFF_LABEL[line.kind]}</span>
              )}
              <span class="diff-sign" aria-hidden="true">
                {DIFF_SIGN[line.kind]}
              </span>
              {line.text}
              {'\n'}
            </span>
          ))}
        </code>
      </pre>
    </figure>
  );
}

function ArgumentsView({ view, runId, held }: { view: ArgsView; runId: string | undefined; held: boolean }) {
  switch (view.kind) {
    case 'command':
      return (
        <pre class="command">
          <span aria-hidden="true">$ </span>
          <code>{view.command}</code>
          {view.timeout !== undefined ? <span class="muted"> (timeout {view.timeout} s)</span> : null}
        </pre>
      );
    case 'file':
      return (
        <div class="file-args">
          <p>
            {view.verb} {runId ? <FileLink runId={runId} path={view.path} /> : <code>{view.path}</code>}
            {view.note ? <span class="muted"> ({view.note})</span> : null}
          </p>
          {view.content !== undefined ? (
            <details open={held}>
              <summary>{held ? 'Content to write' : 'Content written'}</summary>
              <pre class="args">{view.content}</pre>
            </details>
          ) : null}
        </div>
      );
    case 'todos':
      return (
        <div>
          {view.merge ? <p class="muted">Updates to the list:</p> : null}
          <Todos todos={view.todos} />
        </div>
      );
    case 'question':
      return (
        <p>
          Asks: “{view.question}”
          {view.choices.length > 0 ? <span class="muted"> ({view.choices.join(' / ')})</span> : null}
        </p>
      );
    case 'tasks':
      return (
        <ol class="tasks">
          {view.tasks.map((task, index) => (
            <li key={index}>
              {task.goal}
              {task.context ? <p class="muted pre-line">{task.context}</p> : null}
            </li>
          ))}
        </ol>
      );
    case 'text':
      return (
        <p>
          {view.label}: <span class="pre-line">{view.text}</span>
        </p>
      );
    case 'json':
      return <pre class="args">{view.text}</pre>;
  }
}

/** A path of the run's workspace, linked to it in the Files tab. */
function FileLink({ runId, path }: { runId: string; path: string }) {
  const relative = path.replace(/^\.?\/+/, '');
  return (
    <a href={filesHref(runId, relative === '.' ? '' : relative)} onClick={onLinkClick}>
      <code>{path}</code>
    </a>
  );
}

/** Words for how a call stands: running, done, failed, or how it was cut off. */
export const STOP_TEXT: Record<ToolStop, string> = {
  cancel: 'Stopped by cancel',
  failure: 'Stopped: the attempt failed',
  lost: 'Re-run after a worker was lost',
};

export function callState(item: Pick<ToolItem, 'result' | 'stopped'>): { text: string; tone: string } {
  if (item.result) return item.result.ok ? { text: 'Done', tone: 'ok' } : { text: 'Failed', tone: 'bad' };
  if (item.stopped) return { text: STOP_TEXT[item.stopped], tone: 'warn' };
  return { text: 'Running', tone: 'info' };
}

/**
 * A tool call: its name and how it stands (running, done, failed, or stopped
 * and why), its arguments, and its output: open and following while a
 * command runs, folded once it has a result.
 */
export function ToolCall({ item, runId }: { item: ToolItem; runId?: string }) {
  const state = callState(item);
  const live = !item.result && !item.stopped;
  return (
    <>
      <strong>Tool {item.name}</strong> <span class={`pill pill-${state.tone}`}>{state.text}</span>
      <ToolArguments name={item.name} args={item.args} result={item.result} runId={runId} />
      {item.output !== '' && live ? (
        <section class="live-output" aria-label={`Output of ${item.name}, so far`}>
          <FollowedOutput text={item.output} />
        </section>
      ) : item.output !== '' || item.result ? (
        <details>
          <summary>Output of {item.name}</summary>
          {item.output !== '' ? <pre class="stream">{item.output}</pre> : null}
          {item.result ? <pre class="result">{item.result.content}</pre> : null}
        </details>
      ) : null}
    </>
  );
}

/** Output that keeps its end in view as it grows, unless scrolled up to read. */
function FollowedOutput({ text }: { text: string }) {
  const box = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  useLayoutEffect(() => {
    const element = box.current;
    if (element && following.current) element.scrollTop = element.scrollHeight;
  }, [text]);
  return (
    <pre
      class="stream following"
      ref={box}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box takes focus, so that the keyboard can scroll it
      tabIndex={0}
      onScroll={(event) => {
        const element = event.currentTarget;
        following.current = element.scrollHeight - element.clientHeight - element.scrollTop <= 8;
      }}
    >
      {text}
    </pre>
  );
}
