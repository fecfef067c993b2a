import { readFile, writeFile } from 'node:fs/promises';
import type { CreateRunBody, RunEvent } from '@tether/protocol';
import type { Command } from 'commander';
import type { TetherClient } from '../client.js';
import { TetherApiError } from '../errors.js';
import type { CommandContext } from './command-context.js';
import {
  compareMetrics,
  EVAL_KINDS,
  type EvalMetrics,
  type EvalTask,
  type FigureDelta,
  figures,
  foldRun,
  isRatio,
  LATER_FIGURES,
  summarise,
  type TaskOutcome,
  valueAt,
} from './eval-metrics.js';
import { filterTasks, loadTaskSet } from './eval-tasks.js';
import { EXIT, type ExitCode, UsageError } from './exit-codes.js';
import type { Colors } from './io.js';
import { ensureModel, type ModelCommand } from './model-check.js';
import { runSettings } from './run-command.js';

/** The answer every clarify question of an eval run gets, at once. */
export const EVAL_CLARIFY_ANSWER = 'Use your judgement: choose the most reasonable reading and go ahead.';

/** The toolsets of every eval run: those whose use the figures measure. */
export const EVAL_TOOLSETS = ['base', 'planning', 'interaction'] as const;

export interface EvalCommandOptions {
  model?: string;
  locale?: string;
  tasks?: string;
  /** A task set file of the user's own (default: the built-in one). */
  taskSet?: string;
  concurrency?: string;
  maxSteps?: string;
  json?: boolean;
  compare?: string;
  out?: string;
}

/** `tether eval` for the model check: it offers --model, and no replay (its figures measure a real model). */
const EVAL: ModelCommand = { command: 'tether eval', flags: { model: true, replay: false } };

/** A result file (`--json`, `--out`), which `--compare` reads back. */
export interface EvalResult {
  kind: 'tether.eval';
  version: 1;
  /** When the eval started (ISO 8601). */
  at: string;
  /** The profile named by `--model`, or null for the server's default. */
  model: string | null;
  tasks: TaskOutcome[];
  metrics: EvalMetrics;
  /** With `--compare`: each figure beside the previous result's. */
  comparison?: FigureDelta[];
}

export interface RunEvalOptions {
  client: TetherClient;
  tasks: readonly EvalTask[];
  files: Record<string, string>;
  /** The run body's model, locale and limits (a task's `maxSteps` wins over `limits.maxSteps`). */
  settings: Pick<CreateRunBody, 'model' | 'locale' | 'limits'>;
  concurrency: number;
  signal?: AbortSignal | undefined;
  /** Told each outcome as its run ends. */
  onOutcome?: (outcome: TaskOutcome) => void;
}

/**
 * Runs each task through the API (`concurrency` at a time), each with the
 * fixture's files (and the task's `output` and `maxSteps`), answering every clarify question with
 * {@link EVAL_CLARIFY_ANSWER}, and folds each run's events into its outcome,
 * in the tasks' order. A submit the API refuses stops the eval (every task
 * would be refused alike); a stream that breaks gives that task status
 * `error`. When stopped, the runs still going are cancelled.
 */
