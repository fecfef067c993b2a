import { mkdirSync } from 'node:fs';
import { countTokens, PROCESS_BREAKER } from '@tether/agent';
import { createKeys, type TetherKeys } from '@tether/store/redis';
import type { ScheduleJobData } from '@tether/store/schedules';
import { TenantSlots } from '@tether/store/tenant-slots';
import { JOB_STATES, type MetricsServer } from '@tether/telemetry';
import type { Telemetry, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { crewQueue } from './attempt/crew.js';
import { TenantSlotKeeper } from './attempt/tenant-slot.js';
import type { WorkerConfig } from './config.js';
import type { WorkerMetrics } from './metrics.js';
import { createProcessor } from './processor.js';
import { openConnections, type WorkerConnections } from './start/connections.js';
import { startExpirySweep } from './start/expiry-sweep.js';
import { type MetricsPart, workerMetrics } from './start/metrics.js';
import { startReport, type WorkerReport } from './start/report.js';
import { type RunWorkers, startRunWorkers } from './start/run-workers.js';
import { startScheduleFirings } from './start/schedule-firings.js';
import { openStores, type WorkerStores } from './start/stores.js';
import { startWebhookPumps, type WebhookPumps } from './start/webhook-pumps.js';
import type { WorkerHooks } from './worker-hooks.js';

export { shardConcurrency } from './start/run-workers.js';

export interface TetherWorker {
  /** Resolves once the BullMQ worker is connected and taking jobs (and its metrics served, when asked for). */
  ready: Promise<void>;
  /**
   * The worker's metrics, served on `TETHER_METRICS_PORT`; undefined when it
   * is unset. What else runs in the worker process reports here too (the
   * webhook deliveries: `metrics.webhookDelivered(outcome)`).
   */
  metrics: WorkerMetrics | undefined;
  /**
   * Graceful stop: take no new jobs; active attempts stop at their next
   * checkpoint (or when the grace period ends) and go back to the queue for
   * other workers; suspended runs are not waited on (they hold no slot).
   */
  close(): Promise<void>;
}

export interface StartWorkerOptions {
  /** Traces (BullMQ's telemetry interface over the OpenTelemetry SDK), when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. */
  telemetry?: Telemetry | undefined;
  /**
   * Seams into an attempt's timing, for the test stack alone (a test-only entry script passes them;
   * `main.ts` passes none): each hook is awaited at the moment it names. None by default.
   */
  hooks?: WorkerHooks | undefined;
  /**
   * How long one webhook attempt may take (ms), for the test stack alone (as `hooks`): a test of an
   * endpoint that never answers waits this instead of `WEBHOOK_DEFAULTS.timeoutMs`.
   */
  webhookTimeoutMs?: number | undefined;
}

/**
 * Starts a worker: its connections, its stores, the BullMQ workers on the
 * runs queue (one per shard taken), its webhook pumps, the expiry sweep (under
 * a lease), its metrics and its entry for /readyz; `close` stops them in the reverse order.
 */
export function startWorker(
  config: Readonly<WorkerConfig>,
  logger: Logger,
  options: StartWorkerOptions = {},
): TetherWorker {
  const { telemetry, hooks, webhookTimeoutMs } = options;
  mkdirSync(config.workspaceRoot, { recursive: true });
  const tokenizerLoadMs = loadTokenizer();
  // The process's breaker of model profiles (fallbacks): how long one that failed is skipped.
  PROCESS_BREAKER.openMs = config.modelBreakerMs;
  const keys = createKeys(config.queuePrefix, config.queueShards);
  const connections = openConnections(config, logger);
  let shuttingDown = false;
  const isShuttingDown = () => shuttingDown;
  const metricsPart = workerMetrics({
    config,
    keys,
    redis: connections.redis,
    breaker: connections.breaker,
    logger,
    jobCounts: () => stores.runs.jobCounts(...JOB_STATES),
  });
  const { metrics } = metricsPart;
  const stores = openStores({ config, keys, connections, metrics, telemetry, logger });
  const wakeSession = (sessionId: string) => stores.runs.engine.promoteSessionHead(sessionId);
  const tenantSlots = tenantSlotKeeper(config, keys, connections, stores, logger, (runId) =>
    processor.activeRuns.stop(runId, 'lost'),
  );
  const processor = createProcessor({
    config,
    store: stores.store,
    logger,
    shuttingDown: isShuttingDown,
    wakeSession,
    crew: crewQueue(stores.runs, keys),
    jobs: stores.runs,
    tenantSlots,
    budgets: stores.budgets,
    memory: stores.memory,
    skills: stores.skills,
    mcpServers: stores.mcpServers,
    mcpListings: stores.mcpListings,
    webhooks: stores.dispatcher,
    observability: { metrics, telemetry },
    hooks,
  });
  const runWorkers = startRunWorkers({
    config,
    keys,
    connections,
    stores,
    processor,
    tenantSlots,
    telemetry,
    logger,
  });
  const webhooks = startWebhookPumps({
    config,
    keys,
    connections,
    stores,
    metrics,
    logger,
    shuttingDown: isShuttingDown,
    timeoutMs: webhookTimeoutMs,
  });
  const expirySweep = startExpirySweep({
    workerId: config.workerId,
    keys,
    redis: connections.redis,
    engine: stores.runs.engine,
    logger,
  });
  const scheduleFirings = startScheduleFirings({ config, keys, connections, stores, metrics, logger });
  const report = startReport({
    config,
    keys,
    redis: connections.redis,
    metrics,
    logger,
    shuttingDown: isShuttingDown,
  });
  const ready = whenReady(
    { config, keys, connections, stores, runWorkers, webhooks, scheduleFirings, metricsPart, report, logger },
    {
      tokenizerLoadMs,
      tracing: !!telemetry,
    },
  );

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      shuttingDown = true;
      report.stopWatching();
      connections.breaker.dispose();
      logger.info({ active: processor.activeRuns.size() }, 'worker shutting down');
      const grace = setTimeout(() => processor.activeRuns.stopAll('shutdown'), config.shutdownGraceMs);
      webhooks.stopSweeping();
      await expirySweep.stop();
      try {
        await Promise.all([
          ...runWorkers.workers.map((worker) => worker.close()),
          webhooks.pumps?.close(),
          scheduleFirings.close(),
        ]);
      } finally {
        clearTimeout(grace);
        runWorkers.stopTimers();
        report.stopRefreshing();
      }
      await stores.close();
      await connections.redis.hdel(keys.workers, config.workerId).catch(() => undefined);
      await metricsPart.stop();
      await connections.quit();
      logger.info('worker stopped');
    })();
    return closing;
  };
  return { ready, metrics, close };
}

