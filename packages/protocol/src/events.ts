import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { PendingApprovalSchema } from './approvals.js';
import { BudgetWarningSchema } from './budgets.js';

/** Run statuses, in lifecycle order. */
export const RUN_STATUSES = [
  'scheduled',
  'queued',
  'running',
  'waiting_for_input',
  'waiting_for_children',
  'completed',
  'failed',
  'cancelled',
  'expired',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const RunStatusSchema = Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)));

/** Statuses a run never leaves. */
export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'expired'];

/** How a crew child run ended, as its parent learns it. */
export const CHILD_RESULT_STATUSES = ['completed', 'failed', 'cancelled', 'escalated', 'timed_out'] as const;
export type ChildResultStatus = (typeof CHILD_RESULT_STATUSES)[number];

export const TODO_STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const;
export type TodoStatus = (typeof TODO_STATUSES)[number];

export const TodoItemSchema = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 200 }),
    content: Type.String({ minLength: 1, maxLength: 2_000 }),
    status: Type.Union(TODO_STATUSES.map((s) => Type.Literal(s))),
  },
  { additionalProperties: false },
);
export type TodoItem = Static<typeof TodoItemSchema>;

/** An error as it crosses Redis or HTTP. */
export const ErrorBodySchema = Type.Object({
  code: Type.String(),
  message: Type.String(),
});
export type ErrorBody = Static<typeof ErrorBodySchema>;

/**
 * Tokens a run (or a model turn) used. `inputTokens` counts every input token,
 * those read from or written to the provider's prompt cache included; the
 * optional figures say how many of them were, when the provider reports it.
 */
export const UsageSchema = Type.Object({
  inputTokens: Type.Integer({ minimum: 0 }),
  outputTokens: Type.Integer({ minimum: 0 }),
  totalTokens: Type.Integer({ minimum: 0 }),
  /** Of `inputTokens`, those read from the prompt cache. */
  cacheReadTokens: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Of `inputTokens`, those written to the prompt cache (Anthropic's cache writes). */
  cacheWriteTokens: Type.Optional(Type.Integer({ minimum: 0 })),
  /** What the tokens cost in US dollars, by the profile's `prices` (absent when it has none). */
  costUsd: Type.Optional(Type.Number({ minimum: 0 })),
});
export type Usage = Static<typeof UsageSchema>;

/**
 * How one delegated task ended, as its crew parent learns it: the delegation keeps one per child,
 * and the parent's tool result lists them, one per task, in order (`summary` capped at 8,000
 * characters).
 */
export interface ChildResult {
  /** The task's place in the delegation. */
  index: number;
  /** The child run that carried it out. */
  runId: string;
  status: ChildResultStatus;
  /** The child's final output (or why it has none). */
  summary: string;
  usage: Usage;
  durationMs: number;
}

export const ToolCallSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  /** The arguments as the model wrote them (a JSON string, possibly malformed). */
  arguments: Type.String(),
});
export type ToolCall = Static<typeof ToolCallSchema>;

/** The `data` of each event type. */
/** On a crew tree's root run, the child an event mirrored from it belongs to. */
const CrewChildRunId = Type.Optional(Type.String());

