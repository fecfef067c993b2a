import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { Redis, type RedisOptions } from 'ioredis';
import type { ApiConfig } from '../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Commands: the run store, the queue, the rate limiter. */
    redis: Redis;
    /** Subscriber mode, for the event hub: one per process, however many streams. */
    subscriber: Redis;
  }
}

export interface RedisPluginOptions {
  config: Readonly<ApiConfig>;
}

/**
 * The API process holds exactly two Redis connections, named
 * `tether-api:<instanceId>` and `tether-api:<instanceId>:sub` in `CLIENT LIST`:
 * their number never grows with requests or streams.
 */
const redisPlugin: FastifyPluginAsync<RedisPluginOptions> = async (app, { config }) => {
  const base: RedisOptions = {
    // A command fails after a few reconnect attempts instead of hanging the request.
    maxRetriesPerRequest: 2,
    connectTimeout: 5_000,
  };
  const redis = new Redis(config.redisUrl, { ...base, connectionName: `tether-api:${config.instanceId}` });
  const subscriber = new Redis(config.redisUrl, {
    ...base,
    connectionName: `tether-api:${config.instanceId}:sub`,
  });
  let lastLogged = 0;
  const onError = (which: string) => (error: Error) => {
    // ioredis reports each failed reconnect: log at most once a second.
    const now = Date.now();
    if (now - lastLogged < 1_000) return;
    lastLogged = now;
    app.log.error({ err: error, connection: which }, 'redis connection error');
  };
  redis.on('error', onError('commands'));
  subscriber.on('error', onError('subscriber'));
  app.decorate('redis', redis);
  app.decorate('subscriber', subscriber);
  // Start ready when Redis is: wait for both connections, unless one fails first (then
  // the API starts anyway, /readyz answers 503, and ioredis keeps reconnecting).
  await Promise.all([redis, subscriber].map(connected));
  app.addHook('onClose', async () => {
    await Promise.all(
      [redis, subscriber].map((connection) => connection.quit().catch(() => connection.disconnect())),
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
