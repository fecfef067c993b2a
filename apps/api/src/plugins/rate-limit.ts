import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';
import { ApiError } from '../errors.js';
import { sharedCounterStore } from './rate-limit-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts one request of `tenant` against its rate limit, as a REST request
     * is counted: undefined while within the limit, else the ms until the
     * tenant's window starts again. For work that arrives other than as a
     * request (the gateway's frames).
     */
    countTenantRequest(tenant: string): number | undefined;
  }
}

export interface RateLimitPluginOptions {
  config: Readonly<ApiConfig>;
}

/** The key of a request's count: its tenant's, or its client address's on public routes. */
const limitKey = (tenant: string, ip: string) => (tenant === '' ? `ip:${ip}` : `tenant:${tenant}`);

/** What a request over the limit is told (without a closing period). */
export function rateLimitedMessage(config: Readonly<ApiConfig>, retryAfterMs: number): string {
  return `Rate limit exceeded: at most ${config.rateLimitMax} requests per ${config.rateLimitWindowMs / 1000} s; retry in ${Math.max(1, Math.ceil(retryAfterMs / 1000))} s`;
}

/**
 * Requests per tenant per window, shared by every API instance through Redis
 * (see `SharedCounters`: counted here at once, summed in Redis every
 * `TETHER_RATE_LIMIT_SYNC_MS`, no Redis round trip per request). Its hooks run
 * after authentication (route-level hooks follow the global ones), so the key
 * is the tenant; public routes that keep the limit are counted by client
 * address. When Redis fails, each instance goes on limiting with what it knows.
 * The gateway's frames count against the same key ({@link FastifyInstance.countTenantRequest}).
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
    keyGenerator: (request) => limitKey(request.tenant, request.ip),
    errorResponseBuilder: (_request, context) =>
      new ApiError('ERR_RATE_LIMITED', `${rateLimitedMessage(config, context.ttl)} (see Retry-After).`),
  });
  app.decorate('countTenantRequest', (tenant: string) => {
    // As @fastify/rate-limit decides: over once the window's count passes the most.
    const { current, ttl } = app.counters.increment(limitKey(tenant, ''), config.rateLimitWindowMs);
    return current > config.rateLimitMax ? Math.max(0, ttl) : undefined;
  });
};

export default fp(rateLimitPlugin, {
  name: 'tether-rate-limit',
  fastify: '5.x',
  dependencies: ['tether-counters', 'tether-auth'],
});
