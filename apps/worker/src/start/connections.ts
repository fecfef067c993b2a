import { createRedisConnection, RedisBreaker, type RedisClient } from '@tether/store/redis';
import type { Logger } from 'pino';
import type { WorkerConfig } from '../config.js';

/** The worker's Redis connections, and the breaker that reports an outage once. */
export interface WorkerConnections {
  /** Commands of the stores. */
  redis: RedisClient;
  /** Cancel broadcasts and the webhooks' due signals. */
  subscriber: RedisClient;
  /** BullMQ duplicates it for its own two connections per queue (same options; a Cluster client's too). */
  bullmq: RedisClient;
  breaker: RedisBreaker;
  /** Quits every connection (disconnects one that will not quit). */
  quit(): Promise<void>;
}

/** Opens the worker's connections; commands wait for Redis, and BullMQ and ioredis reconnect on their own. */
export function openConnections(config: Readonly<WorkerConfig>, logger: Logger): WorkerConnections {
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
  const bullmq = connect('bullmq');
  return {
    redis,
    subscriber,
    bullmq,
    breaker,
    async quit() {
      for (const connection of [subscriber, redis, bullmq]) {
        await connection.quit().catch(() => connection.disconnect());
      }
    },
  };
}