export const EventDataSchemas = {
  'run.queued': Type.Object({}),
  /** A delayed run (`runAt` or `delayMs`): created, or given a new time; it starts at `runAt`. */
  'run.scheduled': Type.Object({ runAt: Type.String({ format: 'date-time' }) }),
  'run.started': Type.Object({ attempt: Type.Integer(), workerId: Type.String() }),
  'attempt.started': Type.Object({ attempt: Type.Integer(), resumed: Type.Boolean(), step: Type.Integer() }),
  'message.delta': Type.Object({ text: Type.String() }),
  message: Type.Object({
    role: Type.Literal('assistant'),
    content: Type.String(),
    toolCalls: Type.Array(ToolCallSchema),
  }),
  /** `server`: the MCP server whose tool it is (`name` is then `<server>__<tool>`). */
  'tool.call': Type.Object({
    callId: Type.String(),
    name: Type.String(),
    arguments: Type.String(),
    server: Type.Optional(Type.String()),
  }),
  'tool.output': Type.Object({
    callId: Type.String(),
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
    chunk: Type.String(),
  }),
  'tool.result': Type.Object({
    callId: Type.String(),
    name: Type.String(),
    ok: Type.Boolean(),
    content: Type.String(),
    server: Type.Optional(Type.String()),
  }),
  'todo.updated': Type.Object({ todos: Type.Array(TodoItemSchema) }),
  'clarify.requested': Type.Object({
    requestId: Type.String(),
    question: Type.String(),
    choices: Type.Array(Type.String()),
    expiresAt: Type.String({ format: 'date-time' }),
  }),
  'clarify.answered': Type.Object({ requestId: Type.String(), answer: Type.String() }),
  'clarify.timed_out': Type.Object({ requestId: Type.String() }),
  /** The model called a client tool: the run waits for the client to post its output. */
  'tool.requested': Type.Object({
    requestId: Type.String(),
    callId: Type.String(),
    name: Type.String(),
    arguments: Type.Record(Type.String(), Type.Unknown()),
    expiresAt: Type.String({ format: 'date-time' }),
  }),
  /**
   * A tool call waits for a decision before it runs (the run's approval policy asked for one):
   * posted to `POST /v1/runs/:id/approvals/:requestId`. A crew child's request is also told on
   * its tree's root run, with `childRunId`: the run to decide it on.
   */
  'approval.requested': Type.Composite([PendingApprovalSchema, Type.Object({ childRunId: CrewChildRunId })]),
  /**
   * A decision was taken (the first one wins): by a tenant, an answer token, or `timeout` (the
   * policy's `onTimeout`, with `timedOut`). An edit carries the arguments the call runs with, a
   * rejection its message.
   */
  'approval.resolved': Type.Object({
    requestId: Type.String(),
    decision: Type.Union([Type.Literal('approve'), Type.Literal('edit'), Type.Literal('reject')]),
    by: Type.String(),
    arguments: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    message: Type.Optional(Type.String()),
    timedOut: Type.Optional(Type.Boolean()),
    /** On a crew tree's root: the child whose call was decided. */
    childRunId: CrewChildRunId,
  }),
  /** A message for a live run (`POST /v1/runs/:id/messages`): the run takes it at its next turn boundary. */
  'message.received': Type.Object({ messageId: Type.String(), content: Type.String() }),
  /** The message was put in the transcript, as the user's, before a model turn. */
  'message.delivered': Type.Object({ messageId: Type.String() }),
  /** The run ended before it took the message: it was never seen by the model. */
  'message.undelivered': Type.Object({ messageId: Type.String() }),
  /** A client posted a tool's output (the first one wins); the output is the call's `tool.result` on resume. */
  'tool.output_received': Type.Object({ requestId: Type.String(), isError: Type.Boolean() }),
  /** No output came before the deadline: the model is told so. */
  'tool.timed_out': Type.Object({ requestId: Type.String() }),
  usage: UsageSchema,
  /**
   * This run's turn brought its tenant's use to 80% or more of one of its budgets (`/v1/budgets`),
   * the first time in the period: sent once per tenant, period and budget, on the run that crossed.
   */
  'budget.warning': BudgetWarningSchema,
  /**
   * A schedule (`/v1/schedules`) made this run: the first event after `run.queued`. `tickAt` is the
   * tick it fired for (a trigger's own time for `trigger: true`).
   */
  'schedule.fired': Type.Object({
    scheduleId: Type.String(),
    name: Type.String(),
    tickAt: Type.String({ format: 'date-time' }),
    trigger: Type.Optional(Type.Boolean()),
  }),
  /**
   * A tick of a schedule with `overlap: "skip"` came while this run (its last) was live, so it made
   * no run: told on the run that was in the way.
   */
  'schedule.skipped': Type.Object({
    scheduleId: Type.String(),
    name: Type.String(),
    tickAt: Type.String({ format: 'date-time' }),
    reason: Type.Literal('overlap'),
  }),
  /** A model turn went to another profile (the run's profile's `fallbacks`): why, the failure or an open breaker. */
  'model.fallback': Type.Object({ from: Type.String(), to: Type.String(), reason: Type.String() }),
  /**
   * The run's transcript was compacted to fit the model's context window before a turn: old tool
   * results pruned (`prune`), or the middle of the transcript summarised too (`summarise`).
   */
  'context.compacted': Type.Object({
    beforeTokens: Type.Integer({ minimum: 0 }),
    afterTokens: Type.Integer({ minimum: 0 }),
    strategy: Type.Union([Type.Literal('prune'), Type.Literal('summarise')]),
    turnsSummarised: Type.Integer({ minimum: 0 }),
    prunedToolResults: Type.Integer({ minimum: 0 }),
    window: Type.Integer({ minimum: 1 }),
  }),
  /** A session run's history was windowed to its token budget: what was left out of what the model sees. */
  'session.truncated': Type.Object({
    droppedTurns: Type.Integer({ minimum: 0 }),
    droppedEntries: Type.Integer({ minimum: 0 }),
    shortenedToolResults: Type.Integer({ minimum: 0 }),
    tokensBefore: Type.Integer({ minimum: 0 }),
    tokensAfter: Type.Integer({ minimum: 0 }),
    budget: Type.Integer({ minimum: 0 }),
  }),
  /** A crew child run was created for task `index` of a delegation (the parent's stream). */
  'child.started': Type.Object({
    childRunId: Type.String(),
    index: Type.Integer({ minimum: 0 }),
    goal: Type.String(),
  }),
  /** A crew child run ended, in any way (the parent's stream): its status and summary, as the parent's tool result has them. */
  'child.finished': Type.Object({
    childRunId: Type.String(),
    index: Type.Integer({ minimum: 0 }),
    status: Type.Union(CHILD_RESULT_STATUSES.map((s) => Type.Literal(s))),
    summary: Type.String(),
  }),
  /**
   * Every run of a batch has ended (`POST /v1/batches`): told once, on the run that ended last,
   * after its own end.
   */
  'batch.completed': Type.Object({
    batchId: Type.String(),
    total: Type.Integer({ minimum: 1 }),
  }),
  'run.retrying': Type.Object({ attempt: Type.Integer(), delayMs: Type.Integer(), error: ErrorBodySchema }),
  /** `result`: a run with `output`, the arguments of its accepted `submit_result` call. */
  'run.completed': Type.Object({ output: Type.String(), result: Type.Optional(Type.Unknown()) }),
  'run.failed': Type.Object({ error: ErrorBodySchema }),
  'run.cancelled': Type.Object({ reason: Type.Optional(Type.String()) }),
  /** A run with `expiresAt` (or `ttlMs`) that had not started by then: it never will. */
  'run.expired': Type.Object({ expiresAt: Type.String({ format: 'date-time' }) }),
} satisfies Record<string, TSchema>;

export type RunEventType = keyof typeof EventDataSchemas;
export const RUN_EVENT_TYPES = Object.keys(EventDataSchemas) as RunEventType[];
export type RunEventData<T extends RunEventType> = Static<(typeof EventDataSchemas)[T]>;

/** Events that end a run's stream. */
export const TERMINAL_EVENT_TYPES: readonly RunEventType[] = [
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.expired',
];

/** One entry of a run's event log: `{ id, runId, type, at, data }`. */
export type RunEvent<T extends RunEventType = RunEventType> = {
  [K in T]: { id: string; runId: string; type: K; at: string; data: RunEventData<K> };
}[T];

/** An event before the log gives it an id, run id and time. */
export type RunEventInput<T extends RunEventType = RunEventType> = {
  [K in T]: { type: K; data: RunEventData<K> };
}[T];

/** Where parts of the system hand events to whoever records them. */
export type EmitEvent = (event: RunEventInput) => void;

export const RunEventSchema = Type.Union(
  RUN_EVENT_TYPES.map((type) =>
    Type.Object({
      id: Type.String(),
      runId: Type.String(),
      type: Type.Literal(type),
      at: Type.String({ format: 'date-time' }),
      data: EventDataSchemas[type],
    }),
  ),
);
