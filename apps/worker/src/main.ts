#!/usr/bin/env node
/**
 * The worker process. Configured by environment (see docs/operations.md):
 * REDIS_URL (or REDIS_CLUSTER_NODES and REDIS_PASSWORD), TETHER_WORKER_CONCURRENCY, TETHER_WORKSPACE_ROOT,
 * TETHER_QUEUE_PREFIX, model profiles, TETHER_ALLOW_REPLAY, and more.
 * SIGTERM or SIGINT stops it gracefully; a second signal exits at once.
 */
import { hostname } from 'node:os';
import { clusterStartNote, loadOrExit, shutdownHandler } from '@tether/config';
import { flushTraces } from '@tether/telemetry';
import { pino } from 'pino';
import { loadWorkerConfig } from './config.js';
import { startWorker } from './worker.js';

const bootLogger = pino({ name: 'tether-worker' });
const config = loadOrExit(
  () => loadWorkerConfig(),
  (err, message) => bootLogger.fatal({ err }, message),
);
const logger = pino({
  name: 'tether-worker',
  level: config.logLevel,
  base: { workerId: config.workerId, pid: process.pid, hostname: hostname() },
});
const cluster = clusterStartNote(config);
if (cluster) logger.info(cluster);
// Traces only when an OTLP endpoint is set: the SDK is not even loaded otherwise.
const tracing = config.otlpEndpoint
  ? (await import('@tether/telemetry/tracing')).startTracing({ serviceName: 'tether-worker' })
  : undefined;
if (tracing) logger.info({ endpoint: config.otlpEndpoint }, 'traces are sent over OTLP');
const worker = startWorker(config, logger, { telemetry: tracing?.telemetry });
const onSignal = shutdownHandler({
  close: async () => {
    await worker.close();
    await flushTraces(tracing, logger);
  },
  log: logger,
  exit: (code) => process.exit(code),
  doing: 'stopping',
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, onSignal);
worker.ready.catch((error: unknown) => {
  logger.fatal({ err: error }, 'worker could not start');
  process.exit(1);
});
