import { PROCESS_BREAKER } from '@tether/agent';
import { Lease } from '@tether/store/leases';
import type { RedisBreaker, RedisClient, TetherKeys } from '@tether/store/redis';
import {
  ElectedQueueCounts,
  MetricsPortInUseError,
  type MetricsServer,
  serveMetrics,
} from '@tether/telemetry';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.js';
import { WorkerMetrics } from '../metrics.js';

/** The worker's metrics, with `TETHER_METRICS_PORT`: served, and the queue's counts read by one process. */
export interface MetricsPart {
  metrics: WorkerMetrics | undefined;
  /** Serves them; resolves with the server once it listens (undefined without a port). */
  serve(): Promise<MetricsServer | undefined> | undefined;
  stop(): Promise<void>;
}

/**
 * Metrics only with TETHER_METRICS_PORT; the queue's counts by the one process holding the lease.
 */
export function workerMetrics(options: {
  config: Readonly<WorkerConfig>;
  keys: TetherKeys;
  redis: RedisClient;
  breaker: RedisBreaker;
  logger: Logger;
  /** The runs queue's counts by state (`RunService.jobCounts(...JOB_STATES)`). */
  jobCounts: () => Promise<Record<string, number>>;
}): MetricsPart {
  const { config, keys, redis, breaker, logger } = options;
  const queueLease =
    config.metricsPort === undefined
      ? undefined
      : new Lease({
          redis,
          key: keys.queueMetricsLease,
          holder: `tether-worker:${config.workerId}`,
          onError: (error) =>
            logger.debug({ err: error }, 'metrics: could not look at the queue-reader lease'),
        });
  const metrics =
    queueLease &&
    new WorkerMetrics({
      tenantLabel: config.metricsTenantLabel,
      breaker: {
        profiles: config.profiles.filter((profile) => profile.fallbacks?.length).map((p) => p.name),
        isOpen: (profile) => PROCESS_BREAKER.isOpen(profile),
      },
      queueCounts: new ElectedQueueCounts({
        lease: queueLease,
        read: () => options.jobCounts(),
        available: () => breaker.outage === undefined,
        onError: (error) => logger.warn({ err: error }, 'metrics: could not read the queue counts'),
      }),
    });
  let server: MetricsServer | undefined;
  return {
    metrics,
    serve() {
      if (!metrics || config.metricsPort === undefined) return undefined;
      return serveMetrics({ registry: metrics.registry, port: config.metricsPort }).then(
        (served) => {
          server = served;
          void queueLease?.start();
          return served;
        },
        (error: unknown) => {
          throw error instanceof MetricsPortInUseError
            ? new Error(
                `TETHER_METRICS_PORT=${config.metricsPort}: the port is in use by another process; choose a free one, or unset it for no metrics`,
                { cause: error },
              )
            : error;
        },
      );
    },
    async stop() {
      await queueLease?.stop();
      await server?.close();
    },
  };
}