export async function runEval(options: RunEvalOptions): Promise<TaskOutcome[]> {
  const { client, tasks, files, settings } = options;
  // Aborted by the caller's signal, or by the first lane that fails: every lane stops.
  const stop = new AbortController();
  const signal = stop.signal;
  const forward = () => stop.abort(options.signal?.reason);
  if (options.signal?.aborted) forward();
  options.signal?.addEventListener('abort', forward, { once: true });
  const live = new Set<string>();
  const outcomes: TaskOutcome[] = new Array(tasks.length);
  const paths = Object.keys(files);
  let next = 0;

  async function runTask(task: EvalTask): Promise<TaskOutcome> {
    const body: CreateRunBody = {
      input: task.input,
      ...settings,
      // A task that needs many turns (kind long) sets its own limit.
      ...(task.maxSteps === undefined ? {} : { limits: { ...settings.limits, maxSteps: task.maxSteps } }),
      ...(task.output === undefined ? {} : { output: task.output }),
      toolsets: [...EVAL_TOOLSETS],
      files,
      metadata: { evalTask: task.id },
    };
    const { id } = await client.submit(body, { idempotencyKey: globalThis.crypto.randomUUID(), signal });
    live.add(id);
    const events: RunEvent[] = [];
    try {
      for await (const event of client.stream(id, { signal })) {
        events.push(event);
        if (event.type === 'clarify.requested') {
          await client
            .answer(id, event.data.requestId, EVAL_CLARIFY_ANSWER, { signal })
            .catch((error: unknown) => {
              // Answered or timed out meanwhile: the events tell which.
              if (!(error instanceof TetherApiError)) throw error;
            });
        }
      }
    } catch (error) {
      if (signal.aborted) throw error;
      // Nobody follows it any more: it would only cost.
      await client.cancel(id).catch(() => undefined);
      live.delete(id);
      const outcome = foldRun(task, events, paths);
      return {
        ...outcome,
        runId: id,
        status: 'error',
        error: `its events could not be read: ${message(error)}`,
      };
    }
    live.delete(id);
    return { ...foldRun(task, events, paths), runId: id };
  }

  let failure: { error: unknown } | undefined;
  async function lane(): Promise<void> {
    while (next < tasks.length && !signal.aborted) {
      const index = next++;
      try {
        outcomes[index] = await runTask(tasks[index] as EvalTask);
      } catch (error) {
        if (!signal.aborted) {
          failure = { error };
          stop.abort(error);
        }
        return;
      }
      options.onOutcome?.(outcomes[index] as TaskOutcome);
    }
  }

  try {
    await Promise.all(Array.from({ length: Math.min(options.concurrency, tasks.length) }, () => lane()));
  } finally {
    options.signal?.removeEventListener('abort', forward);
  }
  if (signal.aborted) {
    // Best effort: an eval run nobody follows is only cost.
    await Promise.allSettled([...live].map((id) => client.cancel(id)));
    throw failure ? failure.error : signal.reason;
  }
  return outcomes;
}

/**
 * `tether eval`: runs the built-in task set (or the `--tasks` it picks)
 * through the API and prints the discipline figures (docs/eval.md), as a
 * table or `--json`, beside a previous result with `--compare`. Exit 0 when
 * every task's run ended, 1 when some could not be run or read, or when the
 * server has no model for them (asked before any task starts).
 */
export async function evalCommand(options: EvalCommandOptions, ctx: CommandContext): Promise<ExitCode> {
  const { io, colors: c } = ctx;
  const concurrency = integerOption(options.concurrency, '--concurrency', 2, 1, 16);
  const maxSteps = integerOption(options.maxSteps, '--max-steps', 20, 1, 100);
  const previous = options.compare === undefined ? undefined : await readResult(options.compare);
  const { model, locale } = await runSettings({
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(options.locale === undefined ? {} : { locale: options.locale }),
  });
  const set = await loadTaskSet(options.taskSet);
  const tasks = filterTasks(set.tasks, options.tasks);
  const json = options.json === true;
  const at = new Date(ctx.now?.() ?? Date.now()).toISOString();
  if (!(await ensureModel(ctx, { profile: options.model }, EVAL))) return EXIT.failed;

  if (!json) {
    io.stdout.write(
      `${c.bold(`Evaluating ${tasks.length} tasks`)} ${c.dim(`on ${options.model ? `profile ${options.model}` : "the server's default profile"}, ${concurrency} at a time`)}\n`,
    );
  }
  let done = 0;
  const outcomes = await runEval({
    client: ctx.client,
    tasks,
    files: set.files,
    settings: { ...(model ? { model } : {}), ...(locale ? { locale } : {}), limits: { maxSteps } },
    concurrency,
    signal: io.signal,
    onOutcome: (outcome) => {
      done++;
      if (!json) io.stdout.write(`${c.dim(`[${done}/${tasks.length}]`)} ${outcomeLine(outcome, c)}\n`);
    },
  });

  const metrics = summarise(outcomes);
  const result: EvalResult = {
    kind: 'tether.eval',
    version: 1,
    at,
    model: options.model ?? null,
    tasks: outcomes,
    metrics,
    ...(previous ? { comparison: compareMetrics(metrics, previous.metrics) } : {}),
  };
  if (options.out !== undefined) await writeFile(options.out, `${JSON.stringify(result, null, 2)}\n`);
  if (json) {
    io.stdout.write(`${JSON.stringify(result)}\n`);
  } else {
    io.stdout.write(`\n${renderFigures(result, c)}`);
    if (previous) {
      const differ = sameTasks(previous.tasks, outcomes) ? '' : ' (over a different set of tasks)';
      io.stdout.write(c.dim(`Compared with ${options.compare}, from ${previous.at}${differ}.\n`));
    }
    if (options.out !== undefined) io.stdout.write(c.dim(`Saved to ${options.out}.\n`));
  }
  return metrics.runs.error > 0 ? EXIT.failed : EXIT.ok;
}

