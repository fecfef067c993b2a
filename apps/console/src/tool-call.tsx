import { prettyArgs } from './format.js';
import { type DiffLineKind, patchDiff } from './patch-diff.js';
import type { TimelineItem } from './timeline.js';

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

/** A tool call's arguments: a `patch` call's as a unified diff, any other's as JSON. */
export function ToolArguments({
  name,
  args,
  result,
}: {
  name: string;
  args: string;
  result?: { ok: boolean; content: string };
}) {
  const diff = name === 'patch' ? patchDiff(args, result) : undefined;
  if (!diff) return <pre class="args">{prettyArgs(args)}</pre>;
  return (
    <figure class="diff">
      <figcaption>
        Change to {diff.path ?? 'the file'}
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

/** A tool call: its name and state, its arguments, and its output and result once there are any. */
export function ToolCall({ item }: { item: Extract<TimelineItem, { kind: 'tool' }> }) {
  return (
    <>
      <strong>Tool {item.name}</strong>
      {item.result ? (item.result.ok ? ' (done)' : ' (failed)') : ' (running)'}
      <ToolArguments name={item.name} args={item.args} result={item.result} />
      {item.output !== '' || item.result ? (
        <details>
          <summary>Output of {item.name}</summary>
          {item.output !== '' ? <pre class="stream">{item.output}</pre> : null}
          {item.result ? <pre class="result">{item.result.content}</pre> : null}
        </details>
      ) : null}
    </>
  );
}
