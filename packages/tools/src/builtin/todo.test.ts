import { Value } from '@sinclair/typebox/value';
import { TodoItemSchema } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

const updates = () => fx.events.filter((event) => event.type === 'todo.updated');

describe('todo', () => {
  it('replaces the list, stores it, emits todo.updated and returns it', async () => {
    const result = await invoke(fx.tool('todo'), {
      todos: [
        { id: '1', content: 'Read the code', status: 'completed' },
        { id: '2', content: 'Write the fix', status: 'in_progress' },
        { id: '3', content: 'Run the tests' },
      ],
    });
    expect(result).toEqual({
      ok: true,
      content: [
        'Todo list (1/3 completed):',
        '1. [x] Read the code (id: 1)',
        '2. [>] Write the fix (id: 2, in progress)',
        '3. [ ] Run the tests (id: 3)',
      ].join('\n'),
    });
    expect(fx.todos).toEqual([
      { id: '1', content: 'Read the code', status: 'completed' },
      { id: '2', content: 'Write the fix', status: 'in_progress' },
      { id: '3', content: 'Run the tests', status: 'pending' },
    ]);
    expect(updates()).toEqual([{ type: 'todo.updated', data: { todos: fx.todos } }]);
    for (const item of fx.todos) expect(Value.Check(TodoItemSchema, item)).toBe(true);
  });

  it('merges by id: updates the fields given, appends new ids, keeps the rest', async () => {
    fx.todos = [
      { id: 'a', content: 'First', status: 'in_progress' },
      { id: 'b', content: 'Second', status: 'pending' },
    ];
    const result = await invoke(fx.tool('todo'), {
      merge: true,
      todos: [
        { id: 'a', status: 'completed' },
        { id: 'b', status: 'in_progress' },
        { id: 'c', content: 'Third' },
      ],
    });
    expect(result.ok).toBe(true);
    expect(fx.todos).toEqual([
      { id: 'a', content: 'First', status: 'completed' },
      { id: 'b', content: 'Second', status: 'in_progress' },
      { id: 'c', content: 'Third', status: 'pending' },
    ]);
    expect(updates()).toHaveLength(1);
  });

  it('without merge, drops items not listed', async () => {
    fx.todos = [{ id: 'old', content: 'Old', status: 'pending' }];
    await invoke(fx.tool('todo'), { todos: [{ id: 'new', content: 'New' }] });
    expect(fx.todos).toEqual([{ id: 'new', content: 'New', status: 'pending' }]);
  });

  it('returns the current list without emitting when called without todos', async () => {
    fx.todos = [{ id: 'x', content: 'Cancelled thing', status: 'cancelled' }];
    expect(await invoke(fx.tool('todo'), {})).toEqual({
      ok: true,
      content: 'Todo list (0/1 completed):\n1. [-] Cancelled thing (id: x)',
    });
    expect(updates()).toEqual([]);
    fx.todos = [];
    expect((await invoke(fx.tool('todo'), {})).content).toBe('The todo list is empty.');
  });

  it('refuses more than one item in progress, changing nothing', async () => {
    fx.todos = [{ id: 'a', content: 'A', status: 'in_progress' }];
    const result = await invoke(fx.tool('todo'), {
      merge: true,
      todos: [{ id: 'b', content: 'B', status: 'in_progress' }],
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_TODO_MULTIPLE_IN_PROGRESS' });
    expect(result.content).toContain('"a", "b"');
    expect(fx.todos).toEqual([{ id: 'a', content: 'A', status: 'in_progress' }]);
    expect(updates()).toEqual([]);
  });

  it('refuses duplicate ids, items without content, and too many items', async () => {
    const tool = fx.tool('todo');
    expect(
      await invoke(tool, {
        todos: [
          { id: 'a', content: 'A' },
          { id: 'a', content: 'B' },
        ],
      }),
    ).toMatchObject({ ok: false, code: 'ERR_TOOL_TODO_DUPLICATE_ID' });
    expect(await invoke(tool, { todos: [{ id: 'a', status: 'pending' }] })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_TODO_INCOMPLETE_ITEM',
    });
    expect(await invoke(tool, { merge: true, todos: [{ id: 'new', status: 'pending' }] })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_TODO_INCOMPLETE_ITEM',
    });
    fx.todos = Array.from({ length: 100 }, (_, i) => ({
      id: `t${i}`,
      content: `Task ${i}`,
      status: 'pending' as const,
    }));
    expect(await invoke(tool, { merge: true, todos: [{ id: 'one-more', content: 'X' }] })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_TODO_TOO_MANY',
    });
    expect(fx.todos).toHaveLength(100);
    expect(updates()).toEqual([]);
  });

  it('validates statuses and sizes against the schema', async () => {
    const tool = fx.tool('todo');
    const bad = await invoke(tool, { todos: [{ id: 'a', content: 'A', status: 'done' }] });
    expect(bad).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    expect(bad.content).toContain(
      '`todos[0].status` must be "pending" | "in_progress" | "completed" | "cancelled"',
    );
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ id: `t${i}`, content: 'x' }));
    expect(await invoke(tool, { todos: tooMany })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
    });
    expect(await invoke(tool, { todos: [{ id: '', content: 'x' }] })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
    });
  });

  it('keeps working when the emitter throws, logging a warning', async () => {
    const tool = fx.tool('todo', {
      emit: () => {
        throw new Error('event log down');
      },
    });
    const result = await invoke(tool, { todos: [{ id: 'a', content: 'A' }] });
    expect(result.ok).toBe(true);
    expect(fx.todos).toHaveLength(1);
    expect(fx.warnings.map((w) => w.msg)).toEqual(['todo.updated could not be emitted']);
  });
});