/** Registers `tether eval` on the program; `done` is told its exit code. */
export function registerEvalCommand(
  program: Command,
  context: () => CommandContext,
  done: (code: ExitCode) => void,
): void {
  program
    .command('eval')
    .description("measure the model's tool-use discipline on a built-in task set (docs/eval.md)")
    .option('--model <profile>', 'a model profile configured on the server (default: its default)')
    .option(
      '--tasks <filter>',
      `only these tasks: ids, kinds (${EVAL_KINDS.join(', ')}), prefix*, comma-separated`,
    )
    .option('--task-set <file>', 'a task set of your own instead of the built-in one (format: docs/eval.md)')
    .option('--concurrency <n>', 'runs at a time, 1 to 16 (default 2)')
    .option('--max-steps <n>', "each run's model turn limit, 1 to 100 (default 20), if its task sets none")
    .option('--locale <locale>', 'language of the runs: zh or en')
    .option('--json', 'print the result as JSON (the file --compare reads)')
    .option('--out <file>', 'also save the result as JSON to this file')
    .option('--compare <file>', 'a previous result (--json or --out): print each figure beside it')
    .action(async (options: EvalCommandOptions) => {
      done(await evalCommand(options, context()));
    });
}

function integerOption(value: string | undefined, flag: string, fallback: number, min: number, max: number) {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value.trim()) || parsed < min || parsed > max) {
    throw new UsageError(`${flag} must be an integer from ${min} to ${max} (got "${value}")`);
  }
  return parsed;
}

/**
 * A result read back for `--compare`. One written by an older version of the command lacks the
 * figures of {@link LATER_FIGURES} and the outcome fields added with them.
 */
export interface PreviousResult extends Omit<EvalResult, 'metrics' | 'tasks'> {
  metrics: Partial<EvalMetrics>;
  tasks: Array<Pick<TaskOutcome, 'id'> & Partial<TaskOutcome>>;
}

/** Reads a previous result for `--compare`. Throws a `UsageError` naming what is wrong. */
export async function readResult(path: string): Promise<PreviousResult> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new UsageError(
      `--compare ${path}: ${error instanceof SyntaxError ? 'not valid JSON' : 'cannot read the file'}`,
    );
  }
  const result = parsed as Partial<PreviousResult> | null;
  if (
    typeof result !== 'object' ||
    result === null ||
    result.kind !== 'tether.eval' ||
    result.version !== 1 ||
    typeof result.metrics !== 'object' ||
    !Array.isArray(result.tasks)
  ) {
    throw new UsageError(`--compare ${path}: not a tether eval result (version 1), as --json or --out write`);
  }
  // A figure added since the file was written is absent from it; one that is there must be a ratio.
  const missing = figureKeys.find(
    (key) =>
      !isRatio(valueAt(result.metrics, key)) &&
      !(LATER_FIGURES.has(key) && valueAt(result.metrics, key) === undefined),
  );
  if (missing !== undefined)
    throw new UsageError(`--compare ${path}: metrics.${missing} is missing or not a ratio`);
  return result as PreviousResult;
}

