import { prettyArgs } from './format.js';
import type { TimelineItem } from './timeline.js';

/** A run's timeline: one list item per timeline item. */
export function TimelineList({ items }: { items: readonly TimelineItem[] }) {
  return (
    <ol class="timeline" aria-live="polite">
      {items.map((item) => (
        <TimelineEntry item={item} key={item.key} />
      ))}
    </ol>
  );
}

/** A todo list as a checklist (disabled checkboxes labelled with the item and its status). */
export function Todos({ todos }: { todos: readonly { id: string; content: string; status: string }[] }) {
  return (
    <ul class="todos">
      {todos.map((todo) => (
        <li key={todo.id} class={`todo todo-${todo.status}`}>
          <input
            type="checkbox"
            checked={todo.status === 'completed'}
            disabled
            aria-label={`${todo.content} (${todo.status.replace('_', ' ')})`}
          />
          <span>{todo.content}</span>
        </li>
      ))}
    </ul>
  );
}

function TimelineEntry({ item }: { item: TimelineItem }) {
  const time = <time dateTime={item.at}>{new Date(item.at).toLocaleTimeString()}</time>;
  switch (item.kind) {
    case 'status':
      return (
        <li class="event event-status">
          {time} {item.text}
        </li>
      );
    case 'text':
      return (
        <li class="event event-text">
          {time}
          <p class="assistant">{item.text}</p>
        </li>
      );
    case 'tool':
      return (
        <li class="event event-tool">
          {time} <strong>Tool {item.name}</strong>
          {item.result ? (item.result.ok ? ' (done)' : ' (failed)') : ' (running)'}
          <pre class="args">{prettyArgs(item.args)}</pre>
          {item.output !== '' || item.result ? (
            <details>
              <summary>Output of {item.name}</summary>
              {item.output !== '' ? <pre class="stream">{item.output}</pre> : null}
              {item.result ? <pre class="result">{item.result.content}</pre> : null}
            </details>
          ) : null}
        </li>
      );
    case 'todos':
      return (
        <li class="event event-todos">
          {time} Todos updated
          <Todos todos={item.todos} />
        </li>
      );
    case 'question':
      return (
        <li class="event event-question">
          {time} Asked: {item.question}{' '}
          {item.outcome === undefined
            ? '(waiting for an answer)'
            : 'answer' in item.outcome
              ? `Answered: ${item.outcome.answer}`
              : 'Timed out without an answer'}
        </li>
      );
    case 'retry':
      return (
        <li class="event event-retry">
          {time} Retrying (attempt {item.attempt}, in {Math.round(item.delayMs / 1_000)} s): {item.error}
        </li>
      );
    case 'usage':
      return (
        <li class="event event-usage">
          {time} Usage: {item.usage.inputTokens} tokens in, {item.usage.outputTokens} out
        </li>
      );
  }
}
