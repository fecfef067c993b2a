import { describe, expect, it } from 'vitest';
import { argsView } from './tool-args.js';

const view = (name: string, args: unknown) => argsView(name, JSON.stringify(args));

describe("a tool call's arguments as what they are", () => {
  it('draws a command, files, a checklist, a question and the tasks of a delegation', () => {
    expect(view('bash', { command: 'npm test', timeout: 60 })).toEqual({
      kind: 'command',
      command: 'npm test',
      timeout: 60,
    });
    expect(view('read_file', { path: 'src/a.ts', offset: 10, limit: 5 })).toEqual({
      kind: 'file',
      verb: 'Read',
      path: 'src/a.ts',
      note: 'lines 10 to 14',
    });
    expect(view('write_file', { path: 'out.md', content: 'hello' })).toEqual({
      kind: 'file',
      verb: 'Write',
      path: 'out.md',
      content: 'hello',
      note: '5 characters',
    });
    expect(view('list_dir', {})).toEqual({ kind: 'file', verb: 'List', path: '.' });
    expect(view('todo', { todos: [{ id: '1', content: 'Read', status: 'completed' }], merge: true })).toEqual(
      {
        kind: 'todos',
        todos: [{ id: '1', content: 'Read', status: 'completed' }],
        merge: true,
      },
    );
    expect(view('todo', { id: '2', status: 'in_progress' })).toEqual({
      kind: 'todos',
      todos: [{ id: '2', content: '(item 2)', status: 'in_progress' }],
      merge: false,
    });
    expect(view('clarify', { question: 'Which?', choices: ['a', 1, 'b'] })).toEqual({
      kind: 'question',
      question: 'Which?',
      choices: ['a', 'b'],
    });
    expect(
      view('delegate_parallel', { tasks: [{ goal: 'one' }, { goal: 'two', context: 'c' }, {}] }),
    ).toEqual({
      kind: 'tasks',
      tasks: [{ goal: 'one' }, { goal: 'two', context: 'c' }],
    });
    expect(view('escalate', { reason: 'blocked' })).toEqual({
      kind: 'text',
      label: 'Reason',
      text: 'blocked',
    });
  });

  it('falls back to the arguments as written when they are not what the tool takes', () => {
    expect(argsView('bash', 'not json')).toEqual({ kind: 'json', text: 'not json' });
    expect(view('bash', { cmd: 'ls' })).toEqual({ kind: 'json', text: '{\n  "cmd": "ls"\n}' });
    expect(view('read_file', ['a'])).toEqual({ kind: 'json', text: '[\n  "a"\n]' });
    expect(view('github__create_issue', { title: 't' })).toEqual({
      kind: 'json',
      text: '{\n  "title": "t"\n}',
    });
  });
});
