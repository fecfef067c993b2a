import type { RedisClient, TetherKeys } from '@tether/store/redis';
import { onSpawnerFailure } from '@tether/tools';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.js';
import type { WorkerMetrics } from '../metrics.js';
import { WorkerReadiness } from '../readiness.js';
import { checkSandbox } from '../sandbox-report.js';

/** How often a worker refreshes its entry in the workers hash (read by the API's /readyz). */
const REPORT_INTERVAL_MS = 10_000;

/** The worker's entry in the workers hash, for the API's /readyz. */
export interface WorkerReport {
  /** Publishes the entry now; the first call lists the worker (`listed`: from then on a change is published at once). */
  publish(): Promise<void>;
  listed(): void;
  /** At the start of a shutdown: a spawner's failure is no longer published. */
  stopWatching(): void;
  /** Once the attempts have stopped: the entry is no longer refreshed. */
  stopRefreshing(): void;
}

/** What the sandbox is, and what runs with less than it should: said once, and published for /readyz. */
export function startReport(options: {
  config: Readonly<WorkerConfig>;
  keys: TetherKeys;
  redis: RedisClient;
  metrics: WorkerMetrics | undefined;
  logger: Logger;
  shuttingDown: () => boolean;
}): WorkerReport {
  const { config, keys, redis, metrics, logger } = options;
  const readiness = new WorkerReadiness({ logger, metrics });
  const sandbox = checkSandbox(config).then((report) => {
    readiness.sandboxChecked(report);
    return report;
  });
  let listed = false;
  const publish = async () => {
    const report = await sandbox;
    const entry = { ...report, ...readiness.status(), at: Date.now() };
    await redis.hset(keys.workers, config.workerId, JSON.stringify(entry));
  };
  // A change once listed is published at once, not at the next refresh.
  const unwatchSpawner = onSpawnerFailure((failure) => {
    readiness.spawnerFailed(failure);
    if (listed && !options.shuttingDown()) {
      publish().catch((error: unknown) =>
        logger.debug({ err: error }, 'could not publish the worker report'),
      );
    }
  });
  const reporter = setInterval(() => {
    publish().catch((error: unknown) => logger.debug({ err: error }, 'could not publish the worker report'));
  }, REPORT_INTERVAL_MS);
  reporter.unref();
  return {
    publish,
    listed: () => {
      listed = true;
    },
    stopWatching: () => {
      unwatchSpawner();
    },
    stopRefreshing: () => clearInterval(reporter),
  };
}
