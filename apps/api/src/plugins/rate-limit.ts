import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { sharedCounterStore } from './rate-limit-store.js';

export interface RateLimitPluginOptions {
  config: Readonly<ApiConfig>;
}

/**
 * Requests per tenant per window, shared by every API instance through Redis
 * (see `SharedCounters`: counted here at once, summed in Redis every
 * `TETHER_RATE_LIMIT_SYNC_MS`, no Redis round trip per request). Its hooks run
 * after authentication (route-level hooks follow the global ones), so the key
 * is the tenant; public routes that keep the limit are counted by client
 * address. When Redis fails, each instance goes on limiting with what it knows.
 */
const rateLimitPlugin: FastifyPluginAsync<RateLimitPluginOptions> = async (app, { config }) => {
  const store = sharedCounterStore(app.counters);
  await app.register(rateLimit, {
    global: true,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    // @fastify/rate-limit constructs its store: this constructor hands it the shared one.
    store: function SharedStore() {
      return store;
    } as unknown as FastifyRateLimitStoreCtor,
    keyGenerator: (request) => (request.tenant === '' ? `ip:${request.ip}` : `tenant:${request.tenant}`),
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        'ERR_RATE_LIMITED',
        `Rate limit exceeded: at most ${context.max} requests per ${config.rateLimitWindowMs / 1000} s; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s (see Retry-After).`,
      ),
  });
};

export default fp(rateLimitPlugin, {
  name: 'tether-rate-limit',
  fastify: '5.x',
  dependencies: ['tether-counters', 'tether-auth'],
});
