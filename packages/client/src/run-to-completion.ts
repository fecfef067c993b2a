import type { Static, TSchema } from '@sinclair/typebox';
import type {
  ApprovalDecisionBody,
  CreateRunBody,
  CreateRunResponse,
  PendingApproval,
  PendingToolCall,
  Run,
  RunEvent,
} from '@tether/protocol';
import { APPROVAL_LIMITS, TERMINAL_EVENT_TYPES } from '@tether/protocol';
import { invalidOption, TetherConflictError } from './errors.js';

/**
 * The type of a run's `result` for its `output.schema` `S`: `Static<S>` for a TypeBox schema,
 * `unknown` for a plain JSON Schema (give `runToCompletion` the type as its type parameter then).
 */
export type ResultOf<S> = S extends TSchema ? Static<S> : unknown;

/** `R` when given (not `never`), else the type `S` gives (see {@link ResultOf}). */
export type ResultType<R, S> = [R] extends [never] ? ResultOf<S> : R;

/** A run whose `result` (there once it completed with one) has the type `R`. */
export type RunWithResult<R> = Omit<Run, 'result'> & { result?: R };

/**
 * A run's body whose `output.schema` is `S`: a TypeBox schema (sent as the JSON Schema it is) or a
 * plain JSON Schema object.
 */
export type RunBodyWithOutput<S extends Record<string, unknown>> = Omit<CreateRunBody, 'output'> & {
  output?: { schema: S; maxAttempts?: number };
};

/** A client tool call as the handler of `runs.runToCompletion` gets it. */
export interface ToolCallRequest extends PendingToolCall {
  runId: string;
  /** Aborted when the run-to-completion is. */
  signal: AbortSignal | undefined;
}

/**
 * Runs a client tool call: its output, as text (`{ output, isError: true }`
 * reports a failure the model should see as one). A handler that throws
 * posts its error's message as a failed output.
 */
export type ToolCallHandler = (
  call: ToolCallRequest,
) => Promise<string | { output: string; isError?: boolean }> | string | { output: string; isError?: boolean };

/** A tool call that waits for a decision, as the handler of `runs.runToCompletion` gets it. */
export interface ApprovalRequest extends PendingApproval {
  runId: string;
  /**
   * Aborted when the run-to-completion is, when the request is decided elsewhere (another client,
   * the console, its deadline), and when the run ends: a handler that asks a person can stop asking.
   */
  signal: AbortSignal;
}

/**
 * Decides on a tool call the run's approval policy holds: `{ decision: 'approve' }`,
 * `{ decision: 'edit', arguments }` or `{ decision: 'reject', message? }`. A handler that throws
 * rejects the call, its error's message told to the model (the call does not run).
 */
export type ApprovalHandler = (
  request: ApprovalRequest,
) => Promise<ApprovalDecisionBody> | ApprovalDecisionBody;

