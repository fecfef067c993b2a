import { isRedisConnectionError, QUEUE_NAME, type TetherKeys } from '@tether/store/redis';
import { backoffStrategy, type RunJobData } from '@tether/store/runs';
import { type Job, type Telemetry, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { TenantSlotKeeper } from '../attempt/tenant-slot.js';
import type { WorkerConfig } from '../config.js';
import type { createProcessor } from '../processor.js';
import type { WorkerConnections } from './connections.js';
import type { WorkerStores } from './stores.js';

/** The BullMQ workers on the runs queue (one per shard taken), and what keeps their attempts honest. */
export interface RunWorkers {
  workers: Worker<RunJobData>[];
  /**
   * Resolves once the workers take jobs: after the waits of runs of the release before the waitpoint
   * are in their waitpoints (see `RunStore.migrateWaitpoints`), tried again until Redis answers.
   */
  started: Promise<void>;
  /** Stops the timers: attempts whose lock was not renewed in time, cancels left unfinished. */
  stopTimers(): void;
}

/** What the run workers are made of. */
interface RunWorkerParts {
  config: Readonly<WorkerConfig>;
  keys: TetherKeys;
  connections: WorkerConnections;
  stores: WorkerStores;
  processor: ReturnType<typeof createProcessor>;
  tenantSlots: TenantSlotKeeper | undefined;
  telemetry: Telemetry | undefined;
  logger: Logger;
}

/** One BullMQ worker per shard taken, sharing this worker's slots (see shardConcurrency). */
export function startRunWorkers(options: RunWorkerParts): RunWorkers {
  const { config, keys, connections, processor } = options;
  const workers = config.shards.map((shard, index) => shardWorker(options, shard, index));
  const stopTimers = startTimers(options);
  connections.subscriber.on('message', (channel: string, runId: string) => {
    if (channel === keys.cancelChannel) processor.activeRuns.stop(runId, 'cancel');
  });
  let stopped = false;
  const started = migrateThenRun(options, workers, () => stopped);
  return {
    workers,
    started,
    stopTimers: () => {
      stopped = true;
      stopTimers();
    },
  };
}

/** The BullMQ worker of one shard, not running yet, with what its events do. */
function shardWorker(options: RunWorkerParts, shard: number, index: number): Worker<RunJobData> {
  const { config, keys, connections, stores, processor, tenantSlots, telemetry, logger } = options;
  const worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
    connection: connections.bullmq,
    prefix: keys.shardPrefix(shard),
    concurrency: shardConcurrency(config.concurrency, config.shards.length, index),
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: config.maxStalledCount,
    // A retry's delay is the one the attempt recorded in `run.retrying` (see settleOutcome).
    settings: { backoffStrategy },
    // Run once the waits of the previous release are moved (see `migrateThenRun`).
    autorun: false,
    // BullMQ's 'process' span per job taken, continuing the trace its job carries (the enqueue's).
    ...(telemetry ? { telemetry } : {}),
  });
  worker.on('error', (error) => {
    // BullMQ reports every reconnect attempt of its connections too.
    if (isRedisConnectionError(error) || connections.breaker.outage) {
      logger.debug({ shard, error: error.message }, 'worker error while Redis is unreachable');
    } else logger.error({ shard, err: error }, 'worker error');
  });
  // A run whose lock is lost (or not renewed in time, when Redis does not answer) stops at once,
  // commands included: by the time its lock expires and another worker may take the run over,
  // nothing of this attempt runs any more.
  worker.on('locksRenewed', ({ jobIds }) => {
    processor.activeRuns.locksRenewed(jobIds);
    tenantSlots?.renew(jobIds);
    void stopCancelled(options, jobIds);
  });
  worker.on('lockRenewalFailed', (jobIds) => {
    for (const runId of jobIds) processor.activeRuns.stop(runId, 'lost');
  });
  worker.on('failed', (job: Job<RunJobData> | undefined, error: Error) => {
    if (job) endGivenUp(job, error);
  });

  /** BullMQ gives up on its own after too many stalls (dead workers): end the run so it does not stay running. */
  function endGivenUp(job: Job<RunJobData>, error: Error): void {
    const outOfAttempts = job.attemptsMade >= (job.opts.attempts ?? 1);
    if (!outOfAttempts && !/stalled/i.test(error.message)) return;
    const runId = job.data.runId;
    stores.runs.engine
      .giveUp(runId, error.message)
      .catch((err: unknown) => logger.error({ err, runId }, 'could not mark the run failed'));
  }
  return worker;
}

