/**
 * The figures of `tether eval`, computed from run events alone (docs/eval.md).
 *
 * `foldRun` reads one run's events, in log order, into a task outcome;
 * `summarise` adds the outcomes up into ratios; `figures` lists the ratios in
 * a fixed order with the direction the design wants each to go; and
 * `compareResults` pairs each figure with a previous result's. All pure: the
 * command (`eval-command.ts`) does the I/O.
 *
 * Definitions (each one a line of docs/eval.md):
 * - todo: the run made a `tool.call` named `todo`.
 * - clarify: the run made a `tool.call` named `clarify`, or logged `clarify.requested`.
 * - promise without action: the run completed, and its final assistant turn
 *   (a `message` event with no tool calls) matches {@link PROMISE_PATTERNS}
 *   once the phrases of {@link PROMISE_EXCEPTIONS} are taken out.
 * - an edit of an existing file: a `tool.call` of `patch` or `write_file`
 *   whose `path` argument (relative, `./` and `/` at its start ignored) names
 *   a fixture file, or a file an earlier `write_file` call of the run created.
 * - compacted: the run logged `context.compacted` (counted per event).
 * - a result: the run's `run.completed` event carries `result`.
 */
import type { OutputSpec, RunEvent } from '@tether/protocol';

export const EVAL_KINDS = ['single', 'multi', 'ambiguous', 'edit', 'long', 'structured'] as const;
/**
 * single: one action; multi: several steps or files; ambiguous: needs a question; edit: one change
 * to an existing file; long: reads more than a model's context window holds, so it needs
 * compaction to finish; structured: ends through `submit_result` with a result of a schema.
 */
export type EvalKind = (typeof EVAL_KINDS)[number];

export interface EvalTask {
  id: string;
  kind: EvalKind;
  input: string;
  /** The run body's `output` (kind `structured` only). */
  output?: OutputSpec;
  /** The run's `limits.maxSteps`, in place of `--max-steps` (a task that needs many turns). */
  maxSteps?: number;
}

/** How a task's run ended: its terminal event, or `error` when it was never submitted or never ended. */
export type OutcomeStatus = 'completed' | 'failed' | 'cancelled' | 'error';

/** What one task's run did, as its events tell it. */
export interface TaskOutcome {
  id: string;
  kind: EvalKind;
  runId: string | null;
  status: OutcomeStatus;
  /** Why the task has no figures (status `error`), or the run's error (status `failed`). */
  error?: string;
  /** Model turns (`message` events). */
  turns: number;
  /** `tool.call` events. */
  toolCalls: number;
  todo: boolean;
  clarify: boolean;
  promiseWithoutAction: boolean;
  /** `patch` calls on existing files. */
  patchEdits: number;
  /** `write_file` calls on existing files. */
  writeFileEdits: number;
  /** `context.compacted` events. */
  compacted: number;
  /** `submit_result` calls, valid or not. */
  submitAttempts: number;
  /** The run completed with a `result` (a run with `output`). */
  result: boolean;
}

/** `count` of `total`, and their ratio (null when `total` is 0). */
export interface Ratio {
  count: number;
  total: number;
  rate: number | null;
}

export interface EvalMetrics {
  runs: { total: number; completed: number; failed: number; cancelled: number; error: number };
  /** Runs that used `todo`: multi-step tasks, and single-step ones (kinds `single` and `edit`). */
  todo: { multi: Ratio; single: Ratio };
  /** Runs that asked: ambiguous tasks, and clear ones (every other kind). */
  clarify: { ambiguous: Ratio; clear: Ratio };
  /** `patch` calls of all edits of existing files (`patch` and `write_file`), over every task. */
  patchShare: Ratio;
  /** Completed runs whose final turn promised an action and made no tool call (kind `structured` left out). */
  promiseWithoutAction: Ratio;
  /** Runs of `long` tasks that completed, and those that compacted their transcript at least once. */
  long: { completed: Ratio; compacted: Ratio };
  /** Runs of `structured` tasks that completed with a result. */
  structured: { valid: Ratio };
}

/**
 * A promise of action: English and Chinese phrases of a turn that says what it
 * is about to do (the design's enforcement rule: "when you say 'let me check',
 * call the tool in the same reply").
 */
