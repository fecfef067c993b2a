import { mkdirSync } from 'node:fs';
import { countTokens } from '@tether/agent';
import { createOutboundRequest } from '@tether/outbound';
import { SKILL_LIMITS, WEBHOOK_DEFAULTS } from '@tether/protocol';
import {
  backoffStrategy,
  createKeys,
  createRedisConnection,
  isRedisConnectionError,
  Lease,
  McpServerStore,
  MemoryStore,
  type PumpJobData,
  QUEUE_NAME,
  RedisBreaker,
  type RunJobData,
  RunService,
  RunStore,
  SkillStore,
  TenantSlots,
  WEBHOOK_QUEUE_NAME,
  WebhookDispatcher,
  WebhookStore,
} from '@tether/queue';
import {
  ElectedQueueCounts,
  JOB_STATES,
  MetricsPortInUseError,
  type MetricsServer,
  serveMetrics,
} from '@tether/telemetry';
import { onSpawnerFailure } from '@tether/tools';
import { type Job, type Telemetry, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { crewQueue } from './attempt/crew.js';
import { McpListings } from './attempt/mcp-listings.js';
import { TenantSlotKeeper } from './attempt/tenant-slot.js';
import type { WorkerConfig } from './config.js';
import { WorkerMetrics } from './metrics.js';
import { createProcessor } from './processor.js';
import { WorkerReadiness } from './readiness.js';
import { checkSandbox } from './sandbox-report.js';
import { SkillFolders, SkillIndexes } from './skills.js';
import { DueSignals } from './webhooks/due-signals.js';
import { createPump } from './webhooks/pump.js';
import type { WorkerHooks } from './worker-hooks.js';

/** How often a worker refreshes its entry in the workers hash (read by the API's /readyz). */
const REPORT_INTERVAL_MS = 10_000;

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
}