export interface RunToCompletionOptions {
  /** Answers each `tool.requested` of the run. Required when the body declares `tools`. */
  onToolCall?: ToolCallHandler;
  /**
   * Decides each `approval.requested` of the run. Without it nothing is decided here: the run
   * waits for a decision from elsewhere, or its deadline.
   */
  onApprovalRequest?: ApprovalHandler;
  /** Sent as `Idempotency-Key` with the submission. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** What `runToCompletion` needs of the client. */
export interface RunDriver {
  submit(
    body: CreateRunBody,
    options: { idempotencyKey?: string; signal?: AbortSignal },
  ): Promise<CreateRunResponse>;
  stream(runId: string, options: { signal?: AbortSignal }): AsyncIterable<RunEvent>;
  get(runId: string, options: { signal?: AbortSignal }): Promise<Run>;
  postToolOutput(
    runId: string,
    requestId: string,
    output: string,
    options: { isError?: boolean; signal?: AbortSignal },
  ): Promise<void>;
  decide(
    runId: string,
    requestId: string,
    decision: ApprovalDecisionBody,
    options: { signal?: AbortSignal },
  ): Promise<void>;
}

const TERMINAL_TYPES: ReadonlySet<string> = new Set(TERMINAL_EVENT_TYPES);

/**
 * Submits a run, follows its events, answers each client tool call through
 * `onToolCall` and decides each approval request through `onApprovalRequest`
 * as they come (those of one model turn concurrently, each posted as soon as
 * its handler returns), and resolves with the run once it has ended. An output
 * or a decision the API refuses as a conflict (posted already, past the
 * deadline, the run ended) is left: the run has moved on. Any other failure
 * to post one (refused as invalid, the API unreachable after the client's
 * retries) stops following the run and is thrown; the run keeps waiting for
 * it until its deadline.
 *
 * A body with `output` gets the run's `result` typed: `Static<S>` of a TypeBox schema, else `R`,
 * the type parameter (default `unknown`). The type is the caller's word: the server checked the
 * result against the schema, the client does not check it again.
 */
export async function runToCompletion<R = never, S extends Record<string, unknown> = Record<string, unknown>>(
  driver: RunDriver,
  body: RunBodyWithOutput<S>,
  options: RunToCompletionOptions = {},
): Promise<RunWithResult<ResultType<R, S>>> {
  const { onToolCall, onApprovalRequest, signal } = options;
  if ((body.tools?.length ?? 0) > 0 && typeof onToolCall !== 'function') {
    throw invalidOption('runToCompletion needs an onToolCall handler for a body that declares tools');
  }
  if (onApprovalRequest !== undefined && typeof onApprovalRequest !== 'function') {
    throw invalidOption('onApprovalRequest must be a function when given');
  }
  const { id } = await driver.submit(body, {
    ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    ...(signal === undefined ? {} : { signal }),
  });
  const started = new Set<string>();
  const answering: Promise<void>[] = [];
  // Each approval request's handler is told when the request no longer waits for it.
  const deciding = new Map<string, AbortController>();
  // An output or a decision that cannot be posted (refused as invalid, or the API unreachable) ends
  // the wait: the stream stops and the error is thrown here, never left unhandled.
  const stop = new AbortController();
  const streamSignal = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
  let failure: { error: unknown } | undefined;
  const track = (work: Promise<void>) => {
    answering.push(
      work.catch((error: unknown) => {
        failure ??= { error };
        stop.abort(error);
      }),
    );
  };
  try {
    for await (const event of driver.stream(id, { signal: streamSignal })) {
      if (event.type === 'tool.requested' && onToolCall && !started.has(event.data.requestId)) {
        started.add(event.data.requestId);
        track(answer(driver, id, event.data, onToolCall, signal));
      } else if (
        event.type === 'approval.requested' &&
        onApprovalRequest &&
        !started.has(event.data.requestId)
      ) {
        started.add(event.data.requestId);
        const settled = new AbortController();
        deciding.set(event.data.requestId, settled);
        const requestSignal =
          signal === undefined ? settled.signal : AbortSignal.any([signal, settled.signal]);
        // A crew child's call, told on its root, is decided on the child.
        const { childRunId, ...approval } = event.data;
        track(decideOn(driver, childRunId ?? id, approval, onApprovalRequest, requestSignal, signal));
      } else if (event.type === 'approval.resolved') {
        deciding.get(event.data.requestId)?.abort();
      } else if (TERMINAL_TYPES.has(event.type)) {
        for (const settled of deciding.values()) settled.abort();
      }
    }
  } catch (error) {
    if (failure === undefined) throw error;
  }
  await Promise.all(answering);
  if (failure !== undefined) throw failure.error;
  return (await driver.get(id, signal === undefined ? {} : { signal })) as RunWithResult<ResultType<R, S>>;
}

async function answer(
  driver: RunDriver,
  runId: string,
  call: PendingToolCall,
  handler: ToolCallHandler,
  signal: AbortSignal | undefined,
): Promise<void> {
  let output: string;
  let isError = false;
  try {
    const result = await handler({ ...call, runId, signal });
    if (typeof result === 'string') output = result;
    else {
      output = String(result.output);
      isError = result.isError === true;
    }
  } catch (error) {
    output = error instanceof Error ? error.message : String(error);
    isError = true;
  }
  try {
    await driver.postToolOutput(runId, call.requestId, output, {
      isError,
      ...(signal === undefined ? {} : { signal }),
    });
  } catch (error) {
    if (!(error instanceof TetherConflictError)) throw error;
  }
}

/** Asks the handler for a decision and posts it; a handler that throws rejects the call. */
async function decideOn(
  driver: RunDriver,
  runId: string,
  approval: PendingApproval,
  handler: ApprovalHandler,
  requestSignal: AbortSignal,
  signal: AbortSignal | undefined,
): Promise<void> {
  let decision: ApprovalDecisionBody;
  try {
    decision = await handler({ ...approval, runId, signal: requestSignal });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    decision = { decision: 'reject', message: message.slice(0, APPROVAL_LIMITS.messageMaxLength) };
  }
  try {
    // The caller's signal only: a decision taken as the request was settled elsewhere meets a 409, left below.
    await driver.decide(runId, approval.requestId, decision, signal === undefined ? {} : { signal });
  } catch (error) {
    if (!(error instanceof TetherConflictError)) throw error;
  }
}