export const PROMISE_PATTERNS: readonly RegExp[] = [
  /\blet me\b/i,
  /\bI(?:'ll| will| shall)\b/i,
  /\bI(?:'m| am) (?:now )?(?:going|about) to\b/i,
  /\bnext,? I\b/i,
  /我来|让我|我将|我会|接下来我|下一步/,
];

/** Phrases taken out before matching: politeness, not a promise of action. */
export const PROMISE_EXCEPTIONS: readonly RegExp[] = [/\blet me know\b/gi, /如有|如果需要/g];

/** True when `content` promises an action (see {@link PROMISE_PATTERNS}). */
export function promisesAction(content: string): boolean {
  let text = content;
  for (const exception of PROMISE_EXCEPTIONS) text = text.replace(exception, ' ');
  return PROMISE_PATTERNS.some((pattern) => pattern.test(text));
}

/** `path` as the fixture's keys spell it: `./` and `/` at its start dropped, `\` as `/`. */
export function normalisePath(path: string): string {
  return path
    .replaceAll('\\', '/')
    .replace(/^(?:\.?\/)+/, '')
    .replace(/\/{2,}/g, '/');
}

/**
 * One run's outcome from its events (in log order). `existing`: the paths of
 * the files the run was given.
 */
export function foldRun(
  task: EvalTask,
  events: readonly RunEvent[],
  existing: Iterable<string>,
): TaskOutcome {
  const files = new Set([...existing].map(normalisePath));
  const outcome: TaskOutcome = {
    id: task.id,
    kind: task.kind,
    runId: events[0]?.runId ?? null,
    status: 'error',
    turns: 0,
    toolCalls: 0,
    todo: false,
    clarify: false,
    promiseWithoutAction: false,
    patchEdits: 0,
    writeFileEdits: 0,
    compacted: 0,
    submitAttempts: 0,
    result: false,
  };
  let finalTurn: string | undefined;
  for (const event of events) {
    switch (event.type) {
      case 'message':
        outcome.turns++;
        finalTurn = event.data.toolCalls.length === 0 ? event.data.content : undefined;
        break;
      case 'tool.call': {
        outcome.toolCalls++;
        const { name } = event.data;
        if (name === 'todo') outcome.todo = true;
        if (name === 'clarify') outcome.clarify = true;
        if (name === 'submit_result') outcome.submitAttempts++;
        if (name === 'patch' || name === 'write_file') {
          const path = pathArgument(event.data.arguments);
          if (path === undefined) break;
          if (files.has(path)) {
            if (name === 'patch') outcome.patchEdits++;
            else outcome.writeFileEdits++;
          } else if (name === 'write_file') {
            files.add(path);
          }
        }
        break;
      }
      case 'clarify.requested':
        outcome.clarify = true;
        break;
      case 'context.compacted':
        outcome.compacted++;
        break;
      case 'run.completed':
        outcome.status = 'completed';
        outcome.result = event.data.result !== undefined;
        break;
      case 'run.failed':
        outcome.status = 'failed';
        outcome.error = `${event.data.error.code}: ${event.data.error.message}`;
        break;
      case 'run.cancelled':
        outcome.status = 'cancelled';
        break;
      default:
        break;
    }
  }
  if (outcome.status === 'error') outcome.error = 'the run did not end';
  outcome.promiseWithoutAction =
    outcome.status === 'completed' && finalTurn !== undefined && promisesAction(finalTurn);
  return outcome;
}

function pathArgument(args: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'path' in parsed &&
      typeof parsed.path === 'string'
    ) {
      return normalisePath(parsed.path);
    }
  } catch {
    // Malformed arguments: the tool refused them, nothing was edited.
  }
  return undefined;
}

/** `count` of `total`. */
export function ratio(count: number, total: number): Ratio {
  return { count, total, rate: total === 0 ? null : count / total };
}

/**
 * The figures over every outcome. Tasks with status `error` (never submitted,
 * or never ended) count in `runs` only.
 */