/**
 * Ready, then listed in the workers hash: whoever sees this worker in /readyz knows it takes jobs.
 * Resolves once the subscriptions, the BullMQ workers, the waits' migration, the pumps and the
 * metrics server are up.
 */
function whenReady(
  parts: {
    config: Readonly<WorkerConfig>;
    keys: TetherKeys;
    connections: WorkerConnections;
    stores: WorkerStores;
    runWorkers: RunWorkers;
    webhooks: WebhookPumps;
    scheduleFirings: Worker<ScheduleJobData>;
    metricsPart: MetricsPart;
    report: WorkerReport;
    logger: Logger;
  },
  fields: { tokenizerLoadMs: number; tracing: boolean },
): Promise<void> {
  const {
    config,
    keys,
    connections,
    stores,
    runWorkers,
    webhooks,
    scheduleFirings,
    metricsPart,
    report,
    logger,
  } = parts;
  let metricsServer: MetricsServer | undefined;
  return Promise.all([
    connections.subscriber.subscribe(keys.cancelChannel),
    stores.dispatcher.listen(),
    ...runWorkers.workers.map((worker) => worker.waitUntilReady()),
    runWorkers.started,
    webhooks.pumps?.waitUntilReady(),
    scheduleFirings.waitUntilReady(),
    metricsPart.serve()?.then((server) => {
      metricsServer = server;
    }),
  ]).then(async () => {
    logger.info(
      { ...readyFields(config, keys), ...fields, metricsPort: metricsServer?.port ?? null },
      'worker ready',
    );
    await report.publish();
    report.listed();
  });
}

/** What the `worker ready` line says of the worker's configuration. */
function readyFields(config: Readonly<WorkerConfig>, keys: TetherKeys) {
  return {
    workerId: config.workerId,
    concurrency: config.concurrency,
    queuePrefix: keys.queuePrefix,
    shards: config.shards,
    queueShards: keys.shards,
    tenantMaxRunning: config.tenantMaxRunning || null,
    webhookConcurrency: config.webhookConcurrency,
  };
}

/**
 * The tokenizer's encoding is loaded now, before any job: a session run counts its turn at its
 * first checkpoint save, and the first count in a process loads the encoding (about 0.4 s,
 * synchronous), which would stall every attempt of this worker meanwhile. Returns the ms it took.
 */
function loadTokenizer(): number {
  const start = performance.now();
  countTokens('');
  return Math.round(performance.now() - start);
}

/**
 * The tenants' cap on running runs (`TETHER_TENANT_MAX_RUNNING`), when there is one: a slot's lease
 * is the lock's, so a dead worker's slots free with its locks. `onLost`: a slot whose lease lapsed
 * and went to another run stops its attempt as for a lost lock.
 */
function tenantSlotKeeper(
  config: Readonly<WorkerConfig>,
  keys: TetherKeys,
  connections: WorkerConnections,
  stores: WorkerStores,
  logger: Logger,
  onLost: (runId: string) => void,
): TenantSlotKeeper | undefined {
  if (config.tenantMaxRunning <= 0) return undefined;
  return new TenantSlotKeeper({
    slots: new TenantSlots({
      redis: connections.redis,
      keys,
      cap: config.tenantMaxRunning,
      leaseMs: config.lockDurationMs,
    }),
    runs: stores.runs,
    store: stores.store,
    logger,
    onLost,
  });
}
