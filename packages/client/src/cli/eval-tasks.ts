import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type OutputSpec, RUN_LIMITS } from '@tether/protocol';
import { collectFiles } from './collect-files.js';
import { EVAL_KINDS, type EvalKind, type EvalTask } from './eval-metrics.js';
import { UsageError } from './exit-codes.js';

/** The built-in task set, shipped in the package (`eval/` beside `dist/`; the same from `src/`). */
export const BUILT_IN_TASKS = fileURLToPath(new URL('../../eval/tasks.json', import.meta.url));

/** A task set: its tasks, and the fixture workspace each run is given. */
export interface TaskSet {
  tasks: EvalTask[];
  /** Relative path → content: the fixture's files. */
  files: Record<string, string>;
}

/**
 * Reads a task set file: `{ "version": 1, "fixture": "<dir, relative to the
 * file>", "tasks": [{ "id", "kind", "input", "output"?, "maxSteps"? }] }`, with
 * its fixture's files. Throws a `UsageError` naming what is wrong.
 */
export async function loadTaskSet(path: string = BUILT_IN_TASKS): Promise<TaskSet> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const why = error instanceof SyntaxError ? 'not valid JSON' : 'cannot read the file';
    throw new UsageError(`task set ${path}: ${why}`);
  }
  const tasks = parseTasks(parsed, path);
  const fixture = (parsed as { fixture: string }).fixture;
  const { files } = await collectFiles(resolve(dirname(path), fixture), {
    flag: `task set ${path}: fixture`,
  });
  return { tasks, files };
}

/**
 * Checks a parsed task set, naming the field that is wrong. `output` (the run
 * body's, `{ schema, maxAttempts? }`) belongs to kind `structured` and is
 * required there: a structured task without it measures nothing, and another
 * kind with it would be a structured task in disguise. `maxSteps` may go with
 * any kind.
 */
export function parseTasks(value: unknown, source: string): EvalTask[] {
  const fail = (what: string) => new UsageError(`task set ${source}: ${what}`);
  if (!isRecord(value)) throw fail('must be a JSON object');
  if (value.version !== 1) throw fail('version must be 1');
  if (typeof value.fixture !== 'string' || value.fixture === '') throw fail('fixture must name a directory');
  if (!Array.isArray(value.tasks) || value.tasks.length === 0) throw fail('tasks must be a non-empty array');
  const seen = new Set<string>();
  return value.tasks.map((task: unknown, index: number): EvalTask => {
    const at = `tasks[${index}]`;
    if (!isRecord(task)) throw fail(`${at} must be an object`);
    const { id, kind, input, output, maxSteps } = task;
    if (typeof id !== 'string' || !/^[a-z0-9-]{1,64}$/.test(id)) {
      throw fail(`${at}.id must be 1 to 64 of a-z, 0-9 and -`);
    }
    if (seen.has(id)) throw fail(`${at}.id "${id}" is used twice`);
    seen.add(id);
    if (!(EVAL_KINDS as readonly unknown[]).includes(kind)) {
      throw fail(`${at}.kind must be one of ${EVAL_KINDS.join(', ')}`);
    }
    if (typeof input !== 'string' || input.trim() === '')
      throw fail(`${at}.input must be a non-empty string`);
    const extra = Object.keys(task).filter((key) => !TASK_FIELDS.includes(key));
    if (extra.length > 0) throw fail(`${at}.${extra[0]} is not a known field`);
    if (output === undefined && kind === 'structured')
      throw fail(`${at}.output is required for kind structured`);
    if (output !== undefined && kind !== 'structured') {
      throw fail(`${at}.output is only for kind structured (this task's kind is ${kind})`);
    }
    if (maxSteps !== undefined && !integerIn(maxSteps, 1, RUN_LIMITS.maxStepsMax)) {
      throw fail(`${at}.maxSteps must be an integer from 1 to ${RUN_LIMITS.maxStepsMax}`);
    }
    return {
      id,
      kind: kind as EvalKind,
      input,
      ...(output === undefined ? {} : { output: parseOutput(output, `${at}.output`, fail) }),
      ...(maxSteps === undefined ? {} : { maxSteps }),
    };
  });
}

const TASK_FIELDS = ['id', 'kind', 'input', 'output', 'maxSteps'];

/**
 * A task's `output`: an object with an object `schema` whose `type` is
 * "object" (the API checks the rest at submit) and an optional `maxAttempts`.
 */
function parseOutput(value: unknown, at: string, fail: (what: string) => UsageError): OutputSpec {
  if (!isRecord(value)) throw fail(`${at} must be an object: { schema, maxAttempts? }`);
  const extra = Object.keys(value).find((key) => key !== 'schema' && key !== 'maxAttempts');
  if (extra !== undefined) throw fail(`${at}.${extra} is not a known field`);
  const { schema, maxAttempts } = value;
  if (!isRecord(schema) || schema.type !== 'object') {
    throw fail(`${at}.schema must be a JSON Schema object whose type is "object"`);
  }
  if (maxAttempts === undefined) return { schema };
  if (!integerIn(maxAttempts, 1, RUN_LIMITS.outputMaxAttemptsMax)) {
    throw fail(`${at}.maxAttempts must be an integer from 1 to ${RUN_LIMITS.outputMaxAttemptsMax}`);
  }
  return { schema, maxAttempts };
}

function integerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/**
 * The tasks `--tasks` picks: a comma-separated list of task ids, kinds
 * ({@link EVAL_KINDS}) and id prefixes ending in `*`.
 * Throws a `UsageError` for an entry that picks nothing.
 */
export function filterTasks(tasks: readonly EvalTask[], filter: string | undefined): EvalTask[] {
  if (filter === undefined) return [...tasks];
  const entries = filter
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new UsageError('--tasks must name at least one task id, kind or prefix*');
  const picks = (entry: string, task: EvalTask) =>
    entry.endsWith('*') ? task.id.startsWith(entry.slice(0, -1)) : task.id === entry || task.kind === entry;
  for (const entry of entries) {
    if (!tasks.some((task) => picks(entry, task))) {
      throw new UsageError(
        `--tasks ${entry}: no task has that id or kind (kinds: ${EVAL_KINDS.join(', ')}; a prefix ends in *)`,
      );
    }
  }
  return tasks.filter((task) => entries.some((entry) => picks(entry, task)));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
