import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';
import { SharedCounters } from './rate-limit-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Request counts per key and window, shared by every API instance through
     * Redis: the rate limit per tenant, and failed authentications per client address.
     */
    counters: SharedCounters;
  }
}

export interface CountersPluginOptions {
  config: Readonly<ApiConfig>;
}

/** One `SharedCounters` for every limit of the process: one pipeline per sync interval for all of them. */
const countersPlugin: FastifyPluginAsync<CountersPluginOptions> = async (app, { config }) => {
  const counters = new SharedCounters({
    redis: app.redis,
    keys: app.keys,
    syncIntervalMs: config.rateLimitSyncMs,
    onError: (error) => {
      // During an outage the breaker has said it once: the counts are kept and sent when Redis is back.
      if (app.breaker.available)
        app.log.warn({ err: error }, 'could not share rate-limit counts through Redis');
      else app.log.debug({ error: String(error) }, 'rate-limit counts kept until Redis is back');
    },
  });
  app.decorate('counters', counters);
  app.addHook('onClose', () => counters.close());
};

export default fp(countersPlugin, {
  name: 'tether-counters',
  fastify: '5.x',
  dependencies: ['tether-redis', 'tether-queue'],
});