// The keys a result must have figures for: those of the table.
const figureKeys = figures(summarise([])).map((figure) => figure.key);

function sameTasks(a: readonly Pick<TaskOutcome, 'id'>[], b: readonly Pick<TaskOutcome, 'id'>[]): boolean {
  const ids = (list: readonly Pick<TaskOutcome, 'id'>[]) =>
    list
      .map((o) => o.id)
      .sort()
      .join(',');
  return ids(a) === ids(b);
}

/** One task's line: its id, status and what its run did. */
export function outcomeLine(outcome: TaskOutcome, c: Colors): string {
  const label = outcome.status.padEnd(9);
  const status =
    outcome.status === 'completed'
      ? c.green(label)
      : outcome.status === 'error'
        ? c.red(label)
        : c.yellow(label);
  const did = [
    `${outcome.turns} turns`,
    outcome.todo ? 'todo' : '',
    outcome.clarify ? 'clarify' : '',
    outcome.patchEdits > 0 ? `patch×${outcome.patchEdits}` : '',
    outcome.writeFileEdits > 0 ? `write_file×${outcome.writeFileEdits} (existing)` : '',
    outcome.promiseWithoutAction ? 'promised, no tool call' : '',
    outcome.compacted > 0 ? `compacted×${outcome.compacted}` : '',
    outcome.submitAttempts > 0 ? `submit_result×${outcome.submitAttempts}` : '',
    outcome.result ? 'result' : '',
  ].filter((part) => part !== '');
  const error = outcome.error ? c.dim(` ${outcome.error}`) : '';
  return `${outcome.id.padEnd(28)} ${outcome.kind.padEnd(10)} ${status} ${did.join(', ')}${error}`;
}

/** `83%`, or `–` when there is nothing to divide. */
export function percent(rate: number | null): string {
  return rate === null ? '–' : `${Math.round(rate * 100)}%`;
}

/** `+12 pp`, `-5 pp`, `±0 pp`, or `–`. */
export function points(delta: number | null): string {
  if (delta === null) return '–';
  const rounded = Math.round(delta * 100);
  return rounded === 0 ? '±0 pp' : `${rounded > 0 ? '+' : ''}${rounded} pp`;
}

/** The figures table, with the previous rates and their deltas when the result has a comparison. */
export function renderFigures(result: EvalResult, c: Colors): string {
  const { runs } = result.metrics;
  const lines = [
    c.bold(
      `${runs.total} tasks: ${runs.completed} completed, ${runs.failed} failed, ${runs.cancelled} cancelled${runs.error > 0 ? `, ${runs.error} not run` : ''}`,
    ),
  ];
  const compared = result.comparison;
  const header = ['figure'.padEnd(36), 'rate'.padStart(5), 'count'.padStart(7), 'goal'.padStart(5)];
  if (compared) header.push('before'.padStart(7), 'change'.padStart(8));
  lines.push(c.dim(header.join('  ')));
  const rows =
    compared ?? figures(result.metrics).map((f) => ({ ...f, previous: null, delta: null, better: null }));
  for (const row of rows) {
    const cells = [
      row.label.padEnd(36),
      percent(row.value.rate).padStart(5),
      `${row.value.count}/${row.value.total}`.padStart(7),
      row.goal.padStart(5),
    ];
    if (compared) {
      const change = points(row.delta).padStart(8);
      cells.push(
        percent(row.previous?.rate ?? null).padStart(7),
        row.better === true ? c.green(change) : row.better === false ? c.red(change) : change,
      );
    }
    lines.push(cells.join('  '));
  }
  return `${lines.join('\n')}\n`;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
