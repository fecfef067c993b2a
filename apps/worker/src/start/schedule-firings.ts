import { isRedisConnectionError, SCHEDULE_QUEUE_NAME, type TetherKeys } from '@tether/store/redis';
import type { ScheduleJobData } from '@tether/store/schedules';
import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.js';
import type { WorkerMetrics } from '../metrics.js';
import { createFiring } from '../schedules/fire.js';
import type { WorkerConnections } from './connections.js';
import type { WorkerStores } from './stores.js';

/**
 * The BullMQ worker on the schedules queue: each job a schedule's tick (or trigger), fired by
 * `schedules/fire.ts`. Every worker process has one; BullMQ gives each job to one of them.
 */
export function startScheduleFirings(options: {
  config: Readonly<WorkerConfig>;
  keys: TetherKeys;
  connections: WorkerConnections;
  stores: WorkerStores;
  metrics: WorkerMetrics | undefined;
  logger: Logger;
}): Worker<ScheduleJobData> {
  const { config, keys, connections, stores, metrics, logger } = options;
  const firing = createFiring({
    schedules: stores.schedules,
    runs: stores.runs,
    sessions: stores.sessions,
    webhooks: stores.dispatcher,
    catchUpGraceMs: config.schedule.catchUpGraceMs,
    log: logger.child({ component: 'schedules' }),
    // tether_schedule_firings_total{outcome}: every firing's end, counted where it is decided.
    onOutcome: metrics ? (outcome, tenant) => metrics.scheduleFired(outcome, tenant) : undefined,
  });
  const worker = new Worker<ScheduleJobData>(SCHEDULE_QUEUE_NAME, firing.process, {
    connection: connections.bullmq,
    prefix: keys.scheduleQueuePrefix,
    concurrency: 4,
    // A firing is a few round trips: a lock lapsed is a worker gone, another takes the job soon.
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: 1_000,
    autorun: true,
  });
  worker.on('error', (error) => {
    if (isRedisConnectionError(error) || connections.breaker.outage)
      logger.debug({ error: error.message }, 'schedules worker error');
    else logger.error({ err: error }, 'schedules worker error');
  });
  return worker;
}
