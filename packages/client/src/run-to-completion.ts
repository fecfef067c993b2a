import type { CreateRunBody, CreateRunResponse, PendingToolCall, Run, RunEvent } from '@tether/protocol';
import { invalidOption, TetherConflictError } from './errors.js';

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

export interface RunToCompletionOptions {
  /** Answers each `tool.requested` of the run. Required when the body declares `tools`. */
  onToolCall?: ToolCallHandler;
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
}

/**
 * Submits a run, follows its events, answers each client tool call through
 * `onToolCall` as it is requested (the calls of one model turn run
 * concurrently, each posted as soon as its handler returns), and resolves
 * with the run once it has ended. An output the API refuses as a conflict
 * (already posted, timed out, the run ended) is left: the run has moved on.
 * Any other failure to post an output (too long, the API unreachable after
 * the client's retries) stops following the run and is thrown; the run keeps
 * waiting for that output until its deadline.
 */
export async function runToCompletion(
  driver: RunDriver,
  body: CreateRunBody,
  options: RunToCompletionOptions = {},
): Promise<Run> {
  const { onToolCall, signal } = options;
  if ((body.tools?.length ?? 0) > 0 && typeof onToolCall !== 'function') {
    throw invalidOption('runToCompletion needs an onToolCall handler for a body that declares tools');
  }
  const { id } = await driver.submit(body, {
    ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
    ...(signal === undefined ? {} : { signal }),
  });
  const started = new Set<string>();
  const answering: Promise<void>[] = [];
  // An output that cannot be posted (refused as invalid, or the API unreachable) ends the wait: the
  // stream stops and the error is thrown here, never left unhandled.
  const stop = new AbortController();
  const streamSignal = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
  let failure: { error: unknown } | undefined;
  try {
    for await (const event of driver.stream(id, { signal: streamSignal })) {
      if (event.type !== 'tool.requested' || !onToolCall) continue;
      const call = event.data as PendingToolCall;
      if (started.has(call.requestId)) continue;
      started.add(call.requestId);
      answering.push(
        answer(driver, id, call, onToolCall, signal).catch((error: unknown) => {
          failure ??= { error };
          stop.abort(error);
        }),
      );
    }
  } catch (error) {
    if (failure === undefined) throw error;
  }
  await Promise.all(answering);
  if (failure !== undefined) throw failure.error;
  return driver.get(id, signal === undefined ? {} : { signal });
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
