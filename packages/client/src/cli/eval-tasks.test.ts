import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVAL_KINDS } from './eval-metrics.js';
import { BUILT_IN_TASKS, filterTasks, loadTaskSet, parseTasks } from './eval-tasks.js';

describe('the built-in task set', () => {
  it('has at least 20 tasks, four of each discipline kind and some long and structured ones, over a fixture of text files', async () => {
    const { tasks, files } = await loadTaskSet();
    expect(tasks.length).toBeGreaterThanOrEqual(20);
    const least = { single: 4, multi: 4, ambiguous: 4, edit: 4, long: 1, structured: 2 };
    for (const kind of EVAL_KINDS) {
      expect(tasks.filter((task) => task.kind === kind).length, kind).toBeGreaterThanOrEqual(least[kind]);
    }
    expect(Object.keys(files).sort()).toEqual([
      'CHANGELOG.md',
      'README.md',
      'data/items.csv',
      'notes/todo.txt',
      'package.json',
      'src/config.json',
      'src/inventory.js',
      'src/logs.js',
      'src/report.js',
    ]);
  });

  it('gives each structured task an output schema of an object with required fields, and no other task one', async () => {
    const { tasks } = await loadTaskSet();
    for (const task of tasks) {
      if (task.kind !== 'structured') {
        expect(task.output, task.id).toBeUndefined();
        continue;
      }
      const schema = task.output?.schema as {
        type: string;
        required: string[];
        additionalProperties: boolean;
      };
      expect(schema, task.id).toMatchObject({ type: 'object', additionalProperties: false });
      expect(schema.required.length, task.id).toBeGreaterThan(0);
    }
    const inventory = tasks.find((task) => task.id === 'structured-inventory');
    expect(inventory?.output?.schema).toMatchObject({ required: ['name', 'version', 'items'] });
  });

  it('lets the long task take more turns than --max-steps gives (one read_file call a reply)', async () => {
    const { tasks } = await loadTaskSet();
    const long = tasks.filter((task) => task.kind === 'long');
    for (const task of long) {
      expect(task.maxSteps, task.id).toBeGreaterThanOrEqual(60);
      expect(task.input, task.id).toContain('node src/logs.js');
    }
    expect(tasks.filter((task) => task.kind !== 'long' && task.maxSteps !== undefined)).toEqual([]);
  });

  it('is shipped in the published package (its folder is in package.json files)', async () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { files: string[] };
    const folder = relative(root, dirname(BUILT_IN_TASKS)).split(/[\\/]/)[0];
    expect(folder).toBe('eval');
    expect(manifest.files).toContain(folder);
  });

  it('names, in each edit task, a fixture file that holds the text to change', async () => {
    const { tasks, files } = await loadTaskSet();
    for (const task of tasks.filter((t) => t.kind === 'edit')) {
      const named = Object.keys(files).filter((path) => task.input.includes(path));
      expect(named, task.id).toHaveLength(1);
    }
    expect(files['README.md']).toContain('invetory');
    expect(files['data/items.csv']).toContain('B-200,Bolt');
    expect(files['notes/todo.txt']).toContain('- add CSV export');
  });
});

