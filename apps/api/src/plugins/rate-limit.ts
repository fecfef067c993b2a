import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';
import { ApiError } from '../errors.js';

export interface RateLimitPluginOptions {
  config: Readonly<ApiConfig>;
}

/**
 * Requests per tenant per window, counted in Redis so every API instance
 * shares the budget. Its hooks run after authentication (route-level hooks
 * follow the global ones), so the key is the tenant; public routes that keep
 * the limit are counted by client address. When Redis fails, requests pass:
 * the routes themselves then answer 503.
 */
const rateLimitPlugin: FastifyPluginAsync<RateLimitPluginOptions> = async (app, { config }) => {
  await app.register(rateLimit, {
    global: true,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    redis: app.redis,
    nameSpace: `${app.keys.namespace}:ratelimit:`,
    skipOnError: true,
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
  dependencies: ['tether-redis', 'tether-queue', 'tether-auth'],
});
