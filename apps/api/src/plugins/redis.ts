import { createRedisConnection } from '@tether/queue';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { ApiConfig } from '../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Commands: the run store and the rate-limit counters. */
    redis: Redis;
    /** BullMQ's queue, on a connection of its own (see below). */
    queueRedis: Redis;
    /** Subscriber mode, for the event hub: one per process, however many streams. */
    subscriber: Redis;
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
 */
const redisPlugin: FastifyPluginAsync<RedisPluginOptions> = async (app, { config }) => {
  let lastLogged = 0;
  const connect = (suffix: string, which: string) =>
    createRedisConnection({
      url: config.redisUrl,
      name: `tether-api:${config.instanceId}${suffix}`,
      mode: 'fail-fast',
      onError: (error) => {
        // ioredis reports each failed reconnect: log at most once a second.
        const now = Date.now();
        if (now - lastLogged < 1_000) return;
        lastLogged = now;
        app.log.error({ err: error, connection: which }, 'redis connection error');
      },
    });
  const redis = connect('', 'commands');
  const queueRedis = connect(':queue', 'queue');
  const subscriber = connect(':sub', 'subscriber');
  app.decorate('redis', redis);
  app.decorate('queueRedis', queueRedis);
  app.decorate('subscriber', subscriber);
  // Start ready when Redis is: wait for the connections, unless one fails first (then
  // the API starts anyway, /readyz answers 503, and ioredis keeps reconnecting).
  await Promise.all([redis, queueRedis, subscriber].map(connected));
  app.addHook('onClose', async () => {
    await Promise.all(
      [redis, queueRedis, subscriber].map((connection) =>
        connection.quit().catch(() => connection.disconnect()),
      ),
    );
  });
};

/** Resolves when the connection is ready, or at its first error. */
function connected(connection: Redis): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      connection.off('ready', done);
      connection.off('error', done);
      resolve();
    };
    connection.once('ready', done);
    connection.once('error', done);
  });
}

export default fp(redisPlugin, { name: 'tether-redis', fastify: '5.x' });
