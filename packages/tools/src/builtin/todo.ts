import { type Static, Type } from '@sinclair/typebox';
import { TODO_STATUSES, type TodoItem, TodoItemSchema, type TodoStatus } from '@tether/protocol';
import { defineTool } from '../define-tool.js';
import { ToolError } from '../errors.js';
import type { ToolEnvironment } from '../tool-environment.js';
import type { Tool, ToolSchema } from '../types.js';

/** Most items a todo list may hold. */
export const TODO_MAX_ITEMS = 100;

const TodoStatusParam = Type.Union(
  TODO_STATUSES.map((status) => Type.Literal(status)),
  { description: 'pending | in_progress | completed | cancelled' },
);

/** One item of a `todo` call: `content` and `status` may be left out when merging into an existing item. */
export const TodoUpdateItem = Type.Object(
  {
    id: TodoItemSchema.properties.id,
    content: Type.Optional(TodoItemSchema.properties.content),
    status: Type.Optional(TodoStatusParam),
  },
  { additionalProperties: false },
);

/** Parameters of `todo` (design 6.3, in TypeBox). */
export const TodoParams = Type.Object(
  {
    todos: Type.Optional(
      Type.Array(TodoUpdateItem, {
        maxItems: TODO_MAX_ITEMS,
        description:
          'The items, in priority order: { id, content, status }. Leave out to read the current list.',
      }),
    ),
    merge: Type.Optional(
      Type.Boolean({
        description:
          'false (default): replace the whole list. true: update the listed ids (only the fields given) and append new ids.',
      }),
    ),
  },
  { additionalProperties: false },
);

/** Catalog entry of `todo` (toolset `planning`). */
export const todoSchema: ToolSchema<typeof TodoParams> = {
  name: 'todo',
  toolset: 'planning',
  description:
    'Keep the task list of this run. Create it before a multi-step task, keep at most one item in_progress, mark items completed as soon as they are done. Returns the current list.',
  parameters: TodoParams,
};

const MARKS: Record<TodoStatus, string> = {
  pending: '[ ]',
  in_progress: '[>]',
  completed: '[x]',
  cancelled: '[-]',
};

/** The list as the model reads it. */
export function formatTodoList(items: readonly TodoItem[]): string {
  if (items.length === 0) return 'The todo list is empty.';
  const done = items.filter((item) => item.status === 'completed').length;
  const lines = items.map(
    (item, index) =>
      `${index + 1}. ${MARKS[item.status]} ${item.content} (id: ${item.id}${item.status === 'in_progress' ? ', in progress' : ''})`,
  );
  return `Todo list (${done}/${items.length} completed):\n${lines.join('\n')}`;
}

type TodoUpdate = Static<typeof TodoUpdateItem>;

/**
 * Applies an update to a list. Replace mode needs `content` on every item
 * (status defaults to `pending`); merge mode updates existing ids field by
 * field and appends new ids (which need `content`).
 * @throws ToolError on duplicate ids, missing content, or more than one item in progress
 */
export function applyTodoUpdate(
  current: readonly TodoItem[],
  updates: readonly TodoUpdate[],
  merge: boolean,
): TodoItem[] {
  const seen = new Set<string>();
  for (const update of updates) {
    if (seen.has(update.id)) {
      throw new ToolError(
        'ERR_TOOL_TODO_DUPLICATE_ID',
        `The id ${JSON.stringify(update.id)} appears twice in todos. Give each item a distinct id.`,
      );
    }
    seen.add(update.id);
  }
  const next: TodoItem[] = merge ? current.map((item) => ({ ...item })) : [];
  for (const update of updates) {
    const existing = merge ? next.find((item) => item.id === update.id) : undefined;
    if (existing !== undefined) {
      if (update.content !== undefined) existing.content = update.content;
      if (update.status !== undefined) existing.status = update.status;
      continue;
    }
    if (update.content === undefined) {
      throw new ToolError(
        'ERR_TOOL_TODO_INCOMPLETE_ITEM',
        merge
          ? `The item ${JSON.stringify(update.id)} is not in the list yet, so it needs a content. Give its content, or use an existing id.`
          : `The item ${JSON.stringify(update.id)} has no content. Without merge the list is replaced, so every item needs id and content.`,
      );
    }
    next.push({ id: update.id, content: update.content, status: update.status ?? 'pending' });
  }
  if (next.length > TODO_MAX_ITEMS) {
    throw new ToolError(
      'ERR_TOOL_TODO_TOO_MANY',
      `The list would hold ${next.length} items; at most ${TODO_MAX_ITEMS} are allowed. Drop or combine items.`,
    );
  }
  const active = next.filter((item) => item.status === 'in_progress');
  if (active.length > 1) {
    throw new ToolError(
      'ERR_TOOL_TODO_MULTIPLE_IN_PROGRESS',
      `At most one item may be in_progress, but ${active.length} would be (ids ${active.map((item) => JSON.stringify(item.id)).join(', ')}). Mark the finished one completed (or the others pending) in the same call. The list was not changed.`,
    );
  }
  return next;
}

/**
 * Makes `todo` for a run: reads and writes the run's todo store, emits
 * `todo.updated` after every change, returns the list.
 */
export function createTodoTool(environment: ToolEnvironment): Tool {
  const { ctx } = environment;
  return defineTool(todoSchema, async (args) => {
    if (args.todos === undefined) return { ok: true, content: formatTodoList(ctx.todos.get()) };
    const next = applyTodoUpdate(ctx.todos.get(), args.todos, args.merge ?? false);
    ctx.todos.set(next);
    try {
      ctx.emit({ type: 'todo.updated', data: { todos: next.map((item) => ({ ...item })) } });
    } catch (error) {
      environment.logger.warn({ err: error, runId: ctx.runId }, 'todo.updated could not be emitted');
    }
    return { ok: true, content: formatTodoList(next) };
  });
}