/** Starts a worker: a BullMQ worker on the runs queue, plus a listener for cancel broadcasts. */
export function startWorker(
  config: Readonly<WorkerConfig>,
  logger: Logger,
  options: StartWorkerOptions = {},
): TetherWorker {
  const { telemetry, hooks } = options;
  mkdirSync(config.workspaceRoot, { recursive: true });
  // The tokenizer's encoding is loaded now, before any job: a session run counts its turn at its
  // first checkpoint save, and the first count in a process loads the encoding (about 0.4 s,
  // synchronous), which would stall every attempt of this worker meanwhile.
  const tokenizerStart = performance.now();
  countTokens('');
  const tokenizerLoadMs = Math.round(performance.now() - tokenizerStart);
  const keys = createKeys(config.queuePrefix, config.queueShards);
  const connect = (which: string) =>
    createRedisConnection({
      url: config.redisUrl,
      clusterNodes: config.redisClusterNodes,
      password: config.redisPassword,
      subscriber: which === 'subscriber',
      name: `tether-worker:${config.workerId}`,
      mode: 'wait',
      // ioredis reports every failed reconnect attempt: the outage is logged once, by the breaker.
      onError: (error) => logger.debug({ connection: which, error: error.message }, 'redis connection error'),
    });
  const redis = connect('store');
  const subscriber = connect('subscriber');
  // Here only to report an outage once: commands wait for Redis, and BullMQ and ioredis reconnect on their own.
  const breaker = new RedisBreaker({
    connections: { store: redis, subscriber },
    onOpen: ({ reason }) =>
      logger.warn(
        { reason },
        'Redis is unreachable: attempts in flight wait at their next save, no job is taken until it is back',
      ),
    onClose: ({ downMs }) => logger.info({ downMs }, 'Redis is reachable again'),
  });
  // Metrics only with TETHER_METRICS_PORT; the queue's counts by the one process holding the lease.
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
      queueCounts: new ElectedQueueCounts({
        lease: queueLease,
        read: () => runs.jobCounts(...JOB_STATES),
        available: () => breaker.outage === undefined,
        onError: (error) => logger.warn({ err: error }, 'metrics: could not read the queue counts'),
      }),
    });
  const store = new RunStore({
    redis,
    keys,
    eventMaxLength: config.eventMaxLength,
    retentionSeconds: config.retentionSeconds,
    sessionTtlSeconds: config.sessionTtlSeconds,
    onEnded: metrics?.runEnd.ended,
  });
  let shuttingDown = false;
  // To find and promote the job of a session's next run (see `wakeSession`) and of a crew
  // parent whose last child has reported, and to queue, time out and cancel crew children.
  const runs = new RunService({ redis, keys, store, telemetry });
  const wakeSession = (sessionId: string) => runs.promoteSessionHead(sessionId);
  // The tenants' cap on running runs: a slot's lease is the lock's, so a dead worker's slots free with its locks.
  const tenantSlots =
    config.tenantMaxRunning > 0
      ? new TenantSlotKeeper({
          slots: new TenantSlots({
            redis,
            keys,
            cap: config.tenantMaxRunning,
            leaseMs: config.lockDurationMs,
          }),
          runs,
          store,
          logger,
          // A slot whose lease lapsed and went to another run: the attempt stops as for a lost lock.
          onLost: (runId) => processor.activeRuns.stop(runId, 'lost'),
        })
      : undefined;
  const skillStore = new SkillStore({
    redis,
    keys,
    limits: {
      maxCount: config.skillsMaxCount,
      maxBytes: config.skillsMaxBytes,
      maxFiles: SKILL_LIMITS.filesMax,
    },
  });
  const skillFolders = new SkillFolders({
    store: skillStore,
    base: config.skillsCacheDir,
    logger,
    // A superseded folder stays as long as an attempt that mounted it may still run.
    retainMs: Math.max(2 * 3600_000, config.wallClockMs),
  });
  // Webhooks: the events attempts append become deliveries, which this worker's pumps send.
  const webhookStore = new WebhookStore({ redis, keys, settings: config.webhook });
  const dueSignals = new DueSignals();
  const dispatcher = new WebhookDispatcher({
    store,
    webhooks: webhookStore,
    secrets: config.secrets,
    publicUrl: config.publicUrl,
    subscriber,
    onDue: (tenant, endpointId) => dueSignals.notify(tenant, endpointId),
  });
  const processor = createProcessor({
    config,
    store,
    logger,
    shuttingDown: () => shuttingDown,
    wakeSession,
    crew: crewQueue(runs, keys),
    tenantSlots,
    memory: new MemoryStore({
      redis,
      keys,
      maxEntries: config.memoryMaxEntries,
      maxBytes: config.memoryMaxBytes,
    }),
    skills: { store: skillStore, indexes: new SkillIndexes(skillStore), folders: skillFolders },
    mcpServers: new McpServerStore({ redis, keys, maxServers: config.mcpMaxServers }),
    mcpListings: new McpListings(config.mcpListTtlMs),
    webhooks: dispatcher,
    observability: { metrics, telemetry },
    hooks,
  });

  // BullMQ duplicates it for its own two connections per queue (same options; a Cluster client's too).
  const workerConnection = connect('bullmq');
  // One BullMQ worker per shard taken, sharing this worker's slots (see shardConcurrency).
  const workers = config.shards.map((shard, index) => {
    const worker = new Worker<RunJobData>(QUEUE_NAME, processor.process, {
      connection: workerConnection,
      prefix: keys.shardPrefix(shard),
      concurrency: shardConcurrency(config.concurrency, config.shards.length, index),
      lockDuration: config.lockDurationMs,
      stalledInterval: config.stalledIntervalMs,
      maxStalledCount: config.maxStalledCount,
      // A retry's delay is the one the attempt recorded in `run.retrying` (see settleOutcome).
      settings: { backoffStrategy },
      autorun: true,
      // BullMQ's 'process' span per job taken, continuing the trace its job carries (the enqueue's).
      ...(telemetry ? { telemetry } : {}),
    });
    worker.on('error', (error) => {
      // BullMQ reports every reconnect attempt of its connections too.
      if (isRedisConnectionError(error) || breaker.outage) {
        logger.debug({ shard, error: error.message }, 'worker error while Redis is unreachable');
      } else logger.error({ shard, err: error }, 'worker error');
    });
    // A run whose lock is lost (or not renewed in time, when Redis does not answer) stops at once,
    // commands included: by the time its lock expires and another worker may take the run over,
    // nothing of this attempt runs any more.
    worker.on('locksRenewed', ({ jobIds }) => {
      processor.activeRuns.locksRenewed(jobIds);
      tenantSlots?.renew(jobIds);
      void stopCancelled(jobIds);
    });
    worker.on('lockRenewalFailed', (jobIds) => {
      for (const runId of jobIds) processor.activeRuns.stop(runId, 'lost');
    });
    worker.on('failed', (job: Job<RunJobData> | undefined, error: Error) => {
      if (!job) return;
      // BullMQ gives up on its own after too many stalls (dead workers): end the run so it does not stay running.
      const outOfAttempts = job.attemptsMade >= (job.opts.attempts ?? 1);
      if (outOfAttempts || /stalled/i.test(error.message)) {
        const runId = job.data.runId;
        // No job will come back for this run: it is marked dirty first, for the webhook sweep.
        void dispatcher
          .around(
            [runId],
            () =>
              store.finalize(runId, {
                status: 'failed',
                error: {
                  code: 'ERR_WORKER_GAVE_UP',
                  message: `The run could not be completed: ${error.message}`,
                },
              }),
            undefined,
            (err) => logger.warn({ err, runId }, 'could not record the webhook deliveries; the sweep will'),
          )
          .then(async (ended) => {
            const sessionId = ended ? (await store.get(runId))?.sessionId : undefined;
            if (sessionId) await wakeSession(sessionId);
          })
          .catch((err: unknown) =>
            logger.error({ err, runId: job.data.runId }, 'could not mark the run failed'),
          );
      }
    });
    return worker;
  });
  const leaseCheck = setInterval(
    () => processor.activeRuns.stopStale(Date.now(), Math.floor(config.lockDurationMs * 0.75)),
    Math.max(100, Math.floor(config.lockDurationMs / 10)),
  );
  leaseCheck.unref();

  subscriber.on('message', (channel: string, runId: string) => {
    if (channel === keys.cancelChannel) processor.activeRuns.stop(runId, 'cancel');
  });
  /**
   * A cancel's broadcast can be missed (pub/sub keeps nothing for a subscriber that was reconnecting),
   * and an attempt waiting on a slow model or command would then see it only at its next save: each
   * lock renewal also reads the cancel flags of the runs it renewed, so a cancel reaches its attempt
   * within half a lock at worst. An interrupt is left to the attempt's next save, as without a miss.
   */
  async function stopCancelled(runIds: readonly string[]): Promise<void> {
    const modes = await Promise.all(runIds.map((runId) => store.cancelMode(runId).catch(() => undefined)));
    runIds.forEach((runId, index) => {
      if (modes[index] === 'cancel') processor.activeRuns.stop(runId, 'cancel');
    });
  }
  // The pumps: one BullMQ worker on the webhooks queue, each job an endpoint's (TETHER_WEBHOOK_CONCURRENCY; 0: none here).
  const pumps =
    config.webhookConcurrency > 0
      ? new Worker<PumpJobData>(
          WEBHOOK_QUEUE_NAME,
          createPump({
            store: webhookStore,
            secrets: config.secrets,
            send: createOutboundRequest(
              { allowHttp: config.webhook.allowHttp, allowPrivate: config.webhook.allowPrivate },
              { timeoutMs: WEBHOOK_DEFAULTS.timeoutMs },
            ),
            perEndpoint: config.webhookPerEndpoint,
            log: logger.child({ component: 'webhooks' }),
            shuttingDown: () => shuttingDown,
            waitForDue: (tenant, endpointId, ms) => dueSignals.wait(tenant, endpointId, ms),
            // tether_webhook_deliveries_total{outcome}: every attempt's end, counted where it is decided.
            onOutcome: metrics ? (outcome, tenant) => metrics.webhookDelivered(outcome, tenant) : undefined,
          }).process,
          {
            connection: workerConnection,
            prefix: keys.webhookQueuePrefix,
            concurrency: config.webhookConcurrency,
            lockDuration: config.lockDurationMs,
            stalledInterval: config.stalledIntervalMs,
            maxStalledCount: 1_000,
            autorun: true,
          },
        )
      : undefined;
  pumps?.on('error', (error) => {
    if (isRedisConnectionError(error) || breaker.outage)
      logger.debug({ error: error.message }, 'webhooks worker error');
    else logger.error({ err: error }, 'webhooks worker error');
  });
  // Runs an API process marked and did not dispatch (it died): one worker at a time dispatches them.
  const sweeper = setInterval(() => {
    dispatcher
      .sweep(config.webhookSweepMs)
      .catch((error: unknown) =>
        logger.debug({ err: error }, 'webhook sweep failed; the next one tries again'),
      );
  }, config.webhookSweepMs);
  sweeper.unref();
  // What the sandbox is, and what runs with less than it should: said once, and published for /readyz.
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
    if (listed && !shuttingDown) {
      publish().catch((error: unknown) =>
        logger.debug({ err: error }, 'could not publish the worker report'),
      );
    }
  });
  const reporter = setInterval(() => {
    publish().catch((error: unknown) => logger.debug({ err: error }, 'could not publish the worker report'));
  }, REPORT_INTERVAL_MS);
  reporter.unref();
  let metricsServer: MetricsServer | undefined;
  const serving =
    metrics && config.metricsPort !== undefined
      ? serveMetrics({ registry: metrics.registry, port: config.metricsPort }).then(
          (server) => {
            metricsServer = server;
            void queueLease?.start();
          },
          (error: unknown) => {
            throw error instanceof MetricsPortInUseError
              ? new Error(
                  `TETHER_METRICS_PORT=${config.metricsPort}: the port is in use by another process; choose a free one, or unset it for no metrics`,
                  { cause: error },
                )
              : error;
          },
        )
      : undefined;
  // Ready, then listed in the workers hash: whoever sees this worker in /readyz knows it takes jobs.
  const ready = Promise.all([
    subscriber.subscribe(keys.cancelChannel),
    dispatcher.listen(),
    ...workers.map((worker) => worker.waitUntilReady()),
    pumps?.waitUntilReady(),
    serving,
  ]).then(async () => {
    logger.info(
      {
        workerId: config.workerId,
        concurrency: config.concurrency,
        queuePrefix: keys.queuePrefix,
        shards: config.shards,
        queueShards: keys.shards,
        tokenizerLoadMs,
        tenantMaxRunning: config.tenantMaxRunning || null,
        webhookConcurrency: config.webhookConcurrency,
        metricsPort: metricsServer?.port ?? null,
        tracing: telemetry !== undefined,
      },
      'worker ready',
    );
    await publish();
    listed = true;
  });

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      shuttingDown = true;
      unwatchSpawner();
      breaker.dispose();
      logger.info({ active: processor.activeRuns.size() }, 'worker shutting down');
      const grace = setTimeout(() => processor.activeRuns.stopAll('shutdown'), config.shutdownGraceMs);
      clearInterval(sweeper);
      try {
        await Promise.all([...workers.map((worker) => worker.close()), pumps?.close()]);
      } finally {
        clearTimeout(grace);
        clearInterval(leaseCheck);
        clearInterval(reporter);
      }
      dispatcher.close();
      await webhookStore.close().catch(() => undefined);
      await redis.hdel(keys.workers, config.workerId).catch(() => undefined);
      await queueLease?.stop();
      await metricsServer?.close();
      await runs.close().catch(() => undefined);
      await skillFolders.close().catch(() => undefined);
      for (const connection of [subscriber, redis, workerConnection]) {
        await connection.quit().catch(() => connection.disconnect());
      }
      logger.info('worker stopped');
    })();
    return closing;
  };
  return { ready, metrics, close };
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
