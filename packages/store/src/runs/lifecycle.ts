import { RUN_STATUSES, type RunEventType, type RunStatus, TERMINAL_STATUSES } from '@tether/protocol';

/**
 * The run lifecycle, defined once: the statuses, every step that changes a run
 * (each one Lua script in commands/, which appends the step's event in the
 * same step as the change), what BullMQ does with the job at each, and the
 * states of a question. docs/architecture.md shows {@link TRANSITIONS} as its
 * table (a test keeps the two equal), and a table-driven test runs every step
 * from every status against the scripts (packages/store/test/lifecycle.int.test.ts).
 *
 * Times: epoch milliseconds inside (Redis's clock in the scripts, the clarify
 * request's deadline, the job's delay); ISO 8601 only on the wire.
 */

/** The statuses a run can still leave. */
export const LIVE_STATUSES: readonly RunStatus[] = RUN_STATUSES.filter((status) => !isTerminal(status));

/** Whether a run in `status` has ended (it never leaves it). */
export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * A question's states. `pending` until the first answer (`answered`), its
 * deadline (`timed_out`, set by the worker that resumes the run), or the end
 * of its run (`cancelled`: derived, the request itself stays `pending`).
 */
export const QUESTION_STATES = ['pending', 'answered', 'timed_out', 'cancelled'] as const;
export type QuestionState = (typeof QUESTION_STATES)[number];

/** The state of a question from its request's stored status and its run's status. */
export function questionState(stored: 'pending' | 'answered' | 'timed_out', run: RunStatus): QuestionState {
  return stored === 'pending' && isTerminal(run) ? 'cancelled' : stored;
}

/** Who may take a step: any caller, or only the worker whose fencing token owns the run. */
export type Guard = 'any' | 'owner' | 'owner, no cancel requested';

/** One step of the lifecycle. */
export interface Transition {
  step: string;
  /** Who takes it. */
  by: 'API' | 'worker' | 'API or worker';
  /** The script that takes it (commands/<script>.lua). */
  script: string;
  /** The statuses it starts from (`new`: no run yet). */
  from: readonly RunStatus[] | 'new';
  guard: Guard;
  /** The status after it (`unchanged`: the step keeps it). */
  to: RunStatus | 'unchanged';
  /**
   * The event it appends last (the events emitted before it go first; one of these, by the
   * request's kind); none for a silent step.
   */
  event: RunEventType | readonly RunEventType[] | undefined;
  /** What becomes of the waitpoint's requests. */
  request?: string;
  /** What BullMQ does with the job. */
  job: string;
}

const LIVE = LIVE_STATUSES;
/** The live statuses a claim takes a run from: a `scheduled` run is queued at its time first (`start on time`). */
const CLAIMABLE: readonly RunStatus[] = LIVE.filter((status) => status !== 'scheduled');
/** A run that has not started may expire: never once it has (a retried or released run is queued again, started). */
const NOT_STARTED: readonly RunStatus[] = ['scheduled', 'queued'];
/** The owner's steps within an attempt: its claim made the run `running`, and nothing else changes that. */
const RUNNING: readonly RunStatus[] = ['running'];
/** A run with requests pending, asleep on them, or not (woken early, or handed back). */
const AWAKE_OR_WAITING: readonly RunStatus[] = ['queued', 'running', 'waiting_for_input'];