export function summarise(outcomes: readonly TaskOutcome[]): EvalMetrics {
  const ran = outcomes.filter((o) => o.status !== 'error');
  const of = (kinds: readonly EvalKind[]) => ran.filter((o) => kinds.includes(o.kind));
  const count = (list: readonly TaskOutcome[], test: (o: TaskOutcome) => boolean) =>
    ratio(list.filter(test).length, list.length);
  const completed = ran.filter((o) => o.status === 'completed');
  const patch = ran.reduce((sum, o) => sum + o.patchEdits, 0);
  const writeFile = ran.reduce((sum, o) => sum + o.writeFileEdits, 0);
  return {
    runs: {
      total: outcomes.length,
      completed: completed.length,
      failed: ran.filter((o) => o.status === 'failed').length,
      cancelled: ran.filter((o) => o.status === 'cancelled').length,
      error: outcomes.length - ran.length,
    },
    todo: {
      multi: count(of(['multi']), (o) => o.todo),
      single: count(of(['single', 'edit']), (o) => o.todo),
    },
    clarify: {
      ambiguous: count(of(['ambiguous']), (o) => o.clarify),
      clear: count(of(['single', 'multi', 'edit']), (o) => o.clarify),
    },
    patchShare: ratio(patch, patch + writeFile),
    // A structured run ends through a submit_result call, never a plain turn: it cannot promise.
    promiseWithoutAction: count(
      completed.filter((o) => o.kind !== 'structured'),
      (o) => o.promiseWithoutAction,
    ),
    long: {
      completed: count(of(['long']), (o) => o.status === 'completed'),
      compacted: count(of(['long']), (o) => o.compacted > 0),
    },
    structured: { valid: count(of(['structured']), (o) => o.status === 'completed' && o.result) },
  };
}

/** One line of the figures table: which way the design wants it to go. */
export interface Figure {
  key: string;
  label: string;
  goal: 'high' | 'low';
  value: Ratio;
}

/**
 * The figures added after result files were first written: an older file has none of them, and
 * they compare as null with it (`--compare` still reads it).
 */
export const LATER_FIGURES: ReadonlySet<string> = new Set([
  'long.completed',
  'long.compacted',
  'structured.valid',
]);

/** The figures, in the table's order. */
export function figures(metrics: EvalMetrics): Figure[] {
  return [
    { key: 'todo.multi', label: 'todo on multi-step tasks', goal: 'high', value: metrics.todo.multi },
    { key: 'todo.single', label: 'todo on single-step tasks', goal: 'low', value: metrics.todo.single },
    {
      key: 'clarify.ambiguous',
      label: 'clarify on ambiguous tasks',
      goal: 'high',
      value: metrics.clarify.ambiguous,
    },
    { key: 'clarify.clear', label: 'clarify on clear tasks', goal: 'low', value: metrics.clarify.clear },
    {
      key: 'patchShare',
      label: 'patch, of edits of existing files',
      goal: 'high',
      value: metrics.patchShare,
    },
    {
      key: 'promiseWithoutAction',
      label: 'final turn promises, calls no tool',
      goal: 'low',
      value: metrics.promiseWithoutAction,
    },
    { key: 'long.completed', label: 'long tasks completed', goal: 'high', value: metrics.long.completed },
    {
      key: 'long.compacted',
      label: 'long tasks that compacted',
      goal: 'high',
      value: metrics.long.compacted,
    },
    {
      key: 'structured.valid',
      label: 'structured tasks with a valid result',
      goal: 'high',
      value: metrics.structured.valid,
    },
  ];
}

/** What is at `key` (`todo.multi`) in a metrics object read from a file: undefined when nothing is. */
export function valueAt(metrics: unknown, key: string): unknown {
  return key
    .split('.')
    .reduce<unknown>((found, part) => (isObject(found) ? found[part] : undefined), metrics);
}

/** The ratio at `key` of a metrics object read from a file, if there is one. */
export function ratioAt(metrics: unknown, key: string): Ratio | undefined {
  const value = valueAt(metrics, key);
  return isRatio(value) ? value : undefined;
}

/** `value` is a {@link Ratio}: numbers `count` and `total`, and `rate` a number or null. */
export function isRatio(value: unknown): value is Ratio {
  return (
    isObject(value) &&
    typeof value.count === 'number' &&
    typeof value.total === 'number' &&
    (value.rate === null || typeof value.rate === 'number')
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** A figure beside a previous result's: `delta` is the difference of the rates (null when either has none). */
export interface FigureDelta extends Figure {
  previous: Ratio | null;
  delta: number | null;
  /** The change goes the way the design wants (null when there is no change or nothing to compare). */
  better: boolean | null;
}

/**
 * Each figure of `current` beside the same figure of `previous`, a result's metrics as read from
 * its file: a figure it lacks (one of {@link LATER_FIGURES}, in an older file) compares as null.
 */
export function compareMetrics(current: EvalMetrics, previous: Partial<EvalMetrics>): FigureDelta[] {
  return figures(current).map((figure) => {
    const old = ratioAt(previous, figure.key) ?? null;
    const delta =
      old === null || old.rate === null || figure.value.rate === null ? null : figure.value.rate - old.rate;
    const better = delta === null || delta === 0 ? null : figure.goal === 'high' ? delta > 0 : delta < 0;
    return { ...figure, previous: old, delta, better };
  });
}
