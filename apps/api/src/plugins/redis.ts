import { connectionReady, createRedisConnection, RedisBreaker, type RedisClient } from '@tether/store/redis';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Commands: the run store and the rate-limit counters. */
    redis: RedisClient;
    /** BullMQ's queue, on a connection of its own (see below). */
    queueRedis: RedisClient;
    /** Subscriber mode, for the event hub: one per process, however many streams. */
    subscriber: RedisClient;
    /** Whether Redis is reachable: routes that need it answer 503 at once while it is not. */
    breaker: RedisBreaker;
  }
}

export interface RedisPluginOptions {
  config: Readonly<ApiConfig>;
}

/**
 * The API process holds exactly three Redis connections, named
 * `tether-api:<instanceId>` (commands), `tether-api:<instanceId>:queue` (BullMQ)
 * and `tether-api:<instanceId>:sub` (live events) in `CLIENT LIST`: their number
 * never grows with requests or streams. BullMQ gets its own because it defines
 * its ~60 scripts as commands on the connection it is given, and ioredis copies
 * every defined command into each pipeline it makes (about 40 µs a pipeline):
 * the store's pipelines stay cheap on a connection without them.
 *
 * With `REDIS_CLUSTER_NODES` the first two are Cluster clients and the
 * subscriber is one node's connection (see `createRedisConnection`).
 *
 * All three fail fast (`fail-fast` mode of `createRedisConnection`), and one
 * breaker watches them: while Redis is unreachable the routes that need it
 * answer 503 at once (see `requiresRedis`), and the process logs one warning
 * when the outage begins and one line when it ends, not one per reconnect.
 */
const redisPlugin: FastifyPluginAsync<RedisPluginOptions> = async (app, { config }) => {
  const connect = (suffix: string, which: string) =>
    createRedisConnection({
      url: config.redisUrl,
      clusterNodes: config.redisClusterNodes,
      password: config.redisPassword,
      subscriber: which === 'subscriber',
      name: `tether-api:${config.instanceId}${suffix}`,
      mode: 'fail-fast',
      // ioredis reports every failed reconnect attempt: the outage is logged once, by the breaker.
      onError: (error) =>
        app.log.debug({ connection: which, error: error.message }, 'redis connection error'),
    });
  const redis = connect('', 'commands');
  const queueRedis = connect(':queue', 'queue');
  const subscriber = connect(':sub', 'subscriber');
  app.decorate<RedisClient>('redis', redis);
  app.decorate<RedisClient>('queueRedis', queueRedis);
  app.decorate<RedisClient>('subscriber', subscriber);
  // Start ready when Redis is: wait for the connections, unless one fails first (then
  // the API starts anyway, /readyz answers 503, and ioredis keeps reconnecting).
  await Promise.all([redis, queueRedis, subscriber].map(connectionReady));
  const breaker = new RedisBreaker({
    connections: { commands: redis, queue: queueRedis, subscriber },
    onOpen: ({ reason }) =>
      app.log.warn(
        { reason },
        'Redis is unreachable: requests that need it answer 503 ERR_UNAVAILABLE until it is back',
      ),
    onClose: ({ downMs }) => app.log.info({ downMs }, 'Redis is reachable again'),
  });
  app.decorate('breaker', breaker);
  // Before anything closes a connection: closing is not an outage.
  app.addHook('preClose', async () => {
    breaker.dispose();
  });
  app.addHook('onClose', async () => {
    await Promise.all(
      [redis, queueRedis, subscriber].map((connection) =>
        connection.quit().catch(() => connection.disconnect()),
      ),
    );
  });
};

export default fp(redisPlugin, { name: 'tether-redis', fastify: '5.x' });