/** Every step, in the order a run meets them. */
export const TRANSITIONS: readonly Transition[] = [
  {
    step: 'submit',
    by: 'API',
    script: 'createRun',
    from: 'new',
    guard: 'any',
    to: 'queued',
    event: 'run.queued',
    job: 'added, waiting',
  },
  {
    step: 'schedule',
    by: 'API',
    script: 'createRun',
    from: 'new',
    guard: 'any',
    to: 'scheduled',
    event: 'run.scheduled',
    job: 'added, delayed until `runAt` (the job carries `scheduled`)',
  },
  {
    step: 'reschedule',
    by: 'API',
    script: 'rescheduleRun',
    from: ['scheduled'],
    guard: 'any',
    to: 'unchanged',
    event: 'run.scheduled',
    job: 'its delay changed to the new `runAt` (`changeDelay`); a job a worker holds then is delayed again by `start on time`',
  },
  {
    step: 'start on time',
    by: 'worker',
    script: 'dueRun',
    from: ['scheduled'],
    guard: 'any',
    to: 'queued',
    event: 'run.queued',
    job: "active, before the tenant's slot and the claim; a run whose `runAt` has not come (changed meanwhile) is unchanged and its job delayed until then",
  },
  {
    step: 'claim',
    by: 'worker',
    script: 'claimRun',
    from: CLAIMABLE,
    guard: 'any',
    to: 'running',
    event: 'attempt.started',
    job: "active (a run with a cancel requested is cancelled instead; `run.started` goes first the first time; a `scheduled` run is never claimed: its job is delayed until its `runAt`, then `start on time`; a run never started whose `expiresAt` has passed by Redis's clock is not started: `expire` ends it)",
  },
  {
    step: 'wait for the session',
    by: 'worker',
    script: 'claimRun',
    from: CLAIMABLE,
    guard: 'any',
    to: 'unchanged',
    event: undefined,
    job: "delayed for 60 s (a session's run with another of its runs ahead); promoted when that one ends",
  },
  {
    step: 'save a checkpoint',
    by: 'worker',
    script: 'saveCheckpoint',
    from: RUNNING,
    guard: 'owner, no cancel requested',
    to: 'unchanged',
    event: undefined,
    job: 'active',
  },
  {
    step: 'wait for input',
    by: 'worker',
    script: 'openWaitpoint',
    from: RUNNING,
    guard: 'owner, no cancel requested',
    to: 'waiting_for_input',
    event: ['clarify.requested', 'tool.requested', 'approval.requested'],
    request:
      "new waitpoint: a question, one request per client tool call of the model's turn, or one per call its approval policy holds",
    job: 'delayed until the deadline (`DelayedError`); promoted at once if every request was resolved, or a cancel asked for, meanwhile',
  },
  {
    step: 'sleep again (woken early)',
    by: 'worker',
    script: 'setStatus',
    from: RUNNING,
    guard: 'owner',
    to: 'waiting_for_input',
    event: undefined,
    request: 'pending',
    job: 'delayed until the deadline (`DelayedError`)',
  },
  {
    step: 'resolve a request',
    by: 'API',
    script: 'resolveRequest',
    from: AWAKE_OR_WAITING,
    guard: 'any',
    to: 'unchanged',
    event: ['clarify.answered', 'tool.output_received', 'approval.resolved'],
    request:
      'pending → answered, received or decided (before the deadline; others still wait, or the run was woken early, or handed back, and takes it up)',
    job: 'unchanged (its attempt looks again before it sleeps)',
  },
  {
    step: 'wake on the last request',
    by: 'API',
    script: 'resolveRequest',
    from: ['waiting_for_input'],
    guard: 'any',
    to: 'queued',
    event: ['clarify.answered', 'tool.output_received', 'approval.resolved'],
    request: 'pending → answered, received or decided (the last one pending, before the deadline)',
    job: 'promoted, waiting',
  },
  {
    step: 'expire a waitpoint',
    by: 'worker',
    script: 'expireWaitpoint',
    from: RUNNING,
    guard: 'owner',
    to: 'unchanged',
    event: ['clarify.timed_out', 'tool.timed_out', 'approval.resolved'],
    request:
      "pending → timed_out (each question, client tool call or approval still pending past the deadline; an approval takes its policy's `onTimeout`)",
    job: 'active',
  },
  {
    step: 'wait for children',
    by: 'worker',
    script: 'openWaitpoint',
    from: RUNNING,
    guard: 'owner, no cancel requested',
    to: 'waiting_for_children',
    event: 'child.started',
    request: 'new waitpoint: one request per child',
    job: "delayed until the children's deadline (`DelayedError`); promoted when the last child reports. The children (created just before, one `createRun` each) are queued after it",
  },
  {
    step: 'wait for children again (woken early)',
    by: 'worker',
    script: 'setStatus',
    from: RUNNING,
    guard: 'owner',
    to: 'waiting_for_children',
    event: undefined,
    request: 'pending',
    job: "delayed until the children's deadline (`DelayedError`)",
  },
  {
    step: 'report a child',
    by: 'API or worker',
    script: 'finalizeRun',
    from: LIVE,
    guard: 'any',
    to: 'unchanged',
    event: 'child.finished',
    request: "the parent's: pending → reported",
    job: "the parent's: promoted when the child was the last to report. The step that ends a child reports it to its parent (`resolveRequest` repairs a child that ended without reporting, or is gone)",
  },
  {
    step: 'retry',
    by: 'worker',
    script: 'retryRun',
    from: RUNNING,
    guard: 'owner',
    to: 'queued',
    event: 'run.retrying',
    job: 'delayed by the delay in the event (`RetryLater`)',
  },
  {
    step: 'release (shutdown)',
    by: 'worker',
    script: 'setStatus',
    from: RUNNING,
    guard: 'owner',
    to: 'queued',
    event: undefined,
    job: 'waiting, for another worker (`WaitingError`)',
  },
  {
    step: 'request a cancel',
    by: 'API',
    script: 'requestCancel',
    from: LIVE,
    guard: 'any',
    to: 'unchanged',
    event: undefined,
    job: 'unchanged; every worker hears the broadcast (then `cancel` below)',
  },
  {
    step: 'request an interrupt',
    by: 'API',
    script: 'requestCancel',
    from: LIVE,
    guard: 'any',
    to: 'unchanged',
    event: undefined,
    job: "unchanged; no broadcast: a running run's worker stops at its next checkpoint save (then `cancel`)",
  },
  {
    step: 'take a message',
    by: 'API',
    script: 'steerRun',
    from: LIVE,
    guard: 'any',
    to: 'unchanged',
    event: 'message.received',
    job: 'unchanged: the run takes it at its next turn boundary (a waiting run, when it next wakes)',
  },
  {
    step: 'complete',
    by: 'worker',
    script: 'finalizeRun',
    from: LIVE,
    guard: 'owner',
    to: 'completed',
    event: 'run.completed',
    job: 'completed, with the output',
  },
  {
    step: 'fail',
    by: 'worker',
    script: 'finalizeRun',
    from: LIVE,
    guard: 'owner',
    to: 'failed',
    event: 'run.failed',
    request: 'pending → cancelled',
    job: 'completed (or failed, when BullMQ gave up on a stalled run: then by any worker)',
  },
  {
    step: 'expire',
    by: 'worker',
    script: 'finalizeRun',
    from: NOT_STARTED,
    guard: 'any',
    to: 'expired',
    event: 'run.expired',
    job: "completed (its claim or `start on time` found the deadline passed), or removed by the expiry sweep (a job a worker holds then finds the run ended); only a run that never started, its `expiresAt` passed by Redis's clock",
  },
  {
    step: 'cancel',
    by: 'API or worker',
    script: 'finalizeRun',
    from: LIVE,
    guard: 'any',
    to: 'cancelled',
    event: 'run.cancelled',
    request: 'pending → cancelled',
    job: 'removed (queued or waiting) or completed (the owner stops)',
  },
];

