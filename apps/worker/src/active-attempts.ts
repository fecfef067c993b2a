import type { Logger } from 'pino';
import type { ActiveAttempt, StopReason } from './attempt/run.js';

/** The attempts this worker process is running, by run id. */
export interface ActiveRuns {
  /** Stops a run's attempt now (cancel broadcast, the end of the shutdown grace, a lost lock). */
  stop(runId: string, reason: StopReason): void;
}

/**
 * The attempts this process runs now, each with the controller that stops it
 * and when its lock was last renewed: stopped by a cancel, at the end of the
 * shutdown grace, or when its lock was not renewed in time.
 */
export class ActiveAttempts implements ActiveRuns {
  readonly #active = new Map<string, ActiveAttempt>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** An attempt starts running: its lock was taken (or renewed) when BullMQ handed the job over, a moment ago. */
  start(runId: string): ActiveAttempt {
    const entry: ActiveAttempt = { controller: new AbortController(), renewedAt: Date.now() };
    this.#active.set(runId, entry);
    return entry;
  }

  end(runId: string): void {
    this.#active.delete(runId);
  }

  stop(runId: string, reason: StopReason): void {
    const entry = this.#active.get(runId);
    if (!entry || entry.controller.signal.aborted) return;
    entry.reason = reason;
    entry.controller.abort(new Error(reason));
  }

  size(): number {
    return this.#active.size;
  }

  stopAll(reason: StopReason): void {
    for (const runId of this.#active.keys()) this.stop(runId, reason);
  }

  locksRenewed(runIds: readonly string[]): void {
    const now = Date.now();
    for (const runId of runIds) {
      const entry = this.#active.get(runId);
      if (entry) entry.renewedAt = now;
    }
  }

  /** Stops the attempts whose lock was last renewed more than `maxAgeMs` ago. */
  stopStale(now: number, maxAgeMs: number): void {
    for (const [runId, entry] of this.#active) {
      if (now - entry.renewedAt > maxAgeMs) {
        this.#logger.warn(
          { runId, sinceMs: now - entry.renewedAt },
          'the lock on the run was not renewed in time',
        );
        this.stop(runId, 'lost');
      }
    }
  }
}