/**
 * A cancel's broadcast can be missed (pub/sub keeps nothing for a subscriber that was reconnecting),
 * and an attempt waiting on a slow model or command would then see it only at its next save: each
 * lock renewal also reads the cancel flags of the runs it renewed, so a cancel reaches its attempt
 * within half a lock at worst. An interrupt is left to the attempt's next save, as without a miss.
 */
async function stopCancelled(options: RunWorkerParts, runIds: readonly string[]): Promise<void> {
  const { store } = options.stores;
  const modes = await Promise.all(runIds.map((runId) => store.cancelMode(runId).catch(() => undefined)));
  runIds.forEach((runId, index) => {
    if (modes[index] === 'cancel') options.processor.activeRuns.stop(runId, 'cancel');
  });
}

/** The timers that keep attempts honest: stale locks, and cancels a process left unfinished. Returns their stop. */
function startTimers(options: RunWorkerParts): () => void {
  const { config, stores, processor, logger } = options;
  const leaseCheck = setInterval(
    () => processor.activeRuns.stopStale(Date.now(), Math.floor(config.lockDurationMs * 0.75)),
    Math.max(100, Math.floor(config.lockDurationMs / 10)),
  );
  leaseCheck.unref();
  // A cancel that a process (an API, a parent's worker) began outside an attempt and did not finish
  // (it died in between) is finished by the workers: each looks once a lock, every step is idempotent.
  const cancelRecovery = setInterval(() => {
    stores.runs.engine.recoverCancels(unfinishedCancelAgeMs(config.lockDurationMs)).then(
      (runIds) => {
        if (runIds.length > 0) logger.warn({ runIds }, 'finished cancels that a process left unfinished');
      },
      (err: unknown) => logger.warn({ err }, 'could not look for unfinished cancels'),
    );
  }, config.lockDurationMs);
  cancelRecovery.unref();
  return () => {
    clearInterval(leaseCheck);
    clearInterval(cancelRecovery);
  };
}

/** Moves the previous release's waits (once per deployment), then runs the workers. */
async function migrateThenRun(
  options: RunWorkerParts,
  workers: readonly Worker<RunJobData>[],
  stopped: () => boolean,
): Promise<void> {
  const { stores, logger } = options;
  for (let delayMs = 250; !stopped(); delayMs = Math.min(delayMs * 2, 5_000)) {
    try {
      const moved = await stores.store.migrateWaitpoints();
      if (moved > 0)
        logger.info({ moved }, 'moved the waits of runs of the previous release into their waitpoints');
      break;
    } catch (err) {
      logger.warn(
        { err, retryInMs: delayMs },
        'could not move the previous release’s waits yet; no run is taken until then',
      );
      await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
    }
  }
  if (stopped()) return;
  for (const worker of workers) worker.run().catch((error: unknown) => worker.emit('error', error as Error));
}

/**
 * How long a cancel may stay in flight before a worker takes it for one a process left unfinished:
 * a cancel takes milliseconds (a tree of children, a few round trips each); two locks, at least 10 s.
 */
export function unfinishedCancelAgeMs(lockDurationMs: number): number {
  return Math.max(10_000, 2 * lockDurationMs);
}

/**
 * The slots of the `index`-th of `shards` BullMQ workers: the worker's
 * concurrency shared out as evenly as it goes (the first ones get the
 * remainder), at least one each.
 */
export function shardConcurrency(concurrency: number, shards: number, index: number): number {
  const share = Math.floor(concurrency / shards) + (index < concurrency % shards ? 1 : 0);
  return Math.max(1, share);
}