/** The last line of {@link lifecycleLua}: a script's own code follows it. */
export const LIFECYCLE_END = '-- End of the code generated from packages/store/src/runs/lifecycle.ts.';

/**
 * The Lua the scripts share for the statuses and the steps (`--- @include
 * "includes/lifecycle"`), generated from this module so that the scripts and
 * the table cannot disagree: `terminal(status)`, and `allowed(step, status)`,
 * the guard every step's script takes it under.
 */
export function lifecycleLua(): string {
  const terminal = TERMINAL_STATUSES.map((status) => `${status} = true`).join(', ');
  const from = TRANSITIONS.filter((t) => t.from !== 'new').map((t) => {
    const statuses = (t.from as readonly RunStatus[]).map((status) => `${status} = true`).join(', ');
    return `  [${JSON.stringify(t.step)}] = { ${statuses} },`;
  });
  return [
    '-- Generated from packages/store/src/runs/lifecycle.ts: whether a run in this status has ended.',
    `local TERMINAL = { ${terminal} }`,
    'local function terminal(status)',
    '  return TERMINAL[status] == true',
    'end',
    '-- Generated from TRANSITIONS: the statuses each step starts from. A step not in the table, or',
    "-- from a status it does not start from, is refused: the table is the scripts' guard.",
    'local FROM = {',
    ...from,
    '}',
    'local function allowed(step, status)',
    '  local statuses = FROM[step]',
    "  if not statuses then error('not a step of the lifecycle: ' .. step) end",
    '  return status ~= nil and status ~= false and statuses[status] == true',
    'end',
    "-- An owner's step within its attempt: nil when it may go; 0 when the caller does not hold the run",
    '-- in a status the step starts from (another worker owns it, or it is not running: the attempt',
    '-- hands its job back, and the next claim takes the run up); -1 when a cancel was asked for, or',
    '-- the run has ended (or its record has no status).',
    'local function refusedOwnerStep(step, owner, status, cancelRequested, token)',
    '  if owner ~= token then return 0 end',
    '  if cancelRequested or not status or terminal(status) then return -1 end',
    '  if not allowed(step, status) then return 0 end',
    '  return nil',
    'end',
    LIFECYCLE_END,
  ].join('\n');
}

/**
 * The steps a script takes, each one guarded by `allowed('<step>', status)`:
 * every script named in {@link TRANSITIONS} has a guard for each of its steps
 * (a test reads the scripts for it).
 */
export function stepsOf(script: string): string[] {
  return TRANSITIONS.filter((t) => t.script === script && t.from !== 'new').map((t) => t.step);
}

/** {@link TRANSITIONS} as the Markdown table of docs/architecture.md. */
export function transitionsTable(): string {
  const rows = TRANSITIONS.map((t) => {
    const from = t.from === 'new' ? '(new)' : t.from.length === LIVE.length ? 'any live' : t.from.join(', ');
    const cells = [
      t.step,
      t.by,
      `\`${t.script}\``,
      from,
      t.guard,
      t.to === 'unchanged' ? 'unchanged' : `\`${t.to}\``,
      eventCell(t.event),
      t.request ?? '–',
      t.job,
    ];
    return `| ${cells.join(' | ')} |`;
  });
  return [
    '| step | by | script | from | who may | to | event appended (last) | waitpoint request | BullMQ |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

function eventCell(event: Transition['event']): string {
  if (event === undefined) return '–';
  const types = (typeof event === 'string' ? [event] : event).map((type) => `\`${type}\``);
  return types.length <= 2 ? types.join(' or ') : `${types.slice(0, -1).join(', ')} or ${types.at(-1)}`;
}
