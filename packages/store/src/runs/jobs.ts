import type { Job } from 'bullmq';

/**
 * What BullMQ does with a run's job, in one place: the retry delay (one
 * function serves the `run.retrying` event and BullMQ's backoff) and the
 * wake-up of a delayed job.
 */

/** The BullMQ job of a run carries only its id: the run lives in its own keys. */
export interface RunJobData {
  runId: string;
  /**
   * The run's tenant (jobs queued before it was carried have none): what a worker reads before the
   * claim (its tenant's slot, its webhooks' subscriptions) without a round trip.
   */
  tenant?: string;
  /** A crew child's parent: the child's claim checks that the parent still waits for it. */
  parentRunId?: string;
  /** The id of the API request that submitted the run (or its crew root), for the worker's log lines. */
  requestId?: string;
  /**
   * A delayed run (`scheduled` at its creation): its job, delayed until its `runAt`, queues it first
   * (`RunEngine.startOnTime`). Runs without it cost nothing more.
   */
  scheduled?: true;
}

/** The backoff type of a run's job: BullMQ asks the worker's {@link backoffStrategy} for the delay. */
export const RETRY_BACKOFF_TYPE = 'tether';

/** The delay before attempt `attempt + 1`, after attempt `attempt` failed: `baseMs`, doubled each time. */
export function retryDelayMs(baseMs: number, attempt: number): number {
  return Math.round(baseMs * 2 ** Math.max(0, attempt - 1));
}

/**
 * Thrown to BullMQ for a retryable failure the worker has recorded
 * (`run.retrying` says when the next attempt starts): BullMQ's backoff is
 * exactly {@link RetryLater.delayMs}, so the event and the queue agree.
 */
export class RetryLater extends Error {
  readonly delayMs: number;

  constructor(message: string, delayMs: number, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RetryLater';
    this.delayMs = delayMs;
  }
}

/**
 * The worker's `settings.backoffStrategy`: the delay a {@link RetryLater}
 * carries; for any other error thrown out of an attempt, the same
 * {@link retryDelayMs} from the job's base delay.
 */
export function backoffStrategy(
  attemptsMade: number,
  _type?: string,
  error?: Error,
  job?: { opts: { backoff?: number | { delay?: number } | undefined } },
): number {
  if (error instanceof RetryLater) return error.delayMs;
  return retryDelayMs(baseDelay(job?.opts.backoff), attemptsMade);
}

/** The base delay (ms) of a job's backoff option. */
export function baseDelay(backoff: number | { delay?: number } | undefined): number {
  if (typeof backoff === 'number') return backoff;
  return backoff?.delay ?? 0;
}

/**
 * Moves a delayed job to waiting. A job in another state (still active while
 * its run suspends, already promoted, or gone) is left alone: whoever holds it
 * re-checks the run itself. Any other error is thrown.
 */
export async function promoteJob(job: Job | undefined): Promise<void> {
  if (!job) return;
  try {
    await job.promote();
  } catch (error) {
    if (
      !(error instanceof Error) ||
      !/not in the delayed state|is not delayed|Missing key/i.test(error.message)
    ) {
      throw error;
    }
  }
}
