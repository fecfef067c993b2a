import type { PendingToolCall } from '@tether/protocol';
import type { Logger } from 'pino';

/** The attempt a hook is called in. */
export interface HookAttempt {
  runId: string;
  /** The attempt number, from 1. */
  attempt: number;
  /** The attempt's logger (its lines name the run). */
  log: Logger;
}

/**
 * Seams into an attempt's timing, for tests: each hook marks a moment between two of the attempt's
 * steps, and the attempt waits for the promise it returns before the next step. A test holds a
 * window open there (to kill the worker, or to cancel the run, inside it) without a switch in the
 * worker's configuration. Only the test stack passes hooks (`startWorker`'s `hooks`); a deployment
 * has none, and every hook is a no-op.
 */
export interface WorkerHooks {
  /**
   * An attempt that ends asking the client for tool outputs: its checkpoint (the calls in it) is
   * saved, the requests are not yet recorded (`requestToolCalls`) nor its job delayed.
   */
  beforeToolRequest?:
    | ((attempt: HookAttempt, calls: readonly PendingToolCall[]) => Promise<void>)
    | undefined;
  /**
   * An attempt over its tenant's cap on running runs: its run is in the tenant's line, its job still
   * taken by this worker, not yet delayed.
   */
  beforeCappedDelay?:
    | ((attempt: HookAttempt, capped: { tenant: string; ahead: number }) => Promise<void>)
    | undefined;
}

/** Every hook, a no-op where none was given. */
export type ResolvedHooks = Readonly<{ [K in keyof WorkerHooks]-?: NonNullable<WorkerHooks[K]> }>;

const noop = async () => {};

/** `hooks` with a no-op for each one not given. */
export function withDefaultHooks(hooks: WorkerHooks = {}): ResolvedHooks {
  return Object.freeze({
    beforeToolRequest: hooks.beforeToolRequest ?? noop,
    beforeCappedDelay: hooks.beforeCappedDelay ?? noop,
  });
}