describe('parseTasks', () => {
  const base = { version: 1, fixture: 'fixture' };
  it.each([
    [[], 'must be a JSON object'],
    [{ ...base, version: 2, tasks: [] }, 'version must be 1'],
    [{ ...base, tasks: [] }, 'tasks must be a non-empty array'],
    [{ ...base, tasks: [{ id: 'A b', kind: 'single', input: 'x' }] }, 'tasks[0].id must be'],
    [
      { ...base, tasks: [{ id: 'a', kind: 'hard', input: 'x' }] },
      'tasks[0].kind must be one of single, multi',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'edit', input: ' ' }] },
      'tasks[0].input must be a non-empty string',
    ],
    [
      {
        ...base,
        tasks: [
          { id: 'a', kind: 'edit', input: 'x' },
          { id: 'a', kind: 'edit', input: 'y' },
        ],
      },
      'tasks[1].id "a" is used twice',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'edit', input: 'x', edits: [] }] },
      'tasks[0].edits is not a known field',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'structured', input: 'x' }] },
      'tasks[0].output is required for kind structured',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'single', input: 'x', output: { schema: { type: 'object' } } }] },
      "tasks[0].output is only for kind structured (this task's kind is single)",
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'structured', input: 'x', output: [] }] },
      'tasks[0].output must be an object: { schema, maxAttempts? }',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'structured', input: 'x', output: { schema: 'object' } }] },
      'tasks[0].output.schema must be a JSON Schema object whose type is "object"',
    ],
    [
      {
        ...base,
        tasks: [{ id: 'a', kind: 'structured', input: 'x', output: { schema: { type: 'array' } } }],
      },
      'tasks[0].output.schema must be a JSON Schema object whose type is "object"',
    ],
    [
      {
        ...base,
        tasks: [
          { id: 'a', kind: 'structured', input: 'x', output: { schema: { type: 'object' }, tries: 2 } },
        ],
      },
      'tasks[0].output.tries is not a known field',
    ],
    [
      {
        ...base,
        tasks: [
          {
            id: 'a',
            kind: 'structured',
            input: 'x',
            output: { schema: { type: 'object' }, maxAttempts: 11 },
          },
        ],
      },
      'tasks[0].output.maxAttempts must be an integer from 1 to 10',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'long', input: 'x', maxSteps: 1.5 }] },
      'tasks[0].maxSteps must be an integer from 1 to 1000',
    ],
    [
      { ...base, tasks: [{ id: 'a', kind: 'long', input: 'x', maxSteps: 0 }] },
      'tasks[0].maxSteps must be an integer from 1 to 1000',
    ],
  ])('refuses %j: %s', (value, message) => {
    expect(() => parseTasks(value, 'set.json')).toThrow(`task set set.json: ${message}`);
  });

  it("keeps a structured task's output and a task's maxSteps as given", () => {
    const output = { schema: { type: 'object', required: ['n'] }, maxAttempts: 2 };
    const tasks = parseTasks(
      {
        ...base,
        tasks: [
          { id: 's', kind: 'structured', input: 'x', output },
          { id: 'l', kind: 'long', input: 'y', maxSteps: 80 },
        ],
      },
      'set.json',
    );
    expect(tasks).toEqual([
      { id: 's', kind: 'structured', input: 'x', output },
      { id: 'l', kind: 'long', input: 'y', maxSteps: 80 },
    ]);
  });

  it('reads a task set file of its own, with its fixture beside it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-eval-'));
    try {
      await writeFile(
        join(dir, 'set.json'),
        JSON.stringify({ version: 1, fixture: '.', tasks: [{ id: 'a', kind: 'single', input: 'hi' }] }),
      );
      const set = await loadTaskSet(join(dir, 'set.json'));
      expect(set.tasks).toEqual([{ id: 'a', kind: 'single', input: 'hi' }]);
      expect(Object.keys(set.files)).toEqual(['set.json']);
      await writeFile(join(dir, 'bad.json'), '{');
      await expect(loadTaskSet(join(dir, 'bad.json'))).rejects.toThrow('not valid JSON');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('filterTasks', () => {
  const tasks = [
    { id: 'single-a', kind: 'single' as const, input: 'a' },
    { id: 'multi-b', kind: 'multi' as const, input: 'b' },
    { id: 'edit-c', kind: 'edit' as const, input: 'c' },
    { id: 'edit-d', kind: 'edit' as const, input: 'd' },
    { id: 'long-e', kind: 'long' as const, input: 'e' },
    { id: 'structured-f', kind: 'structured' as const, input: 'f' },
  ];
  it('picks by id, kind and prefix*, in the set order', () => {
    expect(filterTasks(tasks, undefined)).toEqual(tasks);
    expect(filterTasks(tasks, 'structured,long').map((t) => t.id)).toEqual(['long-e', 'structured-f']);
    expect(filterTasks(tasks, 'edit-d, single').map((t) => t.id)).toEqual(['single-a', 'edit-d']);
    expect(filterTasks(tasks, 'mu*,edit').map((t) => t.id)).toEqual(['multi-b', 'edit-c', 'edit-d']);
  });
  it('refuses an entry that picks nothing, and an empty filter', () => {
    expect(() => filterTasks(tasks, 'edit,nope')).toThrow('--tasks nope: no task has that id or kind');
    expect(() => filterTasks(tasks, ' , ')).toThrow('--tasks must name at least one');
  });
});
