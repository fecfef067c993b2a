import { createOutboundRequest } from '@tether/outbound';
import { WEBHOOK_DEFAULTS } from '@tether/protocol';
import { isRedisConnectionError, type TetherKeys, WEBHOOK_QUEUE_NAME } from '@tether/store/redis';
import type { PumpJobData } from '@tether/store/webhooks';
import { Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.js';
import type { WorkerMetrics } from '../metrics.js';
import { createPump } from '../webhooks/pump.js';
import type { WorkerConnections } from './connections.js';
import type { WorkerStores } from './stores.js';

/** The webhook pumps of this worker, and the sweep of runs whose deliveries no one recorded. */
export interface WebhookPumps {
  /** One BullMQ worker on the webhooks queue, each job an endpoint's; none with `TETHER_WEBHOOK_CONCURRENCY=0`. */
  pumps: Worker<PumpJobData> | undefined;
  stopSweeping(): void;
}

export function startWebhookPumps(options: {
  config: Readonly<WorkerConfig>;
  keys: TetherKeys;
  connections: WorkerConnections;
  stores: WorkerStores;
  metrics: WorkerMetrics | undefined;
  logger: Logger;
  shuttingDown: () => boolean;
  /** How long one attempt may take (ms): `WEBHOOK_DEFAULTS.timeoutMs` unless the test stack gives one. */
  timeoutMs?: number | undefined;
}): WebhookPumps {
  const { config, keys, connections, stores, metrics, logger } = options;
  const pumps =
    config.webhookConcurrency > 0
      ? new Worker<PumpJobData>(
          WEBHOOK_QUEUE_NAME,
          createPump({
            store: stores.webhookStore,
            secrets: config.secrets,
            send: createOutboundRequest(
              { allowHttp: config.webhook.allowHttp, allowPrivate: config.webhook.allowPrivate },
              { timeoutMs: options.timeoutMs ?? WEBHOOK_DEFAULTS.timeoutMs },
            ),
            perEndpoint: config.webhookPerEndpoint,
            // An approver's decision wakes its run and is dispatched to the other endpoints: no API needed.
            decisions: stores.runs,
            log: logger.child({ component: 'webhooks' }),
            shuttingDown: options.shuttingDown,
            waitForDue: (tenant, endpointId, ms) => stores.dueSignals.wait(tenant, endpointId, ms),
            // tether_webhook_deliveries_total{outcome}: every attempt's end, counted where it is decided.
            onOutcome: metrics ? (outcome, tenant) => metrics.webhookDelivered(outcome, tenant) : undefined,
          }).process,
          {
            connection: connections.bullmq,
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
    if (isRedisConnectionError(error) || connections.breaker.outage)
      logger.debug({ error: error.message }, 'webhooks worker error');
    else logger.error({ err: error }, 'webhooks worker error');
  });
  // Runs an API process marked and did not dispatch (it died): one worker at a time dispatches them.
  const sweeper = setInterval(() => {
    stores.dispatcher
      .sweep(config.webhookSweepMs)
      .catch((error: unknown) =>
        logger.debug({ err: error }, 'webhook sweep failed; the next one tries again'),
      );
  }, config.webhookSweepMs);
  sweeper.unref();
  return { pumps, stopSweeping: () => clearInterval(sweeper) };
}
