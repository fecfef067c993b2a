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
