#!/usr/bin/env node
/**
 * The API process. Configured by environment (see docs/api.md): REDIS_URL
 * (or REDIS_CLUSTER_NODES and REDIS_PASSWORD), HOST, PORT, TETHER_API_KEYS, TETHER_QUEUE_PREFIX, TETHER_WORKSPACE_ROOT,
 * model profiles, TETHER_ALLOW_REPLAY, limits.
 *
 * SIGTERM or SIGINT closes it gracefully: stop accepting connections, refuse
 * new requests with 503 (`/readyz` turns 503 first), end the SSE streams
 * cleanly (clients resume elsewhere with `Last-Event-ID`), wait for requests in
 * flight, close Redis. A second signal, or `TETHER_SHUTDOWN_TIMEOUT_MS`, exits
 * at once.
 */
import { clusterStartNote, loadOrExit, shutdownHandler } from '@tether/config';
import { flushTraces } from '@tether/telemetry';
import { pino } from 'pino';
import { createApp, createLogger } from './app.js';
import { loadApiConfig, unauthenticatedWarning } from './config.js';

const bootLogger = pino({ name: 'tether-api' });
const config = loadOrExit(
  () => loadApiConfig(),
  (err, message) => bootLogger.fatal({ err }, message),
);

const logger = createLogger(config);
const cluster = clusterStartNote(config);
if (cluster) logger.info(cluster);
if (config.apiKeys.length === 0) logger.warn(unauthenticatedWarning(config));
else if (config.tokenSecretDerived) {
  logger.info(
    'TETHER_TOKEN_SECRET is not set: read tokens are signed with a key derived from TETHER_API_KEYS',
  );
}

// Traces only when an OTLP endpoint is set: the SDK is not even loaded otherwise.
const tracing = config.otlpEndpoint
  ? (await import('@tether/telemetry/tracing')).startTracing({ serviceName: 'tether-api' })
  : undefined;
if (tracing) logger.info({ endpoint: config.otlpEndpoint }, 'traces are sent over OTLP');
const app = createApp(config, logger, { telemetry: tracing?.telemetry });

const onSignal = shutdownHandler({
  close: async () => {
    await app.close();
    await flushTraces(tracing, logger);
    logger.info('stopped');
  },
  log: logger,
  exit: (code) => process.exit(code),
  doing: 'shutting down',
  timeoutMs: config.shutdownTimeoutMs,
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, onSignal);

try {
  await app.listen({ host: config.host, port: config.port });
} catch (error) {
  logger.fatal({ err: error }, 'the API could not start');
  process.exit(1);
}
